//! `rerun-gate.toml`: departments, outside systems (connectors) and workflows. Read once at start-up and
//! validated; every problem is reported as `file:line:column: what is wrong`. Credentials never appear here,
//! only the names of the environment variables that hold them (keys ending in `_env`).
use crate::reconciliation::kinds::ConnectorKinds;
use domain::canary::{CanaryConfig, OnFailure};
pub use domain::configuration::{
    AuditConfig, Config, ConnectorConfig, DepartmentConfig, MailConfig, MailSecurity, StepConfig, Title, WorkflowConfig,
};
use domain::ids::DepartmentCode;
use domain::indicators::{Indicator, PeriodKind, Threshold};
use domain::preferences;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use toml::Spanned;

const DEFAULT_DEADLINE_SECONDS: u64 = 600;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    settings: RawSettings,
    mail: Option<Spanned<RawMail>>,
    #[serde(default, rename = "department")]
    departments: Vec<RawDepartment>,
    #[serde(default, rename = "connector")]
    connectors: Vec<RawConnector>,
    #[serde(default, rename = "workflow")]
    workflows: Vec<RawWorkflow>,
    #[serde(default, rename = "threshold")]
    thresholds: Vec<RawThreshold>,
    audit: Option<RawAudit>,
    sign_in: Option<sign_in::RawSignIn>,
    chat: Option<chat::RawChat>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAudit {
    checkpoint_minutes: Option<Spanned<u32>>,
    digest_hours: Option<Spanned<u32>>,
    timestamp_url: Option<Spanned<String>>,
    #[serde(default)]
    timestamp_allow_loopback: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawThreshold {
    indicator: Spanned<String>,
    above: Spanned<f64>,
    period: Option<Spanned<String>>,
    department: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    idempotency_retention_days: Option<Spanned<u32>>,
    webhook_body_retention_days: Option<Spanned<u32>>,
    message_retention_days: Option<Spanned<u32>>,
    chat_webhook_url_env: Option<Spanned<String>>,
    #[serde(default)]
    chat_webhook_allow_loopback: bool,
    review_time_zone: Option<Spanned<String>>,
    bulk_dispatch_per_minute: Option<Spanned<u32>>,
    bulk_lookup_concurrency: Option<Spanned<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMail {
    smtp_host: Spanned<String>,
    smtp_port: Option<u16>,
    security: MailSecurity,
    from: Spanned<String>,
    username_env: Option<Spanned<String>>,
    password_env: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDepartment {
    code: Spanned<String>,
    name: Spanned<String>,
    /// Its name in English, for pages in English; `name` when not given.
    name_en: Option<Spanned<String>>,
    /// The language of the department's chat messages; Japanese when not given.
    chat_language: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
struct RawConnector {
    name: Spanned<String>,
    kind: Spanned<String>,
    /// Kind-specific settings; keys ending in `_env` name environment variables with credentials.
    /// (Flattened values carry no position: problems in them are reported at the connector's name.)
    #[serde(flatten)]
    settings: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkflow {
    name: Spanned<String>,
    department: Spanned<String>,
    rerun_url: Spanned<String>,
    signing_secret_env: Spanned<String>,
    #[serde(default)]
    approvals_required: Option<Spanned<u32>>,
    /// Demos and tests only: let the rerun go to a loopback address (everything else private stays refused).
    #[serde(default)]
    rerun_allow_loopback: bool,
    #[serde(default)]
    decide_in_chat: bool,
    title: Option<Spanned<String>>,
    title_en: Option<Spanned<String>>,
    #[serde(default, rename = "step")]
    steps: Vec<RawStep>,
    canary: Option<Spanned<RawCanary>>,
}

/// `[workflow.canary]`: each value left out keeps its default (`domain::canary::CanaryConfig::default`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCanary {
    #[serde(default = "yes")]
    enabled: bool,
    size: Option<u32>,
    percent: Option<u32>,
    stages: Option<Vec<u32>>,
    settle_seconds: Option<u32>,
    on_failure: Option<String>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    name: Spanned<String>,
    connector: Option<Spanned<String>>,
    side_effect: bool,
    deadline_seconds: Option<Spanned<u64>>,
    heartbeat_seconds: Option<Spanned<u64>>,
    title: Option<Spanned<String>>,
    title_en: Option<Spanned<String>>,
}

/// A problem in the file, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub problem: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.column, self.problem)
    }
}

impl std::error::Error for ConfigError {}

/// Loads and validates the file; `kinds` are the connector kinds this process knows.
pub fn load(path: &Path, kinds: &ConnectorKinds) -> Result<Config, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: file.clone(),
        line: 0,
        column: 0,
        problem: format!("cannot read the configuration file: {e}"),
    })?;
    parse(&text, &file, kinds)
}

