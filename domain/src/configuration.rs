//! The loaded configuration: departments, outside systems (connectors) and workflow definitions.
//! Read from `rerun-gate.toml` by `backend::config`; it holds no secrets, only the names of the environment
//! variables that do, so it can be shown to admins as it is.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The loaded configuration. Serializable, so admins can see it (it holds no secrets by construction).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub source: String,
    pub idempotency_retention_days: u32,
    /// Raw inbound webhook bodies are kept this long, then purged (the receipt and its deduplication stay).
    pub webhook_body_retention_days: u32,
    /// Sent (or given-up) chat messages and e-mails are kept this long, then purged.
    #[serde(default = "thirty")]
    pub message_retention_days: u32,
    /// The variable holding a chat-compatible incoming-webhook URL (Slack-style `{"text": …}`); none: no chat.
    #[serde(default)]
    pub chat_webhook_url_env: Option<String>,
    /// Tests and demos only: the chat URL may be a loopback address.
    #[serde(default)]
    pub chat_webhook_allow_loopback: bool,
    /// E-mail notifications over SMTP; none: no e-mail.
    #[serde(default)]
    pub mail: Option<MailConfig>,
    pub departments: Vec<DepartmentConfig>,
    pub connectors: Vec<ConnectorConfig>,
    pub workflows: Vec<WorkflowConfig>,
    /// Weeks and months of the reviews start at midnight in this zone.
    #[serde(default = "tokyo")]
    pub review_time_zone: String,
    /// Limits on the review indicators; crossing one notifies the department's owners.
    #[serde(default)]
    pub thresholds: Vec<crate::indicators::Threshold>,
    /// Bulk reruns send at most this many reruns a minute (staff may choose fewer for a batch).
    #[serde(default = "sixty")]
    pub bulk_dispatch_per_minute: u32,
    /// How many operations of a bulk preview are looked up at the outside systems at once.
    #[serde(default = "eight")]
    pub bulk_lookup_concurrency: u32,
    /// The audit chain's signed checkpoints (`[audit]`).
    #[serde(default)]
    pub audit: AuditConfig,
    /// How people sign in (`[sign_in]`): local passwords, the company's identity provider, fresh sign-ins.
    #[serde(default)]
    pub sign_in: SignInConfig,
    /// The Slack app that posts approval requests and takes decisions (`[chat.slack]`); none: no Slack.
    #[serde(default)]
    pub slack: Option<SlackConfig>,
    /// The Microsoft Teams bot that posts approval requests and takes decisions (`[chat.teams]`); none: no Teams.
    #[serde(default)]
    pub teams: Option<TeamsConfig>,
    /// A chat link stands this many days (`[chat] link_days`); then its person links again after a fresh sign-in.
    #[serde(default = "link_days")]
    pub chat_link_days: u32,
}

/// `[chat.teams]`: a Bot Framework bot (its Microsoft app ID and secret, by variable), where approval requests go
/// in Teams, and the Bot Framework's addresses (their defaults are Microsoft's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TeamsConfig {
    /// The bot's Microsoft app ID: the audience of the Bot Framework's tokens.
    pub app_id: String,
    /// The variable holding the app's client secret.
    pub app_password_env: String,
    /// The company's Entra ID tenant (single-tenant bot).
    pub tenant_id: String,
    /// Where the bot posts: Teams' service URL for the tenant's region.
    pub service_url: String,
    /// Each department's conversation (a channel's ID, `19:…@thread.tacv2`).
    pub conversations: BTreeMap<String, String>,
    /// The Bot Framework's OpenID metadata, whose keys sign the activities Teams sends.
    pub openid_metadata_url: String,
    /// Where the bot gets its token to post (client credentials).
    pub token_url: String,
    /// Tests only: these addresses may be on loopback.
    #[serde(default)]
    pub allow_loopback: bool,
}

/// `[chat.slack]`: where approval requests go in Slack, the app's credentials (by variable), and how people
/// link their Slack account (Sign in with Slack, OpenID Connect).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlackConfig {
    /// The variable holding the bot token (`xoxb-…`).
    pub bot_token_env: String,
    /// The variable holding the app's signing secret (its interactions are verified with it).
    pub signing_secret_env: String,
    /// Slack's Web API (`https://slack.com/api`; the tests' stand-in elsewhere).
    pub api_url: String,
    /// Tests only: the Web API and the sign-in may be on a loopback address.
    #[serde(default)]
    pub allow_loopback: bool,
    /// Each department's channel (its ID, `C…`).
    pub channels: BTreeMap<String, String>,
    /// Also a direct message to each owner of the department who linked their Slack account.
    pub direct_messages: bool,
    /// Sign in with Slack, for linking accounts.
    pub sign_in: ChatSignIn,
}

/// A chat's OpenID Connect sign-in, used only to learn who a person is there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatSignIn {
    pub issuer: String,
    pub client_id: String,
    pub client_secret_env: String,
}

