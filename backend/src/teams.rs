//! Microsoft Teams' side of decisions in chat, through a Bot Framework bot: the Bot Connector API (post and update
//! an activity, with a token from the client-credentials flow), the activities Teams sends (their JWT verified
//! against the Bot Framework's OpenID metadata: issuer, audience = the bot's app ID, signature, expiry, the key's
//! endorsement of the channel, the service URL), and the Adaptive Card (1.4, Universal Actions: `Action.Execute`)
//! of a decision message.
use crate::reconciliation::{http_json, ssrf};
use chrono::{DateTime, Utc};
use domain::chat::{ChatPlatform, ChatSubject, ChatUser};
use domain::configuration::TeamsConfig;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use words::chat::CardWords;

/// The issuer of the Bot Framework's tokens to bots.
pub const ISSUER: &str = "https://api.botframework.com";
/// What the bot asks for to call the Bot Connector API.
const SCOPE: &str = "https://api.botframework.com/.default";
/// Clock difference allowed on a token's times, as the Bot Framework documents (5 minutes).
const LEEWAY_SECONDS: i64 = 300;
/// The metadata and keys are kept this long; an unknown key fetches them again, at most once a minute.
const KEYS_FOR: Duration = Duration::from_secs(10 * 60);
const KEYS_AGAIN_AFTER: Duration = Duration::from_secs(60);
/// The verbs of a decision card's `Action.Execute`, and its comment input.
pub const APPROVE: &str = "approve";
pub const REJECT: &str = "reject";
const COMMENT: &str = "comment";

pub struct Teams {
    config: TeamsConfig,
    secret: SecretString,
    keys: tokio::sync::Mutex<Option<(Instant, Value)>>,
    token: tokio::sync::Mutex<Option<(Instant, SecretString)>>,
}

/// Why an activity is not believed, or a call to Teams did not work.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{why}")]
pub struct TeamsProblem {
    pub why: String,
    pub permanent: bool,
}

fn problem(why: impl Into<String>) -> TeamsProblem {
    TeamsProblem { why: why.into(), permanent: false }
}

/// A press of a decision card's button, from a verified activity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Execute {
    pub who: ChatUser,
    pub verb: String,
    pub subject: ChatSubject,
    pub comment: String,
}