/// Parses and validates `text`; `file` names it in messages.
pub fn parse(text: &str, file: &str, kinds: &ConnectorKinds) -> Result<Config, ConfigError> {
    let at = |span: std::ops::Range<usize>, problem: String| {
        let before = &text[..span.start.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        ConfigError { file: file.to_string(), line, column, problem }
    };
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().to_string();
        at(e.span().unwrap_or(0..0), message)
    })?;
    Validator { at: &at, kinds }.config(raw, file)
}

struct Validator<'a> {
    at: &'a dyn Fn(std::ops::Range<usize>, String) -> ConfigError,
    kinds: &'a ConnectorKinds,
}

impl Validator<'_> {
    fn fail<T>(&self, span: std::ops::Range<usize>, problem: impl Into<String>) -> Result<T, ConfigError> {
        Err((self.at)(span, problem.into()))
    }

    /// A number the file may give, within its range (else an error naming the range), or its default.
    fn number<R: RangeBounds<u32>>(
        &self,
        value: Option<Spanned<u32>>,
        range: R,
        default: u32,
        name: &str,
    ) -> Result<u32, ConfigError> {
        match value {
            Some(n) if !range.contains(n.get_ref()) => {
                let (low, high) = (range.start_bound(), range.end_bound());
                let rule = match (low, high) {
                    (Bound::Included(low), Bound::Included(high)) => format!("{name} must be {low} to {high}"),
                    (Bound::Included(low), _) => format!("{name} must be at least {low}"),
                    _ => format!("{name} is out of range"),
                };
                self.fail(n.span(), rule)
            }
            Some(n) => Ok(n.into_inner()),
            None => Ok(default),
        }
    }

    fn mail(&self, raw: Spanned<RawMail>) -> Result<MailConfig, ConfigError> {
        let span = raw.span();
        let raw = raw.into_inner();
        let host = raw.smtp_host.get_ref().trim().to_string();
        if host.is_empty() || host.contains(char::is_whitespace) {
            return self.fail(raw.smtp_host.span(), "smtp_host must be a host name or address");
        }
        let loopback = host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
        if raw.security == MailSecurity::None && !loopback {
            return self.fail(
                span,
                "security = \"none\" sends passwords and mail in clear text: only for a relay on loopback",
            );
        }
        if !raw.from.get_ref().contains('@') {
            return self
                .fail(raw.from.span(), "from must be an address such as \"Rerun Gate <rerun-gate@example.co.jp>\"");
        }
        for var in [&raw.username_env, &raw.password_env].into_iter().flatten() {
            if !is_env_name(var.get_ref()) {
                return self
                    .fail(var.span(), "username_env and password_env must name environment variables (A-Z, 0-9, _)");
            }
        }
        if raw.username_env.is_some() != raw.password_env.is_some() {
            return self.fail(span, "give both username_env and password_env, or neither");
        }
        let default_port = match raw.security {
            MailSecurity::Tls => 465,
            MailSecurity::Starttls => 587,
            MailSecurity::None => 25,
        };
        Ok(MailConfig {
            smtp_host: host,
            smtp_port: raw.smtp_port.unwrap_or(default_port),
            security: raw.security,
            from: raw.from.into_inner(),
            username_env: raw.username_env.map(Spanned::into_inner),
            password_env: raw.password_env.map(Spanned::into_inner),
        })
    }

    fn config(&self, raw: RawConfig, file: &str) -> Result<Config, ConfigError> {
        let retention = self.number(raw.settings.idempotency_retention_days, 1.., 30, "idempotency_retention_days")?;
        let message_retention_days =
            self.number(raw.settings.message_retention_days, 1.., 30, "message_retention_days")?;
        let webhook_body_retention_days =
            self.number(raw.settings.webhook_body_retention_days, 1.., 30, "webhook_body_retention_days")?;
        if let Some(var) = &raw.settings.chat_webhook_url_env
            && !is_env_name(var.get_ref())
        {
            return self.fail(var.span(), "chat_webhook_url_env must name an environment variable (A-Z, 0-9, _)");
        }
        let review_time_zone = match raw.settings.review_time_zone {
            Some(zone) => match domain::preferences::time_zone(zone.get_ref()) {
                Ok(_) => zone.into_inner(),
                Err(problem) => return self.fail(zone.span(), format!("review_time_zone: {}", problem.message)),
            },
            None => domain::preferences::DEFAULT_TIME_ZONE.name().to_string(),
        };
        let bulk_dispatch_per_minute =
            self.number(raw.settings.bulk_dispatch_per_minute, 1.., 60, "bulk_dispatch_per_minute")?;
        let bulk_lookup_concurrency =
            self.number(raw.settings.bulk_lookup_concurrency, 1..=64, 8, "bulk_lookup_concurrency")?;
        let mail = raw.mail.map(|m| self.mail(m)).transpose()?;
        let audit = raw.audit.map(|a| self.audit(a)).transpose()?.unwrap_or_default();
        let departments = self.departments(raw.departments)?;
        let sign_in = self.sign_in(raw.sign_in.unwrap_or_default(), &departments)?;
        let (slack, teams, chat_link_days) = self.chat(raw.chat.unwrap_or_default(), &departments)?;
        let thresholds =
            raw.thresholds.into_iter().map(|t| self.threshold(t, &departments)).collect::<Result<_, _>>()?;
        let connectors = self.connectors(raw.connectors)?;
        let mut workflows: Vec<WorkflowConfig> = Vec::new();
        for w in raw.workflows {
            if workflows.iter().any(|known| known.name == *w.name.get_ref()) {
                return self.fail(w.name.span(), format!("workflow '{}' is defined twice", w.name.get_ref()));
            }
            workflows.push(self.workflow(w, &departments, &connectors)?);
        }
        Ok(Config {
            source: file.to_string(),
            idempotency_retention_days: retention,
            webhook_body_retention_days,
            message_retention_days,
            chat_webhook_url_env: raw.settings.chat_webhook_url_env.map(Spanned::into_inner),
            chat_webhook_allow_loopback: raw.settings.chat_webhook_allow_loopback,
            mail,
            departments,
            connectors,
            workflows,
            review_time_zone,
            thresholds,
            bulk_dispatch_per_minute,
            bulk_lookup_concurrency,
            audit,
            sign_in,
            slack,
            teams,
            chat_link_days,
        })
    }

    fn audit(&self, raw: RawAudit) -> Result<AuditConfig, ConfigError> {
        let defaults = AuditConfig::default();
        // A day of minutes, a month of hours.
        let checkpoint_minutes =
            self.number(raw.checkpoint_minutes, 1..=1440, defaults.checkpoint_minutes, "checkpoint_minutes")?;
        let digest_hours = self.number(raw.digest_hours, 1..=24 * 31, defaults.digest_hours, "digest_hours")?;
        if let Some(url) = &raw.timestamp_url {
            let checked = url::Url::parse(url.get_ref())
                .map_err(|e| e.to_string())
                .and_then(|parsed| crate::reconciliation::ssrf::check_url(&parsed, raw.timestamp_allow_loopback));
            if let Err(problem) = checked {
                return self.fail(url.span(), format!("timestamp_url: {problem}"));
            }
        }
        Ok(AuditConfig {
            checkpoint_minutes,
            digest_hours,
            timestamp_url: raw.timestamp_url.map(Spanned::into_inner),
            timestamp_allow_loopback: raw.timestamp_allow_loopback,
        })
    }

    fn threshold(&self, raw: RawThreshold, departments: &[DepartmentConfig]) -> Result<Threshold, ConfigError> {
        let Some(indicator) = Indicator::parse(raw.indicator.get_ref()) else {
            let known: Vec<&str> = Indicator::ALL.iter().map(|i| i.key()).collect();
            let message = format!("unknown indicator '{}' (known: {})", raw.indicator.get_ref(), known.join(", "));
            return self.fail(raw.indicator.span(), message);
        };
        let above = *raw.above.get_ref();
        if !above.is_finite() || above < 0.0 {
            return self
                .fail(raw.above.span(), "above must be a number of at least 0 (a count, a percentage or minutes)");
        }
        let period = match &raw.period {
            None => PeriodKind::Week,
            Some(p) => match PeriodKind::parse(p.get_ref()) {
                Some(kind) => kind,
                None => return self.fail(p.span(), "period must be \"week\" or \"month\""),
            },
        };
        if let Some(d) = &raw.department
            && !departments.iter().any(|known| known.code == *d.get_ref())
        {
            return self.fail(d.span(), format!("unknown department '{}'", d.get_ref()));
        }
        Ok(Threshold { indicator, above, period, department: raw.department.map(Spanned::into_inner) })
    }

    fn departments(&self, raw: Vec<RawDepartment>) -> Result<Vec<DepartmentConfig>, ConfigError> {
        let mut out: Vec<DepartmentConfig> = Vec::new();
        for d in raw {
            let code = DepartmentCode::parse(d.code.get_ref()).or_else(|m| self.fail(d.code.span(), m))?;
            if out.iter().any(|known| known.code == code.as_str()) {
                return self.fail(d.code.span(), format!("department '{code}' is defined twice"));
            }
            if d.name.get_ref().trim().is_empty() {
                return self.fail(d.name.span(), "a department needs a name");
            }
            let chat_language = match &d.chat_language {
                Some(l) => preferences::language(l.get_ref()).or_else(|e| self.fail(l.span(), e.message))?,
                None => preferences::LANGUAGES[0],
            };
            let name_en = match d.name_en {
                Some(n) if n.get_ref().trim().is_empty() => {
                    return self.fail(n.span(), "name_en, when given, is a name");
                }
                other => other.map(Spanned::into_inner),
            };
            let (code, name) = (code.to_string(), d.name.into_inner());
            out.push(DepartmentConfig { code, name, name_en, chat_language: chat_language.to_string() });
        }
        Ok(out)
    }

    /// A workflow's or step's titles: each, when given, a name.
    fn title(&self, ja: Option<Spanned<String>>, en: Option<Spanned<String>>) -> Result<Title, ConfigError> {
        for given in [&ja, &en].into_iter().flatten() {
            if given.get_ref().trim().is_empty() {
                return self.fail(given.span(), "title and title_en, when given, are names");
            }
        }
        Ok(Title { ja: ja.map(Spanned::into_inner), en: en.map(Spanned::into_inner) })
    }

    fn connectors(&self, raw: Vec<RawConnector>) -> Result<Vec<ConnectorConfig>, ConfigError> {
        let mut out: Vec<ConnectorConfig> = Vec::new();
        for c in raw {
            if out.iter().any(|known| known.name == *c.name.get_ref()) {
                return self.fail(c.name.span(), format!("connector '{}' is defined twice", c.name.get_ref()));
            }
            if self.kinds.get(c.kind.get_ref()).is_none() {
                let known = self.kinds.names().join(", ");
                return self
                    .fail(c.kind.span(), format!("unknown connector kind '{}' (known: {known})", c.kind.get_ref()));
            }
            let mut settings = BTreeMap::new();
            let mut credential_envs = BTreeMap::new();
            for (key, value) in c.settings {
                let at = c.name.span();
                if key.ends_with("_env") {
                    match value.as_str() {
                        Some(var) if is_env_name(var) => credential_envs.insert(key, var.to_string()),
                        _ => return self.fail(at, format!("{key} must name an environment variable (A-Z, 0-9, _)")),
                    };
                } else if looks_like_secret(&key) {
                    let message = format!(
                        "'{key}' looks like a credential: put it in an environment variable \
                         and write {key}_env = \"VARIABLE\""
                    );
                    return self.fail(at, message);
                } else {
                    let Ok(value) = serde_json::to_value(&value) else {
                        return self.fail(at, format!("{key}: a value of this type is not supported"));
                    };
                    settings.insert(key, value);
                }
            }
            if let Err(problem) = crate::reconciliation::read_settings(self.kinds, c.kind.get_ref(), &settings) {
                return self.fail(c.name.span(), format!("connector '{}': {problem}", c.name.get_ref()));
            }
            out.push(ConnectorConfig {
                name: c.name.into_inner(),
                kind: c.kind.into_inner(),
                settings,
                credential_envs,
            });
        }
        Ok(out)
    }

    fn workflow(
        &self,
        w: RawWorkflow,
        departments: &[DepartmentConfig],
        connectors: &[ConnectorConfig],
    ) -> Result<WorkflowConfig, ConfigError> {
        if !departments.iter().any(|d| d.code == *w.department.get_ref()) {
            return self.fail(w.department.span(), format!("unknown department '{}'", w.department.get_ref()));
        }
        let url = w.rerun_url.get_ref();
        if !(url.starts_with("https://") || url.starts_with("http://")) || url.contains(char::is_whitespace) {
            return self.fail(w.rerun_url.span(), "rerun_url must be an http:// or https:// URL");
        }
        if !is_env_name(w.signing_secret_env.get_ref()) {
            return self.fail(
                w.signing_secret_env.span(),
                "signing_secret_env must name an environment variable (A-Z, 0-9, _)",
            );
        }
        let approvals_required = match w.approvals_required {
            Some(n) if *n.get_ref() == 0 => return self.fail(n.span(), "approvals_required must be at least 1"),
            Some(n) => n.into_inner(),
            None => 1,
        };
        if w.steps.is_empty() {
            return self.fail(w.name.span(), format!("workflow '{}' has no [[workflow.step]]", w.name.get_ref()));
        }
        let mut steps: Vec<StepConfig> = Vec::new();
        for s in w.steps {
            if steps.iter().any(|known| known.name == *s.name.get_ref()) {
                return self.fail(s.name.span(), format!("step '{}' appears twice", s.name.get_ref()));
            }
            if let Some(c) = &s.connector {
                if !connectors.iter().any(|known| known.name == *c.get_ref()) {
                    return self.fail(c.span(), format!("unknown connector '{}'", c.get_ref()));
                }
            } else if s.side_effect {
                return self.fail(
                    s.name.span(),
                    format!("step '{}' has a side effect, so it needs a connector to check it with", s.name.get_ref()),
                );
            }
            for limit in [&s.deadline_seconds, &s.heartbeat_seconds].into_iter().flatten() {
                if *limit.get_ref() == 0 {
                    return self.fail(limit.span(), "timeouts must be at least 1 second");
                }
            }
            let title = self.title(s.title, s.title_en)?;
            steps.push(StepConfig {
                title,
                name: s.name.into_inner(),
                connector: s.connector.map(Spanned::into_inner),
                side_effect: s.side_effect,
                deadline_seconds: s.deadline_seconds.map_or(DEFAULT_DEADLINE_SECONDS, Spanned::into_inner),
                heartbeat_seconds: s.heartbeat_seconds.map(Spanned::into_inner),
            });
        }
        let mut workflow = WorkflowConfig {
            title: self.title(w.title, w.title_en)?,
            name: w.name.into_inner(),
            department: w.department.into_inner(),
            rerun_url: w.rerun_url.into_inner(),
            signing_secret_env: w.signing_secret_env.into_inner(),
            rerun_allow_loopback: w.rerun_allow_loopback,
            approvals_required,
            decide_in_chat: w.decide_in_chat,
            steps,
            version: String::new(),
            canary: self.canary(w.canary)?,
        };
        workflow.version = definition_version(&workflow);
        Ok(workflow)
    }
}

