//! API clients: tokens are 256 random bits, shown once, stored as SHA-256, scoped to departments (QUALITY 8).
use super::audit::record;
use crate::{AppState, db};
use base64::Engine;
use contract::AppError;
use contract::admin::ApiClientSummary;
use domain::audit::{Actor, AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::directory::ClientPurpose;
use domain::invalid::{Field, Invalid, Rule};
use rand::RngCore;
use serde_json::json;
use sha2::{Digest, Sha256};

/// The caller of the ingestion API, as its token says.
#[derive(Clone, Debug)]
pub struct ApiClient {
    pub id: i64,
    pub name: String,
    pub departments: Vec<String>,
    /// The ingestion API, or the company directory's provisioning: a token opens only its own door.
    pub purpose: ClientPurpose,
}

impl ApiClient {
    pub fn actor(&self) -> Actor {
        Actor::api_client(self.id, &self.name)
    }
    pub fn may_see(&self, department: &str) -> bool {
        self.departments.iter().any(|d| d == department)
    }
}

fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Creates a client of the ingestion API and returns its token, the only time it is ever seen.
pub async fn create(
    state: &AppState,
    actor: Actor,
    name: &str,
    departments: &[String],
) -> Result<(i64, String), AppError> {
    if departments.is_empty() {
        return Err(AppError::invalid(
            Field::Department,
            Invalid::new(Rule::NoneChosen, "a token needs at least one department"),
        ));
    }
    create_of(state, actor, (name, ClientPurpose::Ingestion), departments).await
}

/// Creates the company directory's token for SCIM provisioning (no department: it provisions people) and
/// returns it, the only time it is ever seen.
pub async fn create_directory(state: &AppState, actor: Actor, name: &str) -> Result<(i64, String), AppError> {
    if state.config.sign_in.oidc.is_none() {
        return Err(no_company_sign_in());
    }
    create_of(state, actor, (name, ClientPurpose::Directory), &[]).await
}

async fn create_of(
    state: &AppState,
    actor: Actor,
    (name, purpose): (&str, ClientPurpose),
    departments: &[String],
) -> Result<(i64, String), AppError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(AppError::invalid(
            Field::Name,
            Invalid::new(Rule::OutOfRange, "the client name must be 1 to 100 characters"),
        ));
    }
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let token = format!("rg_{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes));
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    if db::api_clients::by_name(&mut tx, name).await?.is_some() {
        return Err(AppError::conflict(Conflict::ClientNameTaken, format!("an API client named '{name}' exists")));
    }
    let found = db::departments::by_codes(&mut tx, departments).await?;
    if let Some(missing) = departments.iter().find(|c| !found.iter().any(|d| &d.code == *c)) {
        return Err(AppError::invalid(
            Field::Department,
            Invalid::new(Rule::Unknown, format!("there is no department '{missing}'")),
        ));
    }
    let id = db::api_clients::insert(&mut tx, name, purpose, &token_hash(&token), now).await?;
    for department in &found {
        db::api_clients::add_department(&mut tx, id, department.id).await?;
    }
    let codes: Vec<&str> = found.iter().map(|d| d.code.as_str()).collect();
    let entry = AuditEntry::new(actor, AuditAction::ApiClientCreated, ObjectType::ApiClient, id)
        .after(json!({"name": name, "departments": codes, "purpose": purpose}));
    record(&mut tx, entry, None, now).await?;
    tx.commit().await?;
    Ok((id, token))
}

/// Why the directory provisions nothing here: said at every provisioning call, at the token's creation and at
/// start (a 409 naming what to configure, never a 404 the directory would read as a missing person).
pub fn no_company_sign_in() -> AppError {
    AppError::conflict(
        Conflict::NoCompanySignIn,
        "the company directory provisions people who sign in with the company account: configure [sign_in.oidc] \
         in rerun-gate.toml first",
    )
}

/// Said at start: a directory token that can provision nothing, because no company sign-in is configured (each of
/// its calls is answered 409 `no-company-sign-in`). Returns how many there are.
pub async fn report_directory_without_sign_in(state: &AppState) -> Result<usize, AppError> {
    if state.config.sign_in.oidc.is_some() {
        return Ok(0);
    }
    let rows = db::api_clients::all(&mut state.db.connection().await?).await?;
    let idle: Vec<String> = rows
        .into_iter()
        .filter(|r| r.purpose == ClientPurpose::Directory && r.revoked_at.is_none())
        .map(|r| r.name)
        .collect();
    if !idle.is_empty() {
        tracing::warn!(
            tokens = %idle.join(", "),
            "the company directory's tokens provision nothing without a company sign-in: configure [sign_in.oidc] \
             in rerun-gate.toml, or revoke them (server scim token revoke)"
        );
    }
    Ok(idle.len())
}

