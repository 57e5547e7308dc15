//! OWASP password rules (QUALITY 6): length only, no composition rules, common passwords refused.
pub const MIN_CHARS: usize = 8;
pub const MAX_CHARS: usize = 128;

use super::invalid::{Invalid, Rule};

const COMMON: &str = include_str!("common_passwords.txt");

pub fn check_new_password(password: &str, username: &str) -> Result<(), Invalid> {
    let chars = password.chars().count();
    if chars < MIN_CHARS {
        let message = format!("the password must be at least {MIN_CHARS} characters (15 or more recommended)");
        return Err(Invalid::new(Rule::TooShort, message));
    }
    if chars > MAX_CHARS {
        return Err(Invalid::new(Rule::TooLong, format!("the password must be at most {MAX_CHARS} characters")));
    }
    let lowered = password.to_lowercase();
    if lowered == username.to_lowercase() || COMMON.lines().any(|common| common == lowered) {
        return Err(Invalid::new(Rule::TooCommon, "this password is too common or too easy to guess; choose another"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seven_characters_are_too_short_and_eight_are_enough() {
        assert!(check_new_password("abcdefg", "u").is_err());
        assert!(check_new_password("kumo-ame", "u").is_ok());
    }

    #[test]
    fn a_long_passphrase_of_any_characters_is_allowed() {
        let long = "あ".repeat(64) + " spaces and symbols !";
        assert!(check_new_password(&long, "u").is_ok());
        assert!(check_new_password(&"x".repeat(129), "u").is_err());
    }

    #[test]
    fn common_passwords_and_the_username_are_refused_in_any_case() {
        assert!(check_new_password("Password123", "u").is_err());
        assert!(check_new_password("Sato.Hanako", "sato.hanako").is_err());
    }
}
