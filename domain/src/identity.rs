//! Company sign-in (OpenID Connect): what a person's groups at the identity provider let them do here, and
//! whether their sign-in is recent enough for a decision (approving, rejecting, stopping dispatches,
//! administering users): "sudo mode".
use super::membership::Access;
use super::roles::Role;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// `group "sales-approvers" → manager of sales`, from `rerun-gate.toml`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupMapping {
    pub group: String,
    pub roles: Vec<Role>,
    pub departments: Vec<String>,
}

/// What a person's groups give: each mapping's own pairs (its roles in its departments), side by side and never
/// crossed; `None` when no mapping names one of `groups` (the person is refused, and their sessions end).
pub fn access_from_groups(mappings: &[GroupMapping], groups: &[String]) -> Option<Access> {
    let mapped: Vec<&GroupMapping> = mappings.iter().filter(|m| groups.contains(&m.group)).collect();
    if mapped.is_empty() {
        return None;
    }
    Some(mapped.into_iter().fold(Access::default(), |access, m| access.with(Access::granted(&m.roles, &m.departments))))
}

/// How a person proved who they are, and when: what a decision's audit event records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Authentication {
    pub at: DateTime<Utc>,
    pub method: AuthMethod,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AuthMethod {
    /// A local password (break-glass admins, installations without a provider).
    Password,
    /// The identity provider, with the methods it names (`amr`: `pwd`, `mfa`, `otp`…) and the class of the
    /// authentication (`acr`), when it sends them.
    Provider {
        amr: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        acr: Option<String>,
    },
    /// A press of a button in the company chat, by the chat user the person linked to their account. Built only
    /// by the chat's decision path, for a workflow whose organisation chose that a press there is enough
    /// (`decide_in_chat = true`); the chat vouched for the person, just now.
    Chat(super::chat::ChatUser),
}

/// What a decision asks of a sign-in through the provider beyond being fresh (`[sign_in.oidc]
/// decision_acr_values`, `decision_amr`): e.g. that it used a second factor. A local password (break-glass) is
/// governed by `local_passwords` instead.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionStrength {
    /// Asked of the provider (`acr_values`) at a decision's sign-in; its `acr` must be one of them.
    pub acr_values: Vec<String>,
    /// The ID token's `amr` must name one of them (`mfa`, `hwk`…).
    pub amr: Vec<String>,
}

impl DecisionStrength {
    pub fn met_by(&self, method: &AuthMethod) -> bool {
        match method {
            AuthMethod::Password => true,
            // A chat vouches for who pressed, never for how they signed in: it meets no requirement beyond that.
            AuthMethod::Chat(_) => self.chat_may_decide(),
            AuthMethod::Provider { amr, acr } => {
                let acr_met = self.acr_values.is_empty() || acr.as_ref().is_some_and(|a| self.acr_values.contains(a));
                let amr_met = self.amr.is_empty() || amr.iter().any(|m| self.amr.contains(m));
                acr_met && amr_met
            }
        }
    }
}

impl DecisionStrength {
    /// Whether a press in chat can be as strong as a decision on the page: only when a decision asks nothing
    /// of the sign-in (no `acr`, no `amr`) that a chat identity could not show.
    pub fn chat_may_decide(&self) -> bool {
        self.acr_values.is_empty() && self.amr.is_empty()
    }
}

/// How long a sign-in counts as fresh for decisions, by default.
pub const DEFAULT_FRESH_MINUTES: u32 = 10;

/// A decision needs a sign-in within the last `window`. A sign-in dated in the future (beyond a minute of clock
/// difference with the provider) is not fresh but wrong.
pub fn fresh_enough(authentication: &Authentication, now: DateTime<Utc>, window: Duration) -> bool {
    let age = now - authentication.at;
    age <= window && age >= -Duration::minutes(1)
}

