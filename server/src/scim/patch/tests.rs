use super::*;
use serde_json::json;

const USER: &str = "urn:ietf:params:scim:schemas:core:2.0:User";

fn patched(mut resource: Value, body: Value) -> Result<Value, ScimError> {
    apply(&mut resource, &operations(&body)?, USER)?;
    Ok(resource)
}

fn message(ops: Value) -> Value {
    json!({"schemas": [PATCH_SCHEMA], "Operations": ops})
}

#[test]
fn entra_s_capitalised_replace_reaches_filtered_dotted_and_extension_paths() {
    let before = json!({"userName": "a", "emails": [{"type": "work", "value": "old@x.example"}], "name": {}});
    let after = patched(before, message(json!([
        {"op": "Replace", "path": "emails[type eq \"work\"].value", "value": "new@x.example"},
        {"op": "Replace", "path": "name.familyName", "value": "Tanaka"},
        {"op": "Replace", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber", "value": "7"},
    ])))
    .unwrap();
    assert_eq!(after["emails"], json!([{"type": "work", "value": "new@x.example"}]));
    assert_eq!(after["name"]["familyName"], "Tanaka");
    assert_eq!(after["urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"]["employeeNumber"], "7");
}

#[test]
fn a_replace_without_a_path_sets_each_key_and_a_filtered_replace_makes_a_missing_element() {
    let after = patched(
        json!({"userName": "a"}),
        message(json!([
            {"op": "replace", "value": {"active": false, "name.givenName": "Kenji"}},
            {"op": "replace", "path": "emails[type eq \"work\"].value", "value": "k@x.example"},
        ])),
    )
    .unwrap();
    assert_eq!(after["active"], false);
    assert_eq!(after["name"]["givenName"], "Kenji");
    assert_eq!(after["emails"], json!([{"type": "work", "value": "k@x.example"}]));
}

#[test]
fn members_are_added_once_and_removed_by_value_list_or_by_filter() {
    let before = json!({"displayName": "g", "members": [{"value": "1"}]});
    let added = patched(
        before,
        message(json!([{"op": "Add", "path": "members", "value": [{"value": "1"}, {"value": "2"}, {"value": "3"}]}])),
    )
    .unwrap();
    assert_eq!(added["members"].as_array().unwrap().len(), 3);
    let removed = patched(
        added,
        message(json!([
            {"op": "Remove", "path": "members", "value": [{"value": "1"}]},
            {"op": "remove", "path": "members[value eq \"2\"]"},
        ])),
    )
    .unwrap();
    assert_eq!(removed["members"], json!([{"value": "3"}]));
}

#[test]
fn a_malformed_message_path_or_filter_is_refused_with_its_scim_type() {
    let no_schema = operations(&json!({"Operations": [{"op": "add", "path": "x", "value": 1}]})).unwrap_err();
    assert_eq!(no_schema.scim_type, Some("invalidSyntax"));
    let unknown_op = operations(&message(json!([{"op": "merge", "path": "x", "value": 1}]))).unwrap_err();
    assert_eq!(unknown_op.scim_type, Some("invalidSyntax"));
    let no_target = operations(&message(json!([{"op": "remove"}]))).unwrap_err();
    assert_eq!(no_target.scim_type, Some("noTarget"));
    let bad_path =
        patched(json!({}), message(json!([{"op": "add", "path": "emails[type eq", "value": 1}]))).unwrap_err();
    assert_eq!(bad_path.scim_type, Some("invalidPath"));
    let bad_filter = patched(
        json!({"emails": [{"type": "work"}]}),
        message(json!([{"op": "remove", "path": "emails[type zz \"w\"]"}])),
    )
    .unwrap_err();
    assert_eq!(bad_filter.scim_type, Some("invalidFilter"));
}

#[test]
fn filters_match_strings_as_strings_in_any_case_and_ids_exactly() {
    let person = json!({"id": "AbC", "userName": "Tanaka@Example.jp", "externalId": "100482",
        "emails": [{"type": "work", "value": "t@x.example"}], "active": true,
        "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": {"employeeNumber": "7"}});
    let cases = [
        ("userName eq \"tanaka@example.jp\"", true),
        ("externalId eq \"100482\"", true),
        ("id eq \"abc\"", false),
        ("emails[type eq \"work\" and value co \"@x\"]", true),
        ("emails.value sw \"t@\"", true),
        ("active eq true and not (userName eq \"x\")", true),
        ("employeeNumber eq \"7\"", true),
        ("title pr", false),
        ("userName ne \"tanaka@example.jp\"", false),
    ];
    for (text, expected) in cases {
        assert_eq!(super::super::filter::parse(text).unwrap().matches(&person), expected, "{text}");
    }
    assert!(super::super::filter::parse("userName eq").is_err());
    assert!(super::super::filter::parse("userName eq \"a\" trailing").is_err());
}

#[test]
fn a_look_up_of_one_person_by_name_or_external_id_is_recognised_and_nothing_else() {
    use super::super::filter::{OnePerson, parse};
    let one = |text: &str| parse(text).unwrap().one_person().map(|(a, v)| (a, v.to_string()));
    assert_eq!(one("userName eq \"tanaka@example.jp\""), Some((OnePerson::UserName, "tanaka@example.jp".into())));
    assert_eq!(one("externalId eq \"100482\""), Some((OnePerson::ExternalId, "100482".into())));
    for other in [
        "userName co \"t\"",
        "displayName eq \"x\"",
        "userName eq \"a\" or userName eq \"b\"",
        "name.givenName eq \"x\"",
    ] {
        assert_eq!(one(other), None, "{other}");
    }
}