impl SlackConfig {
    /// The sign-in as the OpenID Connect client takes it: `openid` only, no groups (it gives no roles).
    pub fn oidc(&self) -> OidcConfig {
        OidcConfig {
            issuer: self.sign_in.issuer.clone(),
            client_id: self.sign_in.client_id.clone(),
            client_secret_env: Some(self.sign_in.client_secret_env.clone()),
            scopes: vec!["openid".into()],
            groups_claim: "groups".into(),
            username_claim: "sub".into(),
            name_claim: "name".into(),
            email_claim: "email".into(),
            allow_loopback: self.allow_loopback,
            groups: Vec::new(),
            decision: Default::default(),
        }
    }
}

/// `[sign_in]`: who may use a local password, the identity provider (`[sign_in.oidc]`), and how recent a
/// sign-in must be for a decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignInConfig {
    pub local_passwords: LocalPasswords,
    /// With `local_passwords = "break_glass"`: the sign-in names that keep their password.
    pub break_glass_users: Vec<String>,
    pub fresh_minutes: u32,
    pub oidc: Option<OidcConfig>,
}

impl Default for SignInConfig {
    fn default() -> Self {
        SignInConfig {
            local_passwords: LocalPasswords::Everyone,
            break_glass_users: Vec::new(),
            fresh_minutes: super::identity::DEFAULT_FRESH_MINUTES,
            oidc: None,
        }
    }
}

impl SignInConfig {
    /// How recent a sign-in a decision needs.
    pub fn fresh_window(&self) -> chrono::Duration {
        chrono::Duration::minutes(i64::from(self.fresh_minutes))
    }

    /// Whether a press in chat can meet what a decision asks of a sign-in (`DecisionStrength::chat_may_decide`).
    pub fn chat_may_decide(&self) -> bool {
        self.oidc.as_ref().is_none_or(|oidc| oidc.decision.chat_may_decide())
    }

    /// Whether `username` may sign in with a local password.
    pub fn password_allowed_for(&self, username: &str) -> bool {
        match self.local_passwords {
            LocalPasswords::Everyone => true,
            LocalPasswords::BreakGlass => self.break_glass_users.iter().any(|u| u == username),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LocalPasswords {
    Everyone,
    /// Only the break-glass users: everyone else signs in through the identity provider.
    BreakGlass,
}

/// `[sign_in.oidc]`: the company's OpenID Connect provider, the claims that carry what is needed, and which
/// groups give which roles in which departments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OidcConfig {
    pub issuer: String,
    pub client_id: String,
    pub client_secret_env: Option<String>,
    pub scopes: Vec<String>,
    pub groups_claim: String,
    pub username_claim: String,
    pub name_claim: String,
    pub email_claim: String,
    /// Tests only: the provider may be on a loopback address.
    pub allow_loopback: bool,
    pub groups: Vec<super::identity::GroupMapping>,
    /// What a decision's sign-in must show beyond being fresh.
    #[serde(default)]
    pub decision: super::identity::DecisionStrength,
}

/// How often the audit chain's checkpoints are signed while events arrive, and the RFC 3161 time-stamping
/// authority that also stamps each one, when one is given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditConfig {
    pub checkpoint_minutes: u32,
    /// The newest signed checkpoint goes to the auditors (e-mail, chat) at most this often, when the chain moved.
    pub digest_hours: u32,
    pub timestamp_url: Option<String>,
    /// Tests only: the authority may be on a loopback address.
    pub timestamp_allow_loopback: bool,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig { checkpoint_minutes: 5, digest_hours: 24, timestamp_url: None, timestamp_allow_loopback: false }
    }
}

fn sixty() -> u32 {
    60
}

fn eight() -> u32 {
    8
}

fn tokyo() -> String {
    super::preferences::DEFAULT_TIME_ZONE.name().to_string()
}

fn link_days() -> u32 {
    super::chat::DEFAULT_LINK_DAYS
}

fn thirty() -> u32 {
    30
}

/// Where e-mail goes out: an SMTP relay, with credentials only from environment variables.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MailConfig {
    pub smtp_host: String,
    pub smtp_port: u16,
    pub security: MailSecurity,
    /// The sender, e.g. `Rerun Gate <rerun-gate@example.co.jp>`.
    pub from: String,
    pub username_env: Option<String>,
    pub password_env: Option<String>,
}

/// How the connection to the relay is protected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MailSecurity {
    /// TLS from the first byte (usually port 465).
    Tls,
    /// Plain, then upgraded with STARTTLS, which is required (usually port 587).
    Starttls,
    /// No encryption: only for a relay on this machine (loopback).
    None,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DepartmentConfig {
    pub code: String,
    pub name: String,
    /// Its name in English (pages in English); `name` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_en: Option<String>,
    /// The language of the department's chat messages (`ja` or `en`).
    #[serde(default = "japanese")]
    pub chat_language: String,
}

/// A name as a reader reads it: its English form for a reader of English when it has one, else the name.
pub fn name_for<'a>(name: &'a str, name_en: Option<&'a str>, english: bool) -> &'a str {
    name_en.filter(|_| english).unwrap_or(name)
}