/// Why a provider's answer to a fresh sign-in (`max_age=0`, `prompt=login`) does not prove a sign-in now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotFresh {
    /// The ID token does not say when the person authenticated (`auth_time`; Microsoft Entra ID sends it only as
    /// an optional claim): a live single sign-on session may have sent them straight back.
    AuthTimeMissing,
    /// The person authenticated before the fresh sign-in was asked for.
    BeforeAsked,
}

/// When a person signed in at the provider, as far as decisions believe it. For an ordinary sign-in a missing
/// `auth_time` dates it at the epoch (never fresh: a decision asks again); for a fresh sign-in asked at
/// `asked_at`, only an `auth_time` from then on counts (a minute of clock difference allowed), else nothing does.
pub fn provider_sign_in_at(
    auth_time: Option<DateTime<Utc>>,
    asked_at: Option<DateTime<Utc>>,
) -> Result<DateTime<Utc>, NotFresh> {
    match (auth_time, asked_at) {
        (None, None) => Ok(DateTime::UNIX_EPOCH),
        (None, Some(_)) => Err(NotFresh::AuthTimeMissing),
        (Some(at), Some(asked)) if at < asked - Duration::minutes(1) => Err(NotFresh::BeforeAsked),
        (Some(at), _) => Ok(at),
    }
}

/// Where a sign-in may return to: a path on this site only (`//host` and `/\\host` would lead a browser to
/// another site).
pub fn is_local_path(path: &str) -> bool {
    path.starts_with('/') && !path.starts_with("//") && !path.contains('\\') && !path.chars().any(char::is_control)
}

