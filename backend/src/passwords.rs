//! Argon2id with OWASP's parameters (m = 19 MiB, t = 2, p = 1), PHC strings, on the blocking pool, a few at a
//! time (`checks`).
use crate::turns::{Limits, Turn, Turns};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng};
use argon2::{Algorithm, Argon2, Params, Version};
use std::sync::LazyLock;

fn argon2() -> Argon2<'static> {
    let params = Params::new(19_456, 2, 1, None).expect("valid argon2 parameters");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// A hash of a random password, verified when the user is unknown or disabled so that every answer costs the
/// same work.
static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| hash_now("a password that nobody has"));

fn hash_now(password: &str) -> String {
    let salt = SaltString::generate(&mut OsRng);
    argon2().hash_password(password.as_bytes(), &salt).expect("argon2 hashing").to_string()
}

/// How many password checks run at once (each holds 19 MiB and a core for tens of milliseconds) and how many
/// may wait for a turn. Beyond the queue a caller is told to come back (429), so a flood of sign-ins costs
/// bounded memory and leaves the blocking pool to everyone else.
pub fn checks(at_once: usize, queue: usize) -> Turns {
    Turns::new(Limits { at_once, waiting: queue, max_wait: None })
}

pub async fn hash(turn: Turn, password: String) -> anyhow::Result<String> {
    Ok(tokio::task::spawn_blocking(move || {
        let _turn = turn;
        hash_now(&password)
    })
    .await?)
}

pub struct Verified {
    pub ok: bool,
    /// The stored hash used weaker parameters than today's: this is the password hashed with today's.
    pub rehashed: Option<String>,
}

/// Verifies against `stored`, or against a dummy hash when there is no such (active) user: the same work and
/// the same answer either way.
pub async fn verify(turn: Turn, password: String, stored: Option<String>) -> anyhow::Result<Verified> {
    let known = stored.is_some();
    let stored = stored.unwrap_or_else(|| DUMMY_HASH.clone());
    Ok(tokio::task::spawn_blocking(move || {
        let _turn = turn;
        let Ok(parsed) = PasswordHash::new(&stored) else {
            return Verified { ok: false, rehashed: None };
        };
        // Verified first, then asked whether the user exists: an unknown name costs one verification too.
        let ok = argon2().verify_password(password.as_bytes(), &parsed).is_ok() && known;
        let current = Params::try_from(&parsed).ok();
        let weaker =
            parsed.algorithm.as_str() != "argon2id" || current.is_none_or(|p| p.m_cost() < 19_456 || p.t_cost() < 2);
        Verified { ok, rehashed: (ok && weaker).then(|| hash_now(&password)) }
    })
    .await?)
}

/// A secret nobody holds, for accounts that never sign in with a password here (the company sign-in's and the
/// directory's people): its hash matches no password anyone could type.
pub fn unusable_secret() -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(rand::random::<[u8; 32]>())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks() -> Turns {
        super::checks(2, 4)
    }

    #[tokio::test]
    async fn a_hash_is_argon2id_with_owasp_parameters_and_verifies() {
        let c = checks();
        let stored = hash(c.turn().await.unwrap(), "kumo-ame-yuki".into()).await.unwrap();
        assert!(stored.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{stored}");
        let v = verify(c.turn().await.unwrap(), "kumo-ame-yuki".into(), Some(stored.clone())).await.unwrap();
        assert!(v.ok && v.rehashed.is_none());
        assert!(!verify(c.turn().await.unwrap(), "wrong".into(), Some(stored)).await.unwrap().ok);
    }

    #[tokio::test]
    async fn an_unknown_user_never_verifies_even_with_the_dummy_password() {
        let c = checks();
        assert!(!verify(c.turn().await.unwrap(), "a password that nobody has".into(), None).await.unwrap().ok);
    }

    #[tokio::test]
    async fn a_weaker_stored_hash_is_rehashed_with_todays_parameters() {
        let weak = Argon2::new(Algorithm::Argon2id, Version::V0x13, Params::new(4096, 1, 1, None).unwrap());
        let salt = SaltString::generate(&mut OsRng);
        let stored = weak.hash_password(b"kumo-ame-yuki", &salt).unwrap().to_string();
        let v = verify(checks().turn().await.unwrap(), "kumo-ame-yuki".into(), Some(stored)).await.unwrap();
        assert!(v.ok && v.rehashed.as_deref().is_some_and(|h| h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$")));
    }
}
