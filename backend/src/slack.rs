//! Slack's side of decisions in chat: its Web API (`chat.postMessage`, `chat.update`, `chat.postEphemeral`,
//! `views.open`, and a press's `response_url`), the Block Kit of a decision message and of the reject modal, and
//! the interaction payloads Slack sends (`block_actions`, `view_submission`). Every call goes through the SSRF
//! guard; the bot token and the signing secret come from the variables `[chat.slack]` names.
use crate::reconciliation::{http_json, ssrf};
use domain::chat::{ChatAction, ChatPlatform, ChatSubject, ChatUser};
use domain::configuration::SlackConfig;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use std::time::Duration;
use words::chat::CardWords;

/// The reject modal's `callback_id`, and its comment's block and action.
const REJECT_VIEW: &str = "rerun_reject";
const COMMENT: &str = "comment";

/// Slack caps a plain text's length; longer reasons are cut (the page shows them whole).
const MAX_TEXT: usize = 2900;

pub struct Slack {
    config: SlackConfig,
    token: SecretString,
    signing_secret: SecretString,
}

/// Why a call to Slack did not work; `permanent` ones are not tried again.
#[derive(Debug, Clone)]
pub struct SlackProblem {
    pub why: String,
    pub permanent: bool,
}

impl Slack {
    /// Reads the token and the signing secret from their variables; a missing one stops the start.
    pub fn new(config: &SlackConfig) -> Result<Slack, String> {
        let read = |var: &str| {
            std::env::var(var)
                .ok()
                .filter(|v| !v.is_empty())
                .map(SecretString::from)
                .ok_or_else(|| format!("[chat.slack]: the variable {var} is not set"))
        };
        Ok(Slack {
            token: read(&config.bot_token_env)?,
            signing_secret: read(&config.signing_secret_env)?,
            config: config.clone(),
        })
    }

    pub fn config(&self) -> &SlackConfig {
        &self.config
    }

    pub fn signing_secret(&self) -> &str {
        self.signing_secret.expose_secret()
    }

    /// Posts a message; returns where it is (the channel, which for a direct message is the conversation, and
    /// the message's `ts`).
    pub async fn post(&self, destination: &str, message: &Value) -> Result<(String, String), SlackProblem> {
        let mut body = message.clone();
        body["channel"] = json!(destination);
        let answer = self.call("chat.postMessage", &body).await?;
        let field = |name: &str| answer[name].as_str().map(str::to_string);
        match (field("channel"), field("ts")) {
            (Some(channel), Some(ts)) => Ok((channel, ts)),
            _ => Err(SlackProblem { why: "chat.postMessage answered without channel or ts".into(), permanent: false }),
        }
    }

    /// Replaces a posted message with `message`.
    pub async fn update(&self, (channel, ts): (&str, &str), message: &Value) -> Result<(), SlackProblem> {
        let mut body = message.clone();
        body["channel"] = json!(channel);
        body["ts"] = json!(ts);
        self.call("chat.update", &body).await.map(drop)
    }

    /// Opens the reject modal for the person who pressed 却下 (`trigger_id` lives three seconds).
    pub async fn open_reject(&self, trigger_id: &str, view: &Value) -> Result<(), SlackProblem> {
        self.call("views.open", &json!({"trigger_id": trigger_id, "view": view})).await.map(drop)
    }

    /// A message only `user` sees: through the press's `response_url` when there is one, else in `channel`.
    pub async fn tell(&self, to: &Whom, text: &str) -> Result<(), SlackProblem> {
        match &to.response_url {
            Some(url) => {
                let body = json!({"response_type": "ephemeral", "replace_original": false, "text": text});
                self.send(url, None, &body).await.map(drop)
            }
            None => {
                let Some(channel) = &to.channel else {
                    return Err(SlackProblem { why: "nowhere to answer".into(), permanent: true });
                };
                let body = json!({"channel": channel, "user": to.user, "text": text});
                self.call("chat.postEphemeral", &body).await.map(drop)
            }
        }
    }

