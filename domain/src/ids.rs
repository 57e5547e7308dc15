//! Identifiers that arrive from people and programs, parsed once at the edge (parse, don't validate).
use super::invalid::{Invalid, Rule};
use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! text_id {
    ($(#[$doc:meta])* $name:ident, $what:literal, $max:literal, $allowed:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub fn parse(raw: &str) -> Result<Self, $crate::invalid::Invalid> {
                let value = raw.trim();
                if value.is_empty() {
                    return Err($crate::invalid::Invalid::new(
                        $crate::invalid::Rule::Required,
                        format!("{} must not be empty", $what),
                    ));
                }
                if value.chars().count() > $max {
                    return Err($crate::invalid::Invalid::new(
                        $crate::invalid::Rule::TooLong,
                        format!("{} must be at most {} characters", $what, $max),
                    ));
                }
                let allowed: fn(char) -> bool = $allowed;
                if let Some(bad) = value.chars().find(|c| !allowed(*c)) {
                    return Err($crate::invalid::Invalid::new(
                        $crate::invalid::Rule::BadCharacter,
                        format!("{} must not contain '{}'", $what, bad),
                    ));
                }
                Ok(Self(value.to_string()))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = $crate::invalid::Invalid;
            fn try_from(value: String) -> Result<Self, Self::Error> {
                Self::parse(&value)
            }
        }

        impl From<$name> for String {
            fn from(value: $name) -> String {
                value.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}
pub(crate) use text_id;

text_id!(
    /// A sign-in name: lower-case ASCII letters, digits, `.`, `_` and `-`.
    Username, "sign-in name", 64,
    |c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
);

text_id!(
    /// A department code such as `sales` or `billing`.
    DepartmentCode, "department code", 32,
    |c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-')
);

/// An e-mail address for notifications (`local@domain.tld`); the SMTP relay has the last word.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EmailAddress(String);

impl EmailAddress {
    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        let value = raw.trim();
        let plain = |c: char| c.is_ascii_graphic() && !"<>()[]\\,;:\"".contains(c);
        let well_formed = match value.split_once('@') {
            Some((local, domain)) => {
                !local.is_empty()
                    && local.len() <= 64
                    && !domain.contains('@')
                    && domain.contains('.')
                    && !domain.starts_with('.')
                    && !domain.ends_with('.')
            }
            None => false,
        };
        if value.len() > 254 || !value.chars().all(plain) || !well_formed {
            return Err(Invalid::new(
                Rule::NotAnEmail,
                format!("'{value}' is not an e-mail address (name@example.co.jp)"),
            ));
        }
        Ok(Self(value.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for EmailAddress {
    type Error = Invalid;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<EmailAddress> for String {
    fn from(value: EmailAddress) -> String {
        value.0
    }
}

/// A file or folder name made from an ID: letters, digits, `-` and `_` are kept and anything else becomes `_`,
/// so that no path separator, `..` or control character reaches an archive's entries or a download's name.
pub fn file_safe(id: &str) -> String {
    let safe: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') { c } else { '_' }).collect();
    if safe.is_empty() { "_".to_string() } else { safe }
}

/// A client's `X-Request-Id` is kept only when it is short and plain: it is written into immutable audit rows.
pub fn is_plain_request_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_email_address_needs_one_at_sign_a_domain_with_a_dot_and_no_spaces() {
        assert_eq!(EmailAddress::parse(" sato@example.co.jp ").unwrap().as_str(), "sato@example.co.jp");
        for bad in [
            "sato",
            "sato@",
            "@example.jp",
            "sato@example",
            "sa to@example.jp",
            "a@b@example.jp",
            "x@example.jp>",
            "x@.jp",
        ] {
            assert!(EmailAddress::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_username_is_trimmed_and_kept() {
        assert_eq!(Username::parse("  sato ").unwrap().as_str(), "sato");
    }

    #[test]
    fn a_username_with_capitals_or_spaces_is_refused_with_the_offending_character() {
        assert_eq!(Username::parse("Sato").unwrap_err().message, "sign-in name must not contain 'S'");
        assert!(Username::parse("a b").is_err());
        assert_eq!(Username::parse("").unwrap_err().message, "sign-in name must not be empty");
    }

    #[test]
    fn a_department_code_longer_than_32_characters_is_refused() {
        assert!(DepartmentCode::parse(&"a".repeat(32)).is_ok());
        assert!(DepartmentCode::parse(&"a".repeat(33)).is_err());
    }

    #[test]
    fn a_request_id_is_kept_only_when_short_and_plain() {
        assert!(is_plain_request_id("0b7c3a9e-1f2d.trace_01"));
        assert!(!is_plain_request_id(""));
        assert!(!is_plain_request_id(&"a".repeat(65)));
        for odd in ["with space", "semi;colon", "<script>", "line\nbreak", "日本"] {
            assert!(!is_plain_request_id(odd), "{odd}");
        }
    }

    #[test]
    fn a_file_name_from_an_id_has_no_separator_no_dots_and_no_control_character() {
        assert_eq!(file_safe("ORD-1002"), "ORD-1002");
        assert_eq!(file_safe("../../x"), "______x");
        assert_eq!(file_safe("a\\b:c\u{7}d"), "a_b_c_d");
        assert_eq!(file_safe(""), "_");
    }
}
