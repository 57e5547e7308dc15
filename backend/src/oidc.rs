//! Company sign-in with OpenID Connect through `openidconnect`: the authorization code flow with PKCE, state
//! and nonce. The provider's discovery document and keys come through the SSRF-guarded client and are kept for
//! a few minutes; the ID token is verified by the library (signature, issuer, audience, expiry, nonce) before
//! anything of it is believed.
use crate::reconciliation::ssrf;
use chrono::{DateTime, Utc};
use domain::configuration::OidcConfig;
use openidconnect::core::{CoreAuthPrompt, CoreAuthenticationFlow, CoreClient, CoreIdToken, CoreIdTokenClaims};
use openidconnect::{
    AuthenticationContextClass, AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce,
    PkceCodeChallenge, PkceCodeVerifier, ProviderMetadataWithLogout, RedirectUrl, Scope, TokenResponse,
};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// How long the provider's discovery document and keys are kept before they are fetched again.
const METADATA_FOR: Duration = Duration::from_secs(10 * 60);
/// An answer of the provider larger than this is refused.
const MAX_ANSWER: usize = 1024 * 1024;

/// What the browser's session carries between leaving for the provider and coming back.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Pending {
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
    /// Where to go once signed in (a path of this app).
    pub return_to: String,
    /// The provider was asked for a fresh sign-in (`max_age=0`, `prompt=login`), for a decision, at this time.
    #[serde(default)]
    pub fresh_asked_at: Option<DateTime<Utc>>,
}

/// Who the provider says signed in, from a verified ID token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub issuer: String,
    pub subject: String,
    pub username: String,
    pub display_name: String,
    pub email: Option<String>,
    pub groups: Vec<String>,
    pub auth_time: Option<DateTime<Utc>>,
    pub amr: Vec<String>,
    /// The class of the authentication (`acr`), when the provider names it.
    pub acr: Option<String>,
    /// The workspace the person signed in to, when the provider names one (Slack's `https://slack.com/team_id`).
    pub team: Option<String>,
    /// Microsoft Entra ID's tenant and object ID of the person (`tid`, `oid`), which Teams names them by.
    pub entra: Option<(String, String)>,
}

/// The claim of Slack's ID tokens that names the workspace.
const TEAM_CLAIM: &str = "https://slack.com/team_id";

/// Why a sign-in through the provider did not happen; each one is logged and the person sees that it failed.
#[derive(Debug, thiserror::Error)]
pub enum OidcProblem {
    #[error("the identity provider could not be reached or read: {0}")]
    Provider(String),
    #[error("the answer does not belong to the sign-in this browser started (state)")]
    WrongState,
    #[error("the identity provider refused the code: {0}")]
    Code(String),
    #[error("the ID token is not to be believed: {0}")]
    Token(String),
}

/// Where the company's identity provider sends people back, and where Slack's sign-in does (linking).
pub const SIGN_IN_CALLBACK: &str = "/sign-in/oidc/callback";
pub const SLACK_LINK_CALLBACK: &str = "/account/slack/callback";

/// The provider, its cached metadata, and the client's settings.
pub struct Provider {
    config: OidcConfig,
    secret: Option<String>,
    redirect: RedirectUrl,
    metadata: tokio::sync::Mutex<Option<(Instant, ProviderMetadataWithLogout)>>,
}

impl Provider {
    /// `public_url` is the app's origin; the provider sends people back to `/sign-in/oidc/callback`.
    pub fn new(config: OidcConfig, secret: Option<String>, public_url: &str) -> Result<Provider, String> {
        Provider::with_callback(config, secret, &format!("{public_url}{SIGN_IN_CALLBACK}"))
    }

    /// A client whose sign-ins come back to `redirect` (a full URL).
    pub fn with_callback(config: OidcConfig, secret: Option<String>, redirect: &str) -> Result<Provider, String> {
        let redirect = RedirectUrl::new(redirect.to_string()).map_err(|e| e.to_string())?;
        Ok(Provider { config, secret, redirect, metadata: tokio::sync::Mutex::new(None) })
    }

    pub fn config(&self) -> &OidcConfig {
        &self.config
    }

    async fn metadata(&self) -> Result<ProviderMetadataWithLogout, OidcProblem> {
        let mut cached = self.metadata.lock().await;
        if let Some((at, metadata)) = cached.as_ref()
            && at.elapsed() < METADATA_FOR
        {
            return Ok(metadata.clone());
        }
        let issuer = IssuerUrl::new(self.config.issuer.clone()).map_err(|e| OidcProblem::Provider(e.to_string()))?;
        let allow_loopback = self.config.allow_loopback;
        let http = move |request| fetch(request, allow_loopback);
        let metadata = ProviderMetadataWithLogout::discover_async(issuer, &http)
            .await
            .map_err(|e| OidcProblem::Provider(error_chain(&e)))?;
        *cached = Some((Instant::now(), metadata.clone()));
        Ok(metadata)
    }

    async fn client(
        &self,
    ) -> Result<
        CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        OidcProblem,
    > {
        let metadata = self.metadata().await?;
        let secret = self.secret.clone().map(ClientSecret::new);
        Ok(CoreClient::from_provider_metadata(metadata, ClientId::new(self.config.client_id.clone()), secret)
            .set_redirect_uri(self.redirect.clone()))
    }