impl Teams {
    /// Reads the app's secret from its variable; a missing one stops the start.
    pub fn new(config: &TeamsConfig) -> Result<Teams, String> {
        let var = &config.app_password_env;
        let secret = std::env::var(var)
            .ok()
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("[chat.teams]: the variable {var} is not set"))?;
        Ok(Teams {
            config: config.clone(),
            secret: SecretString::from(secret),
            keys: tokio::sync::Mutex::new(None),
            token: tokio::sync::Mutex::new(None),
        })
    }

    pub fn config(&self) -> &TeamsConfig {
        &self.config
    }

    /// Verifies the `Authorization` header of an activity Teams sent, before the activity is read for anything
    /// else; `activity` is the body, parsed.
    /// Whether the activity is to be believed, to the letter: a Bot Framework token for this bot, from Teams
    /// (`channelId` `msteams`), for the configured tenant, and for the activity's `serviceUrl` (the token's
    /// `serviceurl` claim, required). Returns until when the token could be believed: its activity's ID is
    /// remembered at least that long (`services::chat::first_time`), so that one activity decides once.
    pub async fn verify(
        &self,
        authorization: Option<&str>,
        activity: &Value,
        now: DateTime<Utc>,
    ) -> Result<DateTime<Utc>, TeamsProblem> {
        let channel = activity["channelId"].as_str().unwrap_or_default();
        if channel != "msteams" {
            return Err(problem(format!("the activity comes from the channel '{channel}', not Teams")));
        }
        let tenants = [&activity["conversation"]["tenantId"], &activity["channelData"]["tenant"]["id"]];
        let tenants: Vec<&str> = tenants.iter().filter_map(|t| t.as_str()).collect();
        if tenants.is_empty() || tenants.iter().any(|t| *t != self.config.tenant_id) {
            return Err(problem(format!("the activity's tenant {tenants:?} is not the configured one")));
        }
        let token = authorization.and_then(|h| h.strip_prefix("Bearer ")).ok_or_else(|| problem("no bearer token"))?;
        let header = jsonwebtoken::decode_header(token).map_err(|e| problem(format!("not a JWT: {e}")))?;
        if header.alg != jsonwebtoken::Algorithm::RS256 {
            return Err(problem(format!("signed with {:?}, not RS256", header.alg)));
        }
        let kid = header.kid.ok_or_else(|| problem("the token names no key"))?;
        let key = self.key(&kid).await?;
        // The Bot Framework endorses each key for the channels it signs for.
        if let Some(endorsements) = key["endorsements"].as_array()
            && !endorsements.iter().any(|e| e.as_str() == Some(channel))
        {
            return Err(problem(format!("the key does not endorse the channel '{channel}'")));
        }
        let jwk: jsonwebtoken::jwk::Jwk =
            serde_json::from_value(key).map_err(|e| problem(format!("an unreadable key: {e}")))?;
        let decoding = jsonwebtoken::DecodingKey::from_jwk(&jwk).map_err(|e| problem(e.to_string()))?;
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[&self.config.app_id]);
        // Times are checked against the app's clock below.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let claims = jsonwebtoken::decode::<Value>(token, &decoding, &validation)
            .map_err(|e| problem(format!("the token is not to be believed: {e}")))?
            .claims;
        let at = |name: &str| claims[name].as_i64();
        let now = now.timestamp();
        let Some(exp) = at("exp").filter(|exp| now <= exp + LEEWAY_SECONDS) else {
            return Err(problem("the token expired"));
        };
        if at("nbf").is_some_and(|nbf| now + LEEWAY_SECONDS < nbf) {
            return Err(problem("the token is not valid yet"));
        }
        let service_url = activity["serviceUrl"].as_str().unwrap_or_default();
        if claims["serviceurl"].as_str() != Some(service_url) || service_url.is_empty() {
            return Err(problem("the activity's serviceUrl is not the token's (or the token names none)"));
        }
        DateTime::from_timestamp(exp + LEEWAY_SECONDS, 0).ok_or_else(|| problem("the token's expiry is not a time"))
    }

    /// The published key `kid`, fetched again when it is not known (the Bot Framework rotates its keys).
    async fn key(&self, kid: &str) -> Result<Value, TeamsProblem> {
        let mut cached = self.keys.lock().await;
        let find = |keys: &Value| keys["keys"].as_array().and_then(|k| k.iter().find(|k| k["kid"] == kid)).cloned();
        if let Some((at, keys)) = cached.as_ref() {
            let found = find(keys);
            if found.is_some() && at.elapsed() < KEYS_FOR {
                return Ok(found.unwrap_or_default());
            }
            if found.is_none() && at.elapsed() < KEYS_AGAIN_AFTER {
                return Err(problem(format!("no published key '{kid}'")));
            }
        }
        let metadata = self.get(&self.config.openid_metadata_url).await?;
        let jwks_uri = metadata["jwks_uri"].as_str().ok_or_else(|| problem("the metadata names no jwks_uri"))?;
        let keys = self.get(jwks_uri).await?;
        let found = find(&keys);
        *cached = Some((Instant::now(), keys));
        found.ok_or_else(|| problem(format!("no published key '{kid}'")))
    }

    async fn get(&self, url: &str) -> Result<Value, TeamsProblem> {
        let client = self.client(url)?;
        let answer = client.get(url).timeout(Duration::from_secs(10)).send().await;
        let answer = answer.map_err(|e| problem(http_json::describe(&e)))?;
        if !answer.status().is_success() {
            return Err(problem(format!("{url}: HTTP {}", answer.status().as_u16())));
        }
        answer.json().await.map_err(|e| problem(e.to_string()))
    }

    fn client(&self, url: &str) -> Result<&'static reqwest::Client, TeamsProblem> {
        let allow_loopback = self.config.allow_loopback;
        let target = reqwest::Url::parse(url).map_err(|e| problem(e.to_string()))?;
        ssrf::check_url(&target, allow_loopback).map_err(problem)?;
        ssrf::shared_client(allow_loopback).map_err(problem)
    }

    /// The bot's token for the Bot Connector API, kept until shortly before it expires.
    async fn bearer(&self) -> Result<SecretString, TeamsProblem> {
        let mut cached = self.token.lock().await;
        if let Some((until, token)) = cached.as_ref()
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", self.config.app_id.as_str()),
            ("client_secret", self.secret.expose_secret()),
            ("scope", SCOPE),
        ];
        let url = &self.config.token_url;
        let answer = self.client(url)?.post(url).form(&form).timeout(Duration::from_secs(10)).send().await;
        let answer = answer.map_err(|e| problem(http_json::describe(&e)))?;
        let status = answer.status();
        let body: Value = answer.json().await.unwrap_or_default();
        let token = body["access_token"].as_str().filter(|_| status.is_success());
        let Some(token) = token else {
            let why = format!("the token endpoint answered HTTP {}: {}", status.as_u16(), body["error"]);
            return Err(TeamsProblem { why, permanent: status.is_client_error() });
        };
        let lasts = body["expires_in"].as_u64().unwrap_or(3600).saturating_sub(120);
        let token = SecretString::from(token.to_string());
        *cached = Some((Instant::now() + Duration::from_secs(lasts), token.clone()));
        Ok(token)
    }

    /// Posts a card to a conversation; returns the activity's ID.
    pub async fn post(&self, conversation: &str, card: &Value) -> Result<String, TeamsProblem> {
        let url = self.activities(conversation, None)?;
        let body = json!({"type": "message", "attachments": [attachment(card)]});
        let answer = self.send(reqwest::Method::POST, url, &body).await?;
        answer["id"].as_str().map(str::to_string).ok_or_else(|| problem("the activity came back without an ID"))
    }

    /// Replaces a posted card, for everyone in the conversation.
    pub async fn update(&self, (conversation, activity): (&str, &str), card: &Value) -> Result<(), TeamsProblem> {
        let url = self.activities(conversation, Some(activity))?;
        let body = json!({"type": "message", "id": activity, "attachments": [attachment(card)]});
        self.send(reqwest::Method::PUT, url, &body).await.map(drop)
    }

    /// `{service_url}/v3/conversations/{conversation}/activities[/{activity}]`, each part percent-encoded.
    fn activities(&self, conversation: &str, activity: Option<&str>) -> Result<reqwest::Url, TeamsProblem> {
        let mut url = reqwest::Url::parse(&self.config.service_url).map_err(|e| problem(e.to_string()))?;
        {
            let mut path = url.path_segments_mut().map_err(|_| problem("the service URL cannot have a path"))?;
            path.pop_if_empty().extend(["v3", "conversations", conversation, "activities"]);
            if let Some(activity) = activity {
                path.push(activity);
            }
        }
        Ok(url)
    }

    async fn send(&self, method: reqwest::Method, url: reqwest::Url, body: &Value) -> Result<Value, TeamsProblem> {
        let token = self.bearer().await?;
        let client = self.client(url.as_str())?;
        let request = client.request(method, url).bearer_auth(token.expose_secret()).json(body);
        let answer = request.timeout(Duration::from_secs(10)).send().await;
        let answer = answer.map_err(|e| problem(http_json::describe(&e)))?;
        let status = answer.status();
        if !status.is_success() {
            // The conversation or the activity is gone, or the bot is not allowed there: trying again will not help.
            let permanent = matches!(status.as_u16(), 400 | 401 | 403 | 404);
            return Err(TeamsProblem { why: format!("Bot Connector answered HTTP {}", status.as_u16()), permanent });
        }
        Ok(answer.json().await.unwrap_or_default())
    }
}