    async fn call(&self, method: &str, body: &Value) -> Result<Value, SlackProblem> {
        let url = format!("{}/{method}", self.config.api_url);
        let answer = self.send(&url, Some(self.token.expose_secret()), body).await?;
        if answer["ok"].as_bool() == Some(true) {
            return Ok(answer);
        }
        let error = answer["error"].as_str().unwrap_or("no error named").to_string();
        // Slack's errors that another try will not mend.
        let permanent = matches!(
            error.as_str(),
            "invalid_auth"
                | "not_authed"
                | "account_inactive"
                | "token_revoked"
                | "channel_not_found"
                | "not_in_channel"
                | "is_archived"
                | "message_not_found"
                | "cant_update_message"
                | "invalid_blocks"
                | "missing_scope"
        );
        Err(SlackProblem { why: format!("{method}: {error}"), permanent })
    }

    async fn send(&self, url: &str, token: Option<&str>, body: &Value) -> Result<Value, SlackProblem> {
        let problem = |why: String| SlackProblem { why, permanent: false };
        let allow_loopback = self.config.allow_loopback;
        let target = reqwest::Url::parse(url).map_err(|e| problem(e.to_string()))?;
        ssrf::check_url(&target, allow_loopback).map_err(problem)?;
        let client = ssrf::shared_client(allow_loopback).map_err(problem)?;
        let mut request = client.post(target).timeout(Duration::from_secs(10)).json(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let answer = request.send().await.map_err(|e| problem(http_json::describe(&e)))?;
        let status = answer.status();
        if !status.is_success() {
            return Err(problem(format!("HTTP {}", status.as_u16())));
        }
        // `response_url` answers "ok" as text; the Web API answers JSON.
        let text = answer.text().await.map_err(|e| problem(e.to_string()))?;
        Ok(serde_json::from_str(&text).unwrap_or_else(|_| json!({"ok": true})))
    }
}

/// Whom to answer, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Whom {
    pub user: String,
    pub channel: Option<String>,
    pub response_url: Option<String>,
}

/// A decision message in Block Kit: the facts, then the buttons while it waits (承認 asks to confirm; without
/// `decide_in_chat` both open the decision page), or what happened once decided.
pub fn message(words: &CardWords, subject: &ChatSubject, decide_in_chat: bool, url: &str) -> Value {
    let value = subject.value();
    let plain = |text: &str| json!({"type": "plain_text", "text": cut(text), "emoji": true});
    let fields: Vec<Value> =
        words.fields.iter().map(|(label, value)| json!({"type": "mrkdwn", "text": field(label, value)})).collect();
    let mut blocks =
        vec![json!({"type": "header", "text": plain(&words.title)}), json!({"type": "section", "fields": fields})];
    if let Some((label, reason)) = &words.reason {
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": field(label, reason)}}));
    }
    blocks.push(json!({"type": "section", "text": {"type": "mrkdwn",
        "text": field(&words.steps.0, &words.steps.1.join("\n"))}}));
    blocks.push(json!({"type": "context", "elements": [plain(&words.progress)]}));
    if words.outcome.is_empty() {
        let [approve, reject, open] = &words.buttons;
        let elements = if decide_in_chat {
            let [title, text, yes, no] = &words.confirm;
            vec![
                json!({"type": "button", "action_id": ChatAction::Approve.id(), "value": value, "style": "primary",
                    "text": plain(approve),
                    "confirm": {"title": plain(title), "text": plain(text), "confirm": plain(yes), "deny": plain(no)}}),
                json!({"type": "button", "action_id": ChatAction::Reject.id(), "value": value, "style": "danger",
                    "text": plain(reject)}),
                json!({"type": "button", "action_id": ChatAction::Open.id(), "url": url, "text": plain(open)}),
            ]
        } else {
            // Each opens the page; pressing one decides nothing.
            [approve, reject, open]
                .iter()
                .enumerate()
                .map(|(n, label)| {
                    json!({"type": "button", "action_id": format!("{}_{n}", ChatAction::Open.id()), "url": url,
                        "text": plain(label)})
                })
                .collect()
        };
        blocks.push(json!({"type": "actions", "block_id": value, "elements": elements}));
        if let Some(note) = &words.on_page {
            blocks.push(json!({"type": "context", "elements": [plain(note)]}));
        }
    } else {
        let said = words.outcome.iter().map(|line| escape(line)).collect::<Vec<_>>().join("\n");
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": cut(&said)}}));
        blocks.push(json!({"type": "context", "elements": [
            {"type": "mrkdwn", "text": format!("<{url}|{}>", escape(&words.buttons[2]))}]}));
    }
    let mut fallback = words.title.clone();
    if let Some(now) = words.outcome.first() {
        fallback = format!("{fallback} — {now}");
    }
    json!({"text": cut(&fallback), "blocks": blocks})
}

