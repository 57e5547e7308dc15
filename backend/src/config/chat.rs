//! `[chat.slack]` and `[chat.teams]`: the Slack app and the Teams bot that post approval requests and take
//! decisions in chat.
use super::{ConfigError, Validator, is_env_name};
use domain::configuration::{ChatSignIn, DepartmentConfig, SlackConfig, TeamsConfig};
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawChat {
    slack: Option<Spanned<RawSlack>>,
    teams: Option<Spanned<RawTeams>>,
    link_days: Option<Spanned<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTeams {
    app_id: Spanned<String>,
    app_password_env: Spanned<String>,
    tenant_id: Spanned<String>,
    service_url: Option<Spanned<String>>,
    #[serde(default)]
    conversations: BTreeMap<String, Spanned<String>>,
    openid_metadata_url: Option<Spanned<String>>,
    token_url: Option<Spanned<String>>,
    #[serde(default)]
    allow_loopback: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSlack {
    bot_token_env: Spanned<String>,
    signing_secret_env: Spanned<String>,
    api_url: Option<Spanned<String>>,
    #[serde(default)]
    allow_loopback: bool,
    #[serde(default)]
    channels: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    direct_messages: bool,
    sign_in: Spanned<RawChatSignIn>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChatSignIn {
    issuer: Option<Spanned<String>>,
    client_id: Spanned<String>,
    client_secret_env: Spanned<String>,
}

impl Validator<'_> {
    pub(super) fn chat(
        &self,
        raw: RawChat,
        departments: &[DepartmentConfig],
    ) -> Result<(Option<SlackConfig>, Option<TeamsConfig>, u32), ConfigError> {
        let link_days = match raw.link_days {
            Some(days) if !(1..=365).contains(days.get_ref()) => {
                return self.fail(days.span(), "link_days must be 1 to 365");
            }
            Some(days) => days.into_inner(),
            None => domain::chat::DEFAULT_LINK_DAYS,
        };
        let teams = raw.teams.map(|t| self.teams(t, departments)).transpose()?;
        Ok((self.slack(raw.slack, departments)?, teams, link_days))
    }

    fn teams(&self, raw: Spanned<RawTeams>, departments: &[DepartmentConfig]) -> Result<TeamsConfig, ConfigError> {
        let span = raw.span();
        let raw = raw.into_inner();
        if !is_env_name(raw.app_password_env.get_ref()) {
            return self.fail(raw.app_password_env.span(), "must name an environment variable (A-Z, 0-9, _)");
        }
        for id in [&raw.app_id, &raw.tenant_id] {
            if id.get_ref().is_empty() || !id.get_ref().chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
                return self.fail(id.span(), "an ID of Microsoft Entra ID (a GUID) is expected");
            }
        }
        let mut conversations = BTreeMap::new();
        for (department, conversation) in raw.conversations {
            if !departments.iter().any(|d| d.code == department) {
                return self.fail(conversation.span(), format!("unknown department '{department}'"));
            }
            conversations.insert(department, conversation.into_inner());
        }
        if conversations.is_empty() {
            return self.fail(span, "[chat.teams] needs conversations: nothing would be posted");
        }
        let tenant = raw.tenant_id.get_ref().clone();
        let loopback = raw.allow_loopback;
        Ok(TeamsConfig {
            service_url: self.outbound_url(raw.service_url, "https://smba.trafficmanager.net/teams", loopback)?,
            openid_metadata_url: self.outbound_url(
                raw.openid_metadata_url,
                "https://login.botframework.com/v1/.well-known/openidconfiguration",
                loopback,
            )?,
            token_url: self.outbound_url(
                raw.token_url,
                &format!("https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token"),
                loopback,
            )?,
            app_id: raw.app_id.into_inner(),
            app_password_env: raw.app_password_env.into_inner(),
            tenant_id: tenant,
            conversations,
            allow_loopback: loopback,
        })
    }

    fn slack(
        &self,
        raw: Option<Spanned<RawSlack>>,
        departments: &[DepartmentConfig],
    ) -> Result<Option<SlackConfig>, ConfigError> {
        let Some(raw) = raw else { return Ok(None) };
        let span = raw.span();
        let raw = raw.into_inner();
        for var in [&raw.bot_token_env, &raw.signing_secret_env, &raw.sign_in.get_ref().client_secret_env] {
            if !is_env_name(var.get_ref()) {
                return self.fail(var.span(), "must name an environment variable (A-Z, 0-9, _)");
            }
        }
        let api_url = self.outbound_url(raw.api_url, "https://slack.com/api", raw.allow_loopback)?;
        let mut channels = BTreeMap::new();
        for (department, channel) in raw.channels {
            if !departments.iter().any(|d| d.code == department) {
                return self.fail(channel.span(), format!("unknown department '{department}'"));
            }
            let id = channel.get_ref();
            if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
                return self.fail(channel.span(), "a channel is named by its ID (C0123ABCD), not by its name");
            }
            channels.insert(department, channel.into_inner());
        }
        if channels.is_empty() && !raw.direct_messages {
            return self.fail(span, "[chat.slack] needs channels or direct_messages = true: nothing would be posted");
        }
        let sign_in = raw.sign_in.into_inner();
        let issuer = self.outbound_url(sign_in.issuer, "https://slack.com", raw.allow_loopback)?;
        Ok(Some(SlackConfig {
            bot_token_env: raw.bot_token_env.into_inner(),
            signing_secret_env: raw.signing_secret_env.into_inner(),
            api_url,
            allow_loopback: raw.allow_loopback,
            channels,
            direct_messages: raw.direct_messages,
            sign_in: ChatSignIn {
                issuer,
                client_id: sign_in.client_id.into_inner(),
                client_secret_env: sign_in.client_secret_env.into_inner(),
            },
        }))
    }

    /// An address the server calls: `default` when not given, checked like every outbound URL.
    fn outbound_url(
        &self,
        given: Option<Spanned<String>>,
        default: &str,
        allow_loopback: bool,
    ) -> Result<String, ConfigError> {
        let Some(given) = given else { return Ok(default.to_string()) };
        let checked = url::Url::parse(given.get_ref())
            .map_err(|e| e.to_string())
            .and_then(|url| crate::reconciliation::ssrf::check_url(&url, allow_loopback));
        match checked {
            Ok(()) => Ok(given.into_inner().trim_end_matches('/').to_string()),
            Err(problem) => self.fail(given.span(), problem),
        }
    }
}