fn attachment(card: &Value) -> Value {
    json!({"contentType": "application/vnd.microsoft.card.adaptive", "content": card})
}

/// A press of a card's `Action.Execute` (an `adaptiveCard/action` invoke), from a verified activity; `None` for
/// any other activity (a message to the bot, a card refresh).
pub fn execute(activity: &Value) -> Option<Execute> {
    if activity["type"] != "invoke" || activity["name"] != "adaptiveCard/action" {
        return None;
    }
    let action = &activity["value"]["action"];
    let data = &action["data"];
    let subject = data["subject"].as_str().and_then(ChatSubject::parse)?;
    let tenant =
        activity["conversation"]["tenantId"].as_str().or_else(|| activity["channelData"]["tenant"]["id"].as_str());
    let who = ChatUser {
        platform: ChatPlatform::Teams,
        team_id: tenant.unwrap_or_default().to_string(),
        user_id: activity["from"]["aadObjectId"].as_str().unwrap_or_default().to_string(),
    };
    Some(Execute {
        who,
        verb: action["verb"].as_str().unwrap_or_default().to_string(),
        subject,
        comment: data[COMMENT].as_str().unwrap_or_default().to_string(),
    })
}

/// The answer to an invoke: the card as it is now (Teams shows it to everyone), or a message to the person.
pub fn card_answer(card: &Value) -> Value {
    json!({"statusCode": 200, "type": "application/vnd.microsoft.card.adaptive", "value": card})
}