/// The client a bearer token belongs to; `None` for unknown or revoked tokens. An integration's token is
/// remembered for a few seconds (every API call checks one; revoking it here forgets it at once, another
/// instance or the command line within `TokenCache::TTL`); a directory's is looked up by its hash at each call
/// (its calls are few, and its revocation ends access at once, wherever it was made).
pub async fn authenticate(state: &AppState, token: &str) -> Result<Option<ApiClient>, AppError> {
    let (hash, tokens) = (token_hash(token), tokens(state));
    if let Some(client) = tokens.get(&hash) {
        return Ok(Some(client));
    }
    let mut tx = state.db.connection().await?;
    let Some((row, departments)) = db::api_clients::by_token(&mut tx, &hash).await? else { return Ok(None) };
    if row.revoked_at.is_some() {
        return Ok(None);
    }
    let client = ApiClient { id: row.id, name: row.name, departments, purpose: row.purpose };
    if client.purpose != ClientPurpose::Directory {
        tokens.put(hash, client.clone());
    }
    Ok(Some(client))
}

/// This state's recently checked tokens.
fn tokens(state: &AppState) -> std::sync::Arc<TokenCache> {
    state.kept.get_or_init(TokenCache::default)
}

/// One more call of this client now, by this state's rates (`RateLimits`), or 429 with the time to wait.
pub fn take_turn(state: &AppState, client: &ApiClient) -> Result<(), AppError> {
    let limits = state.kept.get_or_init(|| RateLimits::new(state.server.api_rate_per_second, state.server.api_burst));
    limits.take(client)
}

/// Recently checked tokens, by hash. Another server instance learns of a revocation within `TTL`.
#[derive(Debug, Default)]
pub struct TokenCache(std::sync::Mutex<std::collections::HashMap<String, (ApiClient, std::time::Instant)>>);

impl TokenCache {
    pub const TTL: std::time::Duration = std::time::Duration::from_secs(5);
    const MAX_ENTRIES: usize = 10_000;

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, (ApiClient, std::time::Instant)>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn get(&self, hash: &str) -> Option<ApiClient> {
        let cache = self.lock();
        cache.get(hash).filter(|(_, at)| at.elapsed() < Self::TTL).map(|(client, _)| client.clone())
    }

    fn put(&self, hash: String, client: ApiClient) {
        let mut cache = self.lock();
        if cache.len() >= Self::MAX_ENTRIES {
            cache.clear();
        }
        cache.insert(hash, (client, std::time::Instant::now()));
    }

    fn forget_client(&self, id: i64) {
        self.lock().retain(|_, (client, _)| client.id != id);
    }
}

pub async fn list(state: &AppState, caller: &super::Caller) -> Result<Vec<ApiClientSummary>, AppError> {
    caller.require(domain::roles::Role::Admin)?;
    let mut tx = state.db.begin_read().await?;
    let mut list = Vec::new();
    for row in db::api_clients::all(&mut tx).await? {
        let departments = db::api_clients::department_codes(&mut tx, row.id).await?;
        list.push(ApiClientSummary {
            id: row.id,
            name: row.name,
            departments,
            created_at: row.created_at,
            revoked: row.revoked_at.is_some(),
            directory: row.purpose == ClientPurpose::Directory,
        });
    }
    Ok(list)
}

pub async fn revoke(state: &AppState, actor: Actor, id: i64, request_id: Option<&str>) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let row = db::api_clients::by_id(&mut tx, id).await?.ok_or(AppError::NotFound)?;
    if row.revoked_at.is_some() {
        return Ok(());
    }
    db::api_clients::revoke(&mut tx, id, now).await?;
    let entry = AuditEntry::new(actor, AuditAction::ApiClientRevoked, ObjectType::ApiClient, id)
        .after(json!({"name": row.name}));
    record(&mut tx, entry, request_id, now).await?;
    tx.commit().await?;
    tokens(state).forget_client(id);
    Ok(())
}

/// Revokes the client (or directory token) of that name, from the command line.
pub async fn revoke_named(state: &AppState, actor: Actor, name: &str) -> Result<(), AppError> {
    let mut tx = state.db.begin_read().await?;
    let row = db::api_clients::by_name(&mut tx, name.trim()).await?.ok_or(AppError::NotFound)?;
    drop(tx);
    revoke(state, actor, row.id, None).await
}

/// Each API client's rate (QUALITY 15): a burst, then a steady rate per second, counted by this instance per
/// client ID after its token is checked. The defaults are far above what an integration catching up after an
/// outage sends; a client beyond them is answered 429 with `Retry-After`.
pub struct RateLimits(governor::DefaultKeyedRateLimiter<i64>);

impl RateLimits {
    pub fn new(per_second: u32, burst: u32) -> Self {
        // Beyond a million a second the replenish interval would round to nothing.
        let rate = std::num::NonZeroU32::new(per_second.clamp(1, 1_000_000)).expect("at least one");
        let burst = std::num::NonZeroU32::new(burst.max(1)).expect("at least one");
        RateLimits(governor::RateLimiter::keyed(governor::Quota::per_second(rate).allow_burst(burst)))
    }

    /// One more call of this client now, or how many seconds until the next is allowed.
    pub fn take(&self, client: &ApiClient) -> Result<(), AppError> {
        use governor::clock::Clock;
        self.0.check_key(&client.id).map_err(|not_until| {
            let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
            tracing::warn!(client = %client.name, "API rate limit reached");
            AppError::TooManyRequests { retry_after_secs: wait.as_secs().max(1) }
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_token_hash_is_hex_sha256_and_never_the_token() {
        let hash = super::token_hash("rg_example");
        assert_eq!(hash.len(), 64);
        assert!(!hash.contains("rg_example"));
    }
}