/// `text` as a value in a query string (`?next=…`): percent-encoded but for the unreserved characters.
pub fn query_value(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A sign-in name as it is stored when a directory or a provider gives it: NFKC (full-width and compatibility
/// forms as their plain letters), without invisible format characters, trimmed; its case as given.
#[cfg(feature = "ssr")]
pub fn sign_in_name(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    let visible = name.nfkc().filter(|c| c.general_category() != GeneralCategory::Format);
    visible.collect::<String>().trim().to_string()
}

/// A sign-in name as people mean it, for matching and uniqueness: `sign_in_name`, case folded (a zero-width
/// space or another case makes no other name). `Boss.Sato`, `ｂｏｓｓ.ｓａｔｏ` and `boss\u{200B}.sato` are one name.
#[cfg(feature = "ssr")]
pub fn sign_in_key(name: &str) -> String {
    sign_in_name(name).chars().flat_map(char::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "ssr")]
    #[test]
    fn case_compatibility_forms_and_invisible_characters_make_no_other_sign_in_name() {
        for same in
            ["Boss.Sato", "BOSS.SATO", "ｂｏｓｓ.ｓａｔｏ", "boss\u{200B}.sato", "\u{FEFF}boss.sato", " boss.sato "]
        {
            assert_eq!(sign_in_key(same), "boss.sato", "{same:?}");
        }
        assert_ne!(sign_in_key("boss.sato2"), sign_in_key("boss.sato"));
        assert_eq!(sign_in_key("Admin\u{200B}"), sign_in_key("admin"));
        assert_eq!(sign_in_name(" Ｂｏｓｓ\u{200B}.Sato "), "Boss.Sato", "stored in its plain form, its case kept");
    }
    use crate::membership::Membership;
    use chrono::TimeZone;
    use std::collections::BTreeSet;

    fn mappings() -> Vec<GroupMapping> {
        vec![
            GroupMapping { group: "sales-staff".into(), roles: vec![Role::Staff], departments: vec!["sales".into()] },
            GroupMapping {
                group: "billing-approvers".into(),
                roles: vec![Role::Manager],
                departments: vec!["billing".into()],
            },
            GroupMapping { group: "audit".into(), roles: vec![Role::Auditor], departments: vec![] },
        ]
    }

    #[test]
    fn groups_give_the_pairs_of_each_mapping_and_unmapped_groups_give_nothing() {
        let groups = vec!["sales-staff".to_string(), "billing-approvers".to_string(), "cafeteria".to_string()];
        let access = access_from_groups(&mappings(), &groups).unwrap();
        let pair = |department: &str, role| Membership { department: department.into(), role };
        assert_eq!(access.memberships, BTreeSet::from([pair("sales", Role::Staff), pair("billing", Role::Manager)]));
        assert!(access.roles.is_empty(), "no manager of sales from two mappings");
        let auditor = access_from_groups(&mappings(), &["audit".to_string()]).unwrap();
        assert_eq!(auditor.roles, BTreeSet::from([Role::Auditor]));
        assert_eq!(access_from_groups(&mappings(), &["cafeteria".to_string()]), None);
        assert_eq!(access_from_groups(&mappings(), &[]), None);
    }

    #[test]
    fn only_a_path_on_this_site_is_a_place_to_return_to() {
        assert!(is_local_path("/audit?process_id=ORD-1"));
        for elsewhere in ["https://evil.example/", "//evil.example/", "/\\evil.example/", "/\tevil", "evil"] {
            assert!(!is_local_path(elsewhere), "{elsewhere}");
        }
    }

    #[test]
    fn a_place_to_return_to_travels_whole_in_a_query_string() {
        assert_eq!(query_value("/batches/7?view=all&page=2"), "%2Fbatches%2F7%3Fview%3Dall%26page%3D2");
        assert_eq!(query_value("/operations/受注-1 x"), "%2Foperations%2F%E5%8F%97%E6%B3%A8-1%20x");
    }

    #[test]
    fn a_fresh_sign_in_counts_only_with_an_auth_time_from_when_it_was_asked() {
        let asked = Utc.with_ymd_and_hms(2026, 12, 3, 9, 0, 0).unwrap();
        assert_eq!(provider_sign_in_at(None, Some(asked)), Err(NotFresh::AuthTimeMissing));
        let before = asked - Duration::minutes(30);
        assert_eq!(provider_sign_in_at(Some(before), Some(asked)), Err(NotFresh::BeforeAsked));
        let now = asked + Duration::seconds(20);
        assert_eq!(provider_sign_in_at(Some(now), Some(asked)), Ok(now));
        assert_eq!(provider_sign_in_at(None, None), Ok(DateTime::UNIX_EPOCH), "an ordinary sign-in, never fresh");
        assert_eq!(provider_sign_in_at(Some(before), None), Ok(before));
    }

    #[test]
    fn a_sign_in_is_fresh_for_the_window_and_not_when_older_or_from_the_future() {
        let at = Utc.with_ymd_and_hms(2026, 12, 3, 9, 0, 0).unwrap();
        let signed_in = Authentication { at, method: AuthMethod::Provider { amr: vec!["pwd".into()], acr: None } };
        let window = Duration::minutes(10);
        assert!(fresh_enough(&signed_in, at + Duration::minutes(10), window));
        assert!(!fresh_enough(&signed_in, at + Duration::minutes(10) + Duration::seconds(1), window));
        assert!(fresh_enough(&signed_in, at - Duration::seconds(30), window), "a little clock difference");
        assert!(!fresh_enough(&signed_in, at - Duration::minutes(5), window), "dated in the future");
    }

    #[test]
    fn a_decision_that_asks_for_a_second_factor_takes_a_provider_sign_in_only_with_it() {
        let mfa = DecisionStrength { acr_values: vec![], amr: vec!["mfa".into()] };
        let pwd = AuthMethod::Provider { amr: vec!["pwd".into()], acr: None };
        let both = AuthMethod::Provider { amr: vec!["pwd".into(), "mfa".into()], acr: None };
        assert!(!mfa.met_by(&pwd));
        assert!(mfa.met_by(&both));
        assert!(DecisionStrength::default().met_by(&pwd), "nothing asked, nothing needed");
        let gold = DecisionStrength { acr_values: vec!["urn:gold".into()], amr: vec![] };
        assert!(!gold.met_by(&both), "no acr");
        assert!(gold.met_by(&AuthMethod::Provider { amr: vec![], acr: Some("urn:gold".into()) }));
        assert!(mfa.met_by(&AuthMethod::Password), "break-glass passwords follow local_passwords");
    }
}