pub fn message_answer(text: &str) -> Value {
    json!({"statusCode": 200, "type": "application/vnd.microsoft.activity.message", "value": text})
}

/// A decision message as an Adaptive Card: the facts, then while it waits 承認 / 却下 (`Action.Execute`, with the
/// reason's input for 却下) and 開く; without `decide_in_chat` each only opens the decision page; once decided,
/// what happened and who decided, and only 開く.
pub fn card(words: &CardWords, subject: &ChatSubject, decide_in_chat: bool, url: &str) -> Value {
    let text = |text: &str| json!({"type": "TextBlock", "text": text, "wrap": true});
    let facts: Vec<Value> = words.fields.iter().map(|(title, value)| json!({"title": title, "value": value})).collect();
    let mut body = vec![
        json!({"type": "TextBlock", "text": words.title, "weight": "Bolder", "size": "Medium", "wrap": true}),
        json!({"type": "FactSet", "facts": facts}),
    ];
    if let Some((label, reason)) = &words.reason {
        body.push(json!({"type": "FactSet", "facts": [{"title": label, "value": reason}]}));
    }
    body.push(json!({"type": "TextBlock", "text": words.steps.0, "weight": "Bolder", "wrap": true}));
    body.push(text(&words.steps.1.join("\n\n")));
    body.push(json!({"type": "TextBlock", "text": words.progress, "isSubtle": true, "wrap": true}));
    let [approve, reject, open] = &words.buttons;
    let open_page = |title: &str| json!({"type": "Action.OpenUrl", "title": title, "url": url});
    let actions = if !words.outcome.is_empty() {
        body.push(text(&words.outcome.join("\n\n")));
        vec![open_page(open)]
    } else if decide_in_chat {
        body.push(json!({"type": "Input.Text", "id": COMMENT, "label": words.reason_input, "isMultiline": true,
            "maxLength": 2000}));
        let data = json!({"subject": subject.value()});
        vec![
            json!({"type": "Action.Execute", "title": approve, "verb": APPROVE, "data": data, "style": "positive"}),
            json!({"type": "Action.Execute", "title": reject, "verb": REJECT, "data": data, "style": "destructive"}),
            open_page(open),
        ]
    } else {
        if let Some(note) = &words.on_page {
            body.push(json!({"type": "TextBlock", "text": note, "isSubtle": true, "wrap": true}));
        }
        vec![open_page(approve), open_page(reject), open_page(open)]
    };
    json!({
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.4",
        "body": body,
        "actions": actions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_press_names_the_tenant_the_person_the_verb_the_subject_and_the_reason() {
        let activity = json!({"type": "invoke", "name": "adaptiveCard/action", "channelId": "msteams",
            "from": {"id": "29:1", "aadObjectId": "oid-1"}, "conversation": {"id": "19:a", "tenantId": "tid-1"},
            "value": {"action": {"type": "Action.Execute", "verb": "reject",
                "data": {"subject": "request:rr_1", "comment": "金額が違う"}}, "trigger": "manual"}});
        let pressed = execute(&activity).unwrap();
        assert_eq!((pressed.who.team_id.as_str(), pressed.who.user_id.as_str()), ("tid-1", "oid-1"));
        assert_eq!((pressed.verb.as_str(), pressed.comment.as_str()), ("reject", "金額が違う"));
        assert_eq!(pressed.subject, ChatSubject::Request("rr_1".into()));
        assert_eq!(execute(&json!({"type": "message", "text": "hi"})), None);
    }
}