/// The modal that asks why a rerun is rejected; `private_metadata` carries what it is about and where to answer.
pub fn reject_modal(words: &[String; 4], subject: &ChatSubject, whom: &Whom) -> Value {
    let plain = |text: &str| json!({"type": "plain_text", "text": text, "emoji": true});
    let [title, label, submit, cancel] = words;
    let metadata = json!({"subject": subject.value(), "channel": whom.channel, "response_url": whom.response_url});
    json!({
        "type": "modal",
        "callback_id": REJECT_VIEW,
        "private_metadata": metadata.to_string(),
        // Slack cuts a modal's title at 24 characters.
        "title": plain(&title.chars().take(24).collect::<String>()),
        "submit": plain(submit),
        "close": plain(cancel),
        "blocks": [{
            "type": "input",
            "block_id": COMMENT,
            "label": plain(label),
            "element": {"type": "plain_text_input", "action_id": COMMENT, "multiline": true, "max_length": 2000}
        }]
    })
}

/// The answer that keeps the modal open with a problem under the comment.
pub fn modal_error(text: &str) -> Value {
    json!({"response_action": "errors", "errors": {COMMENT: text}})
}

/// What a person did in Slack, from an interaction's payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interaction {
    /// A button of a decision message.
    Pressed { who: ChatUser, whom: Whom, action: ChatAction, subject: ChatSubject, trigger_id: String },
    /// The reject modal, sent with its comment.
    Rejected { who: ChatUser, whom: Whom, subject: ChatSubject, comment: String },
    /// Anything else (a page-opening button, another view): acknowledged, nothing to do.
    Other,
}

/// Reads an interaction: the form field `payload` of Slack's POST, as JSON. Called only once its signature
/// was verified.
pub fn interaction(form: &[u8]) -> Result<Interaction, String> {
    let payload = url::form_urlencoded::parse(form)
        .find(|(key, _)| key == "payload")
        .map(|(_, value)| value.into_owned())
        .ok_or("the body has no payload field")?;
    let payload: Value = serde_json::from_str(&payload).map_err(|e| format!("the payload is not JSON: {e}"))?;
    let text = |value: &Value| value.as_str().map(str::to_string);
    let user = text(&payload["user"]["id"]).ok_or("the payload names no user")?;
    let team = text(&payload["team"]["id"])
        .or_else(|| text(&payload["user"]["team_id"]))
        .ok_or("the payload names no team")?;
    let who = ChatUser { platform: ChatPlatform::Slack, team_id: team, user_id: user.clone() };
    match payload["type"].as_str() {
        Some("block_actions") => {
            let Some(pressed) = payload["actions"].as_array().and_then(|a| a.first()) else {
                return Ok(Interaction::Other);
            };
            let Some(action) = pressed["action_id"].as_str().and_then(ChatAction::parse) else {
                return Ok(Interaction::Other);
            };
            let subject = pressed["value"].as_str().and_then(ChatSubject::parse);
            let Some(subject) = subject.filter(|_| action != ChatAction::Open) else { return Ok(Interaction::Other) };
            let whom = Whom {
                user,
                channel: text(&payload["channel"]["id"]).or_else(|| text(&payload["container"]["channel_id"])),
                response_url: text(&payload["response_url"]),
            };
            let trigger_id = text(&payload["trigger_id"]).unwrap_or_default();
            Ok(Interaction::Pressed { who, whom, action, subject, trigger_id })
        }
        Some("view_submission") if payload["view"]["callback_id"] == REJECT_VIEW => {
            let metadata: Value =
                serde_json::from_str(payload["view"]["private_metadata"].as_str().unwrap_or_default())
                    .map_err(|_| "the modal's metadata is not ours")?;
            let subject =
                metadata["subject"].as_str().and_then(ChatSubject::parse).ok_or("the modal names no rerun")?;
            let comment = text(&payload["view"]["state"]["values"][COMMENT][COMMENT]["value"]).unwrap_or_default();
            let whom =
                Whom { user, channel: text(&metadata["channel"]), response_url: text(&metadata["response_url"]) };
            Ok(Interaction::Rejected { who, whom, subject, comment })
        }
        _ => Ok(Interaction::Other),
    }
}

