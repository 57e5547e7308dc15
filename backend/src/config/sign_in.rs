//! `[sign_in]` and `[sign_in.oidc]`: local passwords, the company's identity provider and its group mapping.
use super::{ConfigError, Validator, is_env_name};
use domain::configuration::{DepartmentConfig, LocalPasswords, OidcConfig, SignInConfig};
use domain::identity::{DecisionStrength, GroupMapping};
use domain::roles::Role;
use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSignIn {
    local_passwords: Option<Spanned<String>>,
    #[serde(default)]
    break_glass_users: Vec<String>,
    fresh_minutes: Option<Spanned<u32>>,
    oidc: Option<Spanned<RawOidc>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOidc {
    issuer: Spanned<String>,
    client_id: Spanned<String>,
    client_secret_env: Option<Spanned<String>>,
    scopes: Option<Spanned<Vec<String>>>,
    groups_claim: Option<String>,
    username_claim: Option<String>,
    name_claim: Option<String>,
    email_claim: Option<String>,
    #[serde(default)]
    allow_loopback: bool,
    #[serde(default, rename = "group")]
    groups: Vec<RawGroup>,
    #[serde(default)]
    decision_acr_values: Vec<String>,
    #[serde(default)]
    decision_amr: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    group: Spanned<String>,
    roles: Spanned<Vec<String>>,
    departments: Option<Spanned<Vec<String>>>,
}

impl Validator<'_> {
    pub(super) fn sign_in(
        &self,
        raw: RawSignIn,
        departments: &[DepartmentConfig],
    ) -> Result<SignInConfig, ConfigError> {
        let choice_span = raw.local_passwords.as_ref().map_or(0..0, Spanned::span);
        let local_passwords = match raw.local_passwords {
            None => LocalPasswords::Everyone,
            Some(v) => match v.get_ref().as_str() {
                "everyone" => LocalPasswords::Everyone,
                "break_glass" => LocalPasswords::BreakGlass,
                other => {
                    return self.fail(
                        v.span(),
                        format!("local_passwords must be \"everyone\" or \"break_glass\", not \"{other}\""),
                    );
                }
            },
        };
        let fresh_minutes =
            self.number(raw.fresh_minutes, 1..=720, SignInConfig::default().fresh_minutes, "fresh_minutes")?;
        let oidc = raw.oidc.map(|o| self.oidc(o, departments)).transpose()?;
        if local_passwords == LocalPasswords::BreakGlass && oidc.is_none() {
            return self.fail(
                choice_span,
                "local_passwords = \"break_glass\" needs [sign_in.oidc]: nobody else could sign in",
            );
        }
        Ok(SignInConfig { local_passwords, break_glass_users: raw.break_glass_users, fresh_minutes, oidc })
    }

    fn oidc(&self, raw: Spanned<RawOidc>, departments: &[DepartmentConfig]) -> Result<OidcConfig, ConfigError> {
        let span = raw.span();
        let raw = raw.into_inner();
        let checked = url::Url::parse(raw.issuer.get_ref())
            .map_err(|e| e.to_string())
            .and_then(|url| crate::reconciliation::ssrf::check_url(&url, raw.allow_loopback));
        if let Err(problem) = checked {
            return self.fail(raw.issuer.span(), format!("issuer: {problem}"));
        }
        if let Some(var) = &raw.client_secret_env
            && !is_env_name(var.get_ref())
        {
            return self.fail(var.span(), "client_secret_env must name an environment variable (A-Z, 0-9, _)");
        }
        let scopes = match raw.scopes {
            Some(s) if !s.get_ref().iter().any(|scope| scope == "openid") => {
                return self.fail(s.span(), "scopes must include \"openid\"");
            }
            Some(s) => s.into_inner(),
            None => ["openid", "profile", "email"].map(String::from).to_vec(),
        };
        if raw.groups.is_empty() {
            return self
                .fail(span, "[sign_in.oidc] needs at least one [[sign_in.oidc.group]]: nobody would get a role");
        }
        let mut groups = Vec::new();
        for g in raw.groups {
            let mut roles = Vec::new();
            for role in g.roles.get_ref() {
                roles.push(role.parse::<Role>().or_else(|m| self.fail(g.roles.span(), m))?);
            }
            if roles.is_empty() {
                return self.fail(g.roles.span(), "a group gives at least one role");
            }
            let codes = g.departments.map_or_else(Vec::new, |list| {
                let span = list.span();
                list.into_inner().into_iter().map(|code| (code, span.clone())).collect()
            });
            if let Some((code, span)) = codes.iter().find(|(code, _)| !departments.iter().any(|d| &d.code == code)) {
                return self.fail(span.clone(), format!("unknown department '{code}'"));
            }
            let known = codes.into_iter().map(|(code, _)| code).collect();
            groups.push(GroupMapping { group: g.group.into_inner(), roles, departments: known });
        }
        Ok(OidcConfig {
            issuer: raw.issuer.into_inner(),
            client_id: raw.client_id.into_inner(),
            client_secret_env: raw.client_secret_env.map(Spanned::into_inner),
            scopes,
            groups_claim: raw.groups_claim.unwrap_or_else(|| "groups".into()),
            username_claim: raw.username_claim.unwrap_or_else(|| "preferred_username".into()),
            name_claim: raw.name_claim.unwrap_or_else(|| "name".into()),
            email_claim: raw.email_claim.unwrap_or_else(|| "email".into()),
            allow_loopback: raw.allow_loopback,
            groups,
            decision: DecisionStrength { acr_values: raw.decision_acr_values, amr: raw.decision_amr },
        })
    }
}