impl Validator<'_> {
    fn canary(&self, raw: Option<Spanned<RawCanary>>) -> Result<Option<CanaryConfig>, ConfigError> {
        let Some(raw) = raw else { return Ok(Some(CanaryConfig::default())) };
        let span = raw.span();
        let raw = raw.into_inner();
        if !raw.enabled {
            return Ok(None);
        }
        let default = CanaryConfig::default();
        let on_failure = match raw.on_failure.as_deref() {
            None => default.on_failure,
            Some(text) => match OnFailure::parse(text) {
                Some(on_failure) => on_failure,
                None => return self.fail(span, "on_failure is \"pause\" or \"pause_and_stop\""),
            },
        };
        let canary = CanaryConfig {
            size: raw.size.unwrap_or(default.size),
            percent: raw.percent.unwrap_or(default.percent),
            stages: raw.stages.unwrap_or(default.stages),
            settle_seconds: raw.settle_seconds.unwrap_or(default.settle_seconds),
            on_failure,
        };
        match canary.validate() {
            Ok(()) => Ok(Some(canary)),
            Err(invalid) => self.fail(span, format!("[workflow.canary]: {}", invalid.message)),
        }
    }
}

/// What an approval is bound to: the workflow's definition, titles left out (renaming voids nothing).
fn definition_version(w: &WorkflowConfig) -> String {
    #[derive(serde::Serialize)]
    struct Step<'a> {
        name: &'a str,
        connector: &'a Option<String>,
        side_effect: bool,
        deadline_seconds: u64,
        heartbeat_seconds: Option<u64>,
    }
    let steps: Vec<Step> = w
        .steps
        .iter()
        .map(|s| Step {
            name: &s.name,
            connector: &s.connector,
            side_effect: s.side_effect,
            deadline_seconds: s.deadline_seconds,
            heartbeat_seconds: s.heartbeat_seconds,
        })
        .collect();
    let text = serde_json::to_string(&(&w.name, &w.department, &w.rerun_url, w.approvals_required, &steps))
        .unwrap_or_default();
    hex::encode(&Sha256::digest(text.as_bytes())[..8])
}

fn is_env_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// A key whose words name a credential (`bot_token`, `client_secret`, `api_key`); `input_tokens` (the path of a
/// token count in an AI provider's answer) is not one.
fn looks_like_secret(key: &str) -> bool {
    const WORDS: [&str; 9] =
        ["secret", "secrets", "password", "passwords", "passwd", "token", "apikey", "credential", "credentials"];
    let key = key.to_lowercase();
    key.contains("api_key") || key.split(['_', '-', '.']).any(|word| WORDS.contains(&word))
}

pub fn default_path() -> PathBuf {
    PathBuf::from("rerun-gate.toml")
}

mod chat;
mod sign_in;
#[cfg(test)]
mod tests;