/// `*label*` and the value on the next line, the value escaped (Slack reads `<…>` as links and mentions).
fn field(label: &str, value: &str) -> String {
    cut(&format!("*{}*\n{}", escape(label), escape(value)))
}

/// Slack's three characters to escape in text it formats.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_TEXT {
        text.to_string()
    } else {
        text.chars().take(MAX_TEXT).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(payload: &Value) -> Vec<u8> {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("payload", &payload.to_string())
            .finish()
            .into_bytes()
    }

    #[test]
    fn a_pressed_approve_button_names_the_person_the_request_and_where_to_answer() {
        let payload = json!({"type": "block_actions", "team": {"id": "T1"}, "user": {"id": "U1", "team_id": "T1"},
            "channel": {"id": "C1"}, "response_url": "https://hooks.slack.com/actions/T1/1/x", "trigger_id": "t.1",
            "actions": [{"action_id": "rerun_approve", "value": "batch:rb_1", "block_id": "batch:rb_1"}]});
        let Interaction::Pressed { who, whom, action, subject, trigger_id } = interaction(&form(&payload)).unwrap()
        else {
            panic!("a press")
        };
        assert_eq!((who.team_id.as_str(), who.user_id.as_str()), ("T1", "U1"));
        assert_eq!((action, trigger_id.as_str()), (ChatAction::Approve, "t.1"));
        assert_eq!(subject, ChatSubject::Batch("rb_1".into()));
        assert_eq!(whom.channel.as_deref(), Some("C1"));
    }

    #[test]
    fn a_submitted_reject_modal_carries_its_comment_and_request() {
        let metadata = json!({"subject": "request:rr_2", "channel": "C1", "response_url": null}).to_string();
        let payload = json!({"type": "view_submission", "team": {"id": "T1"}, "user": {"id": "U2"},
            "view": {"callback_id": "rerun_reject", "private_metadata": metadata,
                "state": {"values": {"comment": {"comment": {"type": "plain_text_input", "value": "金額が違う"}}}}}});
        let Interaction::Rejected { subject, comment, whom, .. } = interaction(&form(&payload)).unwrap() else {
            panic!("a rejection")
        };
        assert_eq!(subject, ChatSubject::Request("rr_2".into()));
        assert_eq!((comment.as_str(), whom.channel.as_deref()), ("金額が違う", Some("C1")));
    }

    #[test]
    fn a_page_opening_button_or_an_unknown_payload_asks_nothing_and_a_body_without_payload_is_refused() {
        let open = json!({"type": "block_actions", "team": {"id": "T1"}, "user": {"id": "U1"},
            "actions": [{"action_id": "rerun_open_0", "url": "https://x"}]});
        assert_eq!(interaction(&form(&open)).unwrap(), Interaction::Other);
        assert!(interaction(b"token=abc").is_err());
        assert!(interaction(&form(&json!({"type": "block_actions"}))).is_err(), "no user");
    }

    #[test]
    fn what_people_wrote_cannot_mention_a_channel_or_make_a_link() {
        assert_eq!(
            field("理由", "<!channel> <https://evil|click>"),
            "*理由*\n&lt;!channel&gt; &lt;https://evil|click&gt;"
        );
    }
}