    /// Where to send the browser, and what its session keeps meanwhile. With `fresh_at` (a decision's sign-in,
    /// asked for then), the provider must authenticate the person now: `max_age=0` and `prompt=login`, whatever
    /// its own session says.
    pub async fn begin(
        &self,
        return_to: &str,
        fresh_at: Option<DateTime<Utc>>,
    ) -> Result<(String, Pending), OidcProblem> {
        let client = self.client().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client
            .authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random)
            .set_pkce_challenge(challenge);
        for scope in &self.config.scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        if fresh_at.is_some() {
            request = request.set_max_age(Duration::ZERO).add_prompt(CoreAuthPrompt::Login);
            for acr in &self.config.decision.acr_values {
                request = request.add_auth_context_value(AuthenticationContextClass::new(acr.clone()));
            }
        }
        let (url, state, nonce) = request.url();
        let pending = Pending {
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
            return_to: return_to.to_string(),
            fresh_asked_at: fresh_at,
        };
        Ok((url.to_string(), pending))
    }

    /// The provider sent the browser back with `code` and `state`: exchanges the code and verifies the ID token.
    pub async fn finish(&self, pending: &Pending, code: &str, state: &str) -> Result<Identity, OidcProblem> {
        if !constant_time_eq(pending.state.as_bytes(), state.as_bytes()) {
            return Err(OidcProblem::WrongState);
        }
        let client = self.client().await?;
        let allow_loopback = self.config.allow_loopback;
        let http = move |request| fetch(request, allow_loopback);
        let exchange = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| OidcProblem::Provider(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.pkce_verifier.clone()));
        let tokens = exchange.request_async(&http).await.map_err(|e| OidcProblem::Code(error_chain(&e)))?;
        let id_token = tokens.id_token().ok_or_else(|| OidcProblem::Token("the answer holds no ID token".into()))?;
        self.verify(id_token, &pending.nonce).await
    }

    /// Who an ID token names, once the library verified it: the provider's signature (its published keys),
    /// issuer, audience (this client), expiry and the nonce of this browser's sign-in.
    pub async fn verify(&self, id_token: &CoreIdToken, nonce: &str) -> Result<Identity, OidcProblem> {
        let client = self.client().await?;
        let claims: &CoreIdTokenClaims = id_token
            .claims(&client.id_token_verifier(), &Nonce::new(nonce.to_string()))
            .map_err(|e| OidcProblem::Token(error_chain(&e)))?;
        // The token is verified: its other claims (groups and the configured names) are read from its payload.
        let payload = payload_of(&id_token.to_string()).map_err(OidcProblem::Token)?;
        Ok(self.identity(claims, &payload))
    }

    fn identity(&self, claims: &CoreIdTokenClaims, payload: &serde_json::Value) -> Identity {
        let text = |name: &str| payload.get(name).and_then(|v| v.as_str()).map(str::to_string);
        let subject = claims.subject().as_str().to_string();
        let groups = match payload.get(&self.config.groups_claim) {
            Some(serde_json::Value::Array(list)) => {
                list.iter().filter_map(|g| g.as_str().map(str::to_string)).collect()
            }
            Some(serde_json::Value::String(one)) => vec![one.clone()],
            _ => Vec::new(),
        };
        let username = text(&self.config.username_claim).unwrap_or_else(|| subject.clone());
        Identity {
            issuer: claims.issuer().as_str().to_string(),
            display_name: text(&self.config.name_claim).unwrap_or_else(|| username.clone()),
            email: text(&self.config.email_claim),
            username,
            subject,
            groups,
            auth_time: claims.auth_time(),
            amr: claims
                .auth_method_refs()
                .map_or_else(Vec::new, |list| list.iter().map(|m| m.as_str().to_string()).collect()),
            acr: claims.auth_context_ref().map(|acr| acr.as_str().to_string()),
            team: text(TEAM_CLAIM),
            entra: text("tid").zip(text("oid")),
        }
    }

    /// The provider's end-session URL for a sign-out, when it offers one.
    pub async fn end_session_url(&self, post_logout: &str) -> Option<String> {
        let metadata = self.metadata().await.ok()?;
        let endpoint = metadata.additional_metadata().end_session_endpoint.clone()?;
        let mut url = url::Url::parse(endpoint.url().as_str()).ok()?;
        url.query_pairs_mut()
            .append_pair("client_id", &self.config.client_id)
            .append_pair("post_logout_redirect_uri", post_logout);
        Some(url.to_string())
    }
}

/// The claims of a JWT whose signature was verified already.
fn payload_of(jwt: &str) -> Result<serde_json::Value, String> {
    use base64::Engine;
    let part = jwt.split('.').nth(1).ok_or("not a JWT")?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part).map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| e.to_string())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FetchError(String);

/// One request of the library, through the SSRF guard (no redirects, no private addresses unless allowed).
async fn fetch(
    request: openidconnect::HttpRequest,
    allow_loopback: bool,
) -> Result<openidconnect::HttpResponse, FetchError> {
    let (parts, body) = request.into_parts();
    let url = url::Url::parse(&parts.uri.to_string()).map_err(|e| FetchError(e.to_string()))?;
    ssrf::check_url(&url, allow_loopback).map_err(FetchError)?;
    let client = ssrf::shared_client(allow_loopback).map_err(FetchError)?;
    let answer = client
        .request(parts.method, url)
        .headers(parts.headers)
        .body(body)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .map_err(|e| FetchError(error_chain(&e)))?;
    let mut response = axum::http::Response::builder().status(answer.status());
    for (name, value) in answer.headers() {
        response = response.header(name, value);
    }
    let bytes = answer.bytes().await.map_err(|e| FetchError(e.to_string()))?;
    if bytes.len() > MAX_ANSWER {
        return Err(FetchError(format!("an answer of {} bytes", bytes.len())));
    }
    response.body(bytes.to_vec()).map_err(|e| FetchError(e.to_string()))
}
