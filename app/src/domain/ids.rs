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
            pub fn parse(raw: &str) -> Result<Self, $crate::domain::invalid::Invalid> {
                let value = raw.trim();
                if value.is_empty() {
                    return Err($crate::domain::invalid::Invalid::new($crate::domain::invalid::Rule::Required, format!("{} must not be empty", $what)));
                }
                if value.chars().count() > $max {
                    return Err($crate::domain::invalid::Invalid::new($crate::domain::invalid::Rule::TooLong, format!("{} must be at most {} characters", $what, $max)));
                }
                let allowed: fn(char) -> bool = $allowed;
                if let Some(bad) = value.chars().find(|c| !allowed(*c)) {
                    return Err($crate::domain::invalid::Invalid::new($crate::domain::invalid::Rule::BadCharacter, format!("{} must not contain '{}'", $what, bad)));
                }
                Ok(Self(value.to_string()))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = $crate::domain::invalid::Invalid;
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
                !local.is_empty() && local.len() <= 64 && !domain.contains('@') && domain.contains('.')
                    && !domain.starts_with('.') && !domain.ends_with('.')
            }
            None => false,
        };
        if value.len() > 254 || !value.chars().all(plain) || !well_formed {
            return Err(Invalid::new(Rule::NotAnEmail, format!("'{value}' is not an e-mail address (name@example.co.jp)")));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_email_address_needs_one_at_sign_a_domain_with_a_dot_and_no_spaces() {
        assert_eq!(EmailAddress::parse(" sato@example.co.jp ").unwrap().as_str(), "sato@example.co.jp");
        for bad in ["sato", "sato@", "@example.jp", "sato@example", "sa to@example.jp", "a@b@example.jp", "x@example.jp>", "x@.jp"] {
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
}
