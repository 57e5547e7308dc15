//! The translation files: English has every key Japanese has (and no other), with the same `{{ variables }}`.
//! leptos_i18n only warns at build time about a key missing from English and shows the Japanese instead.
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// `namespace.key.subkey` → text, for one language.
fn texts(language: &str) -> BTreeMap<String, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("locales").join(language);
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("locale directory") {
        let path = entry.expect("entry").path();
        let namespace = path.file_stem().and_then(|s| s.to_str()).expect("file name").to_string();
        let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("valid JSON");
        flatten(&namespace, &value, &mut out);
    }
    out
}

fn flatten(prefix: &str, value: &Value, out: &mut BTreeMap<String, String>) {
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| flatten(&format!("{prefix}.{k}"), v, out)),
        Value::String(text) => drop(out.insert(prefix.to_string(), text.clone())),
        other => panic!("{prefix}: a translation is text, not {other}"),
    }
}

fn variables(text: &str) -> Vec<&str> {
    let mut found: Vec<&str> =
        text.split("{{").skip(1).filter_map(|rest| rest.split("}}").next()).map(str::trim).collect();
    found.sort_unstable();
    found
}

#[test]
fn english_has_every_japanese_key_and_no_other() {
    let (ja, en) = (texts("ja"), texts("en"));
    let missing: Vec<_> = ja.keys().filter(|k| !en.contains_key(*k)).collect();
    let extra: Vec<_> = en.keys().filter(|k| !ja.contains_key(*k)).collect();
    assert!(missing.is_empty(), "keys missing from English: {missing:?}");
    assert!(extra.is_empty(), "keys only in English: {extra:?}");
    assert!(ja.len() > 100, "the pages' words are in the files ({} keys)", ja.len());
}

#[test]
fn both_languages_use_the_same_variables_and_no_text_is_empty() {
    let (ja, en) = (texts("ja"), texts("en"));
    for (key, text) in &ja {
        let english = &en[key];
        assert_eq!(variables(text), variables(english), "{key}");
        assert!(!text.trim().is_empty() && !english.trim().is_empty(), "{key} is empty");
    }
}

#[test]
fn english_texts_are_english() {
    // A Japanese text pasted into the English file is the usual slip; names of languages are the exception.
    let japanese = |c: char| matches!(c, '\u{3040}'..='\u{30ff}' | '\u{4e00}'..='\u{9fff}');
    let slips: Vec<_> = texts("en")
        .into_iter()
        .filter(|(key, text)| key != "common.language.ja" && text.chars().any(japanese))
        .map(|(key, _)| key)
        .collect();
    assert!(slips.is_empty(), "Japanese in the English file: {slips:?}");
}

/// The Japanese word for each role is the one of `admin.role`: 管理者 is the admin, who runs the system; a manager,
/// who approves, is 部門長. Texts that name 管理者 are those about the admin's work, listed here.
#[test]
fn japanese_says_kanrisha_only_where_the_admin_is_meant() {
    let ja = texts("ja");
    assert!(ja["admin.role.admin"].starts_with("管理者") && ja["admin.role.manager"].starts_with("部門長"));
    let admin_work = [
        "admin.role.admin",
        "common.conflict.own_access",
        "common.sign_in.access_ended",
        "common.sign_in.auth_time_missing",
        "common.sign_in.no_role",
        "common.sign_in.not_again",
    ];
    let naming: Vec<&str> = ja
        .iter()
        .filter(|(_, text)| text.replace("接続管理者", "").contains("管理者"))
        .map(|(key, _)| key.as_str())
        .collect();
    assert_eq!(naming, admin_work, "管理者 where a manager (部門長) may be meant");
}
