//! Argon2id with OWASP's parameters (m = 19 MiB, t = 2, p = 1), PHC strings, on the blocking pool.
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng};
use argon2::{Algorithm, Argon2, Params, Version};
use std::sync::LazyLock;

fn argon2() -> Argon2<'static> {
    let params = Params::new(19_456, 2, 1, None).expect("valid argon2 parameters");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// A hash of a random password, verified when the user is unknown so that both answers take the same path.
static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| hash_now("a password that nobody has"));

fn hash_now(password: &str) -> String {
    let salt = SaltString::generate(&mut OsRng);
    argon2().hash_password(password.as_bytes(), &salt).expect("argon2 hashing").to_string()
}

pub async fn hash(password: String) -> anyhow::Result<String> {
    Ok(tokio::task::spawn_blocking(move || hash_now(&password)).await?)
}

pub struct Verified {
    pub ok: bool,
    /// The stored hash uses weaker parameters than today's: rehash now that we know the password.
    pub needs_rehash: bool,
}

/// Verifies against `stored`, or against a dummy hash when there is no user (same cost, same answer).
pub async fn verify(password: String, stored: Option<String>) -> anyhow::Result<Verified> {
    let known = stored.is_some();
    let stored = stored.unwrap_or_else(|| DUMMY_HASH.clone());
    Ok(tokio::task::spawn_blocking(move || {
        let Ok(parsed) = PasswordHash::new(&stored) else {
            return Verified { ok: false, needs_rehash: false };
        };
        let ok = known && argon2().verify_password(password.as_bytes(), &parsed).is_ok();
        let current = Params::try_from(&parsed).ok();
        let weaker = parsed.algorithm.as_str() != "argon2id"
            || current.is_none_or(|p| p.m_cost() < 19_456 || p.t_cost() < 2);
        Verified { ok, needs_rehash: ok && weaker }
    })
    .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hash_is_argon2id_with_owasp_parameters_and_verifies() {
        let stored = hash("kumo-ame-yuki".into()).await.unwrap();
        assert!(stored.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{stored}");
        let v = verify("kumo-ame-yuki".into(), Some(stored.clone())).await.unwrap();
        assert!(v.ok && !v.needs_rehash);
        assert!(!verify("wrong".into(), Some(stored)).await.unwrap().ok);
    }

    #[tokio::test]
    async fn an_unknown_user_never_verifies_even_with_the_dummy_password() {
        assert!(!verify("a password that nobody has".into(), None).await.unwrap().ok);
    }

    #[tokio::test]
    async fn a_weaker_stored_hash_is_flagged_for_rehash() {
        let weak = Argon2::new(Algorithm::Argon2id, Version::V0x13, Params::new(4096, 1, 1, None).unwrap());
        let salt = SaltString::generate(&mut OsRng);
        let stored = weak.hash_password(b"kumo-ame-yuki", &salt).unwrap().to_string();
        let v = verify("kumo-ame-yuki".into(), Some(stored)).await.unwrap();
        assert!(v.ok && v.needs_rehash);
    }
}