impl DepartmentConfig {
    pub fn name_for(&self, english: bool) -> &str {
        name_for(&self.name, self.name_en.as_deref(), english)
    }
}

fn japanese() -> String {
    "ja".to_string()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnectorConfig {
    pub name: String,
    pub kind: String,
    /// Plain settings (URLs, field paths, timeouts), as JSON values.
    pub settings: BTreeMap<String, serde_json::Value>,
    /// Setting name → environment variable holding the credential.
    pub credential_envs: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkflowConfig {
    pub name: String,
    pub department: String,
    pub rerun_url: String,
    pub signing_secret_env: String,
    /// Demos and tests only: the rerun URL may be a loopback address.
    #[serde(default)]
    pub rerun_allow_loopback: bool,
    pub approvals_required: u32,
    /// Whether pressing 承認 / 却下 in the company chat decides (the chat vouches for the person); otherwise the
    /// buttons open the decision page, where a fresh sign-in applies.
    #[serde(default)]
    pub decide_in_chat: bool,
    /// What people call it (`title`, `title_en`); not part of its definition's version.
    #[serde(default)]
    pub title: Title,
    pub steps: Vec<StepConfig>,
    /// Hash of the definition: an approval is bound to it and voided when it changes.
    pub version: String,
    /// `[workflow.canary]`: the stages its bulk reruns run in (`None`: all at once). Not part of the version: a
    /// bulk rerun keeps its stages in its own plan, and single reruns have none.
    #[serde(default = "default_canary")]
    pub canary: Option<super::canary::CanaryConfig>,
}

fn default_canary() -> Option<super::canary::CanaryConfig> {
    Some(super::canary::CanaryConfig::default())
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepConfig {
    pub name: String,
    pub connector: Option<String>,
    pub side_effect: bool,
    pub deadline_seconds: u64,
    pub heartbeat_seconds: Option<u64>,
    /// What people call it (`title`, `title_en`); not part of its workflow's version.
    #[serde(default)]
    pub title: Title,
}

/// What people call a workflow or a step beside its code: its title in Japanese and in English. A reader whose
/// language has no title reads the code (a code is plain ASCII; a title in the other language may not be).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Title {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ja: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub en: Option<String>,
}

impl Title {
    pub fn for_reader<'a>(&'a self, code: &'a str, english: bool) -> &'a str {
        let title = if english { &self.en } else { &self.ja };
        title.as_deref().unwrap_or(code)
    }
}

impl Config {
    pub fn workflow(&self, name: &str) -> Option<&WorkflowConfig> {
        self.workflows.iter().find(|w| w.name == name)
    }
    /// The outside system (connector) a workflow's step calls, if any.
    pub fn connector_of(&self, workflow: &str, step: &str) -> Option<&str> {
        self.workflow(workflow)?.steps.iter().find(|s| s.name == step)?.connector.as_deref()
    }
    /// Whether another step already holds this idempotency key at the same outside system: a key is unique per
    /// connector, so that a look-up or a webhook about it is about exactly one step. `holders` are the
    /// (workflow, step) pairs that hold the key now.
    pub fn key_taken_at<'a>(&self, connector: &str, mut holders: impl Iterator<Item = (&'a str, &'a str)>) -> bool {
        holders.any(|(workflow, step)| self.connector_of(workflow, step) == Some(connector))
    }
    pub fn review_zone(&self) -> chrono_tz::Tz {
        super::preferences::time_zone_or_default(&self.review_time_zone)
    }
    pub fn department(&self, code: &str) -> Option<&DepartmentConfig> {
        self.departments.iter().find(|d| d.code == code)
    }
    /// What a person reads for a department, in English or not: its name (the code when the department left the
    /// file).
    pub fn department_name(&self, code: &str, english: bool) -> String {
        self.department(code).map_or_else(|| code.to_string(), |d| d.name_for(english).to_string())
    }
    /// A workflow as its reader calls it (its code without a title in the reader's language).
    pub fn workflow_name(&self, code: &str, english: bool) -> String {
        self.workflow(code).map_or(code, |w| w.title.for_reader(code, english)).to_string()
    }
    /// A workflow's step as its reader calls it.
    pub fn step_name(&self, workflow: &str, step: &str, english: bool) -> String {
        let config = self.workflow(workflow).and_then(|w| w.steps.iter().find(|s| s.name == step));
        config.map_or(step, |s| s.title.for_reader(step, english)).to_string()
    }
    /// How many owners must approve a rerun of this workflow (one for a workflow the file does not name).
    pub fn approvals_required(&self, workflow: &str) -> u32 {
        self.workflow(workflow).map_or(1, |w| w.approvals_required)
    }

    /// Approvals a batch of requests of these workflows needs (`batches::approvals_required`).
    pub fn batch_approvals_required<'w>(&self, workflows: impl IntoIterator<Item = &'w str>) -> u32 {
        super::batches::approvals_required(workflows.into_iter().map(|w| self.approvals_required(w)))
    }
}
