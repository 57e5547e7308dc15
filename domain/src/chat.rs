//! Decisions in the company chat: who a chat user is here (a link the person made), what a button asks, and
//! Slack's request signature (`v0`: HMAC-SHA256 over `v0:{timestamp}:{raw body}` with the app's signing secret,
//! hex, within five minutes), checked before the body is parsed; the comparison is constant-time.
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The chats a decision can be given in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatPlatform {
    Slack,
    /// Microsoft Teams, through a Bot Framework bot.
    Teams,
}

impl ChatPlatform {
    pub fn as_str(self) -> &'static str {
        match self {
            ChatPlatform::Slack => "slack",
            ChatPlatform::Teams => "teams",
        }
    }

    pub fn parse(text: &str) -> Option<ChatPlatform> {
        match text {
            "slack" => Some(ChatPlatform::Slack),
            "teams" => Some(ChatPlatform::Teams),
            _ => None,
        }
    }
}

/// A person in a chat workspace: the workspace (Slack's team, Teams' tenant) and their ID there (Slack's user ID,
/// the Microsoft Entra object ID).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatUser {
    pub platform: ChatPlatform,
    pub team_id: String,
    pub user_id: String,
}

/// What a button of a decision message asks. `Open` only opens the decision page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChatAction {
    Approve,
    Reject,
    Open,
}

impl ChatAction {
    /// The `action_id` of the button (what comes back when it is pressed).
    pub fn id(self) -> &'static str {
        match self {
            ChatAction::Approve => "rerun_approve",
            ChatAction::Reject => "rerun_reject",
            ChatAction::Open => "rerun_open",
        }
    }

    pub fn parse(action_id: &str) -> Option<ChatAction> {
        [ChatAction::Approve, ChatAction::Reject, ChatAction::Open].into_iter().find(|a| a.id() == action_id)
    }
}

/// Why nothing was decided for a press of a button in chat; the person hears it in their language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChatRefusal {
    /// No Rerun Gate account is linked to this chat user (or its user is disabled).
    NotLinked,
    /// The link is older than `[chat] link_days`: it ended, and the person links again after a fresh sign-in.
    LinkLapsed,
    /// The workflow's decisions are taken on the decision page (`decide_in_chat = false`).
    OnThePage,
    /// The person made the request (or took part in it): maker ≠ checker.
    Maker,
    /// The person does not own the request's department as a manager.
    NotOwner,
    AlreadyDecided,
    /// No longer waiting for a decision (decided, withdrawn, expired, sent back).
    NotWaiting,
    /// The plan no longer holds or the request's validity ran out: it went back to staff.
    SentBack,
    /// A rejection needs its reason.
    ReasonMissing,
    /// The request is not known (or not in a department the person reads).
    NotFound,
    /// Something failed on our side (logged).
    Failed,
}

/// What a decision message is about: a rerun request or a bulk rerun. A button carries it as its value
/// (`request:<id>`, `batch:<id>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChatSubject {
    Request(String),
    Batch(String),
}

impl ChatSubject {
    pub fn value(&self) -> String {
        match self {
            ChatSubject::Request(id) => format!("request:{id}"),
            ChatSubject::Batch(id) => format!("batch:{id}"),
        }
    }

    pub fn parse(value: &str) -> Option<ChatSubject> {
        match value.split_once(':') {
            Some(("request", id)) if !id.is_empty() => Some(ChatSubject::Request(id.to_string())),
            Some(("batch", id)) if !id.is_empty() => Some(ChatSubject::Batch(id.to_string())),
            _ => None,
        }
    }

    pub fn id(&self) -> &str {
        match self {
            ChatSubject::Request(id) | ChatSubject::Batch(id) => id,
        }
    }

    /// Its page (the decision page), as a path.
    pub fn path(&self) -> String {
        match self {
            ChatSubject::Request(id) => format!("/reruns/{id}"),
            ChatSubject::Batch(id) => format!("/batches/{id}"),
        }
    }
}

/// Where a decision message's subject stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CardStatus {
    Request(super::rerun_request::RerunRequestStatus),
    Batch(super::batches::BatchStatus),
    /// A bulk rerun stopped by a stage (numbered from 1) the outside systems did not prove: a manager decides on
    /// its page whether it goes on.
    BatchStopped {
        stage: u32,
    },
}

/// What a plan reruns: a request's steps (name, idempotency key, the reconciliation's latest verdict), or a bulk
/// rerun's operations (process ID, workflow, its steps' keys), the first few of them.
#[derive(Clone, Debug, PartialEq)]
pub enum CardPlan {
    Steps(Vec<(String, String, Option<super::reconciliation::Verdict>)>),
    Operations { shown: Vec<(String, String, Vec<String>)>, more: usize },
}

/// What a decision message shows: the facts, put into the chat's language when sent.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionCard {
    pub subject: ChatSubject,
    /// The process ID, or the bulk rerun's reason.
    pub about: String,
    pub workflows: Vec<String>,
    pub department_name: String,
    pub status: CardStatus,
    pub plan: CardPlan,
    pub checks_confirmed: usize,
    pub checks: usize,
    pub requester: String,
    pub reason: String,
    pub expires_at: Option<DateTime<Utc>>,
    pub approvals: u32,
    pub required: u32,
    /// Who decided, how, and when (display names).
    pub decisions: Vec<(String, super::approval::Decision, DateTime<Utc>)>,
    /// Whether pressing 承認 / 却下 decides (`decide_in_chat`), or only opens the decision page.
    pub decide_in_chat: bool,
    /// A decision asks of the sign-in what a chat cannot show (a second factor): the buttons open the page.
    pub needs_strong_sign_in: bool,
    /// The decision page's full address.
    pub url: String,
}

impl DecisionCard {
    /// Buttons only while it waits for a decision.
    pub fn waiting(&self) -> bool {
        matches!(
            self.status,
            CardStatus::Request(super::rerun_request::RerunRequestStatus::PendingApproval)
                | CardStatus::Batch(super::batches::BatchStatus::PendingApproval)
        )
    }
}

/// What a press decided, as the person is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChatDone {
    /// `about`: the process ID, or the bulk rerun's reason.
    Approved {
        about: String,
    },
    /// An approval recorded, more needed.
    Counted {
        about: String,
        approvals: u32,
        required: u32,
    },
    Rejected {
        about: String,
    },
}

/// A request signed by Slack is believed for this long around its timestamp (seconds).
pub const SLACK_TOLERANCE_SECONDS: i64 = 300;
/// How long a Slack request is remembered (its replays refused): while its signature could still be believed,
/// its timestamp up to the tolerance either side of now.
pub const SLACK_REMEMBERED_SECONDS: i64 = 2 * SLACK_TOLERANCE_SECONDS;

/// How long a chat link stands before its person confirms it again with a fresh sign-in, by default.
pub const DEFAULT_LINK_DAYS: u32 = 30;

/// When a link made at `linked_at` lapses.
pub fn link_lapses_at(linked_at: DateTime<Utc>, link_days: u32) -> DateTime<Utc> {
    linked_at + chrono::Duration::days(i64::from(link_days))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SlackSignatureError {
    #[error("X-Slack-Request-Timestamp or X-Slack-Signature is missing")]
    MissingHeader,
    #[error("X-Slack-Request-Timestamp is not a number of seconds")]
    BadTimestamp,
    #[error("X-Slack-Request-Timestamp is more than 5 minutes away from now")]
    OutsideTolerance,
    #[error("the signature does not match")]
    NoMatch,
}

fn slack_mac(secret: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    mac
}

/// The `X-Slack-Signature` value Slack sends for `body` at `timestamp` (the tests' stand-in signs with it too).
pub fn slack_signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!("v0={}", hex::encode(slack_mac(secret, &timestamp.to_string(), body).finalize().into_bytes()))
}

/// Verifies a request from Slack (its two headers as received) before anything reads the body.
/// What makes two Slack requests the same request: what was signed (the timestamp and a digest of the body),
/// never the header's spelling of the signature (its hex may come in either case).
pub fn slack_request_key(timestamp: &str, body: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    digest.update(timestamp.trim().as_bytes());
    digest.update(b":");
    digest.update(body);
    hex::encode(digest.finalize())
}

pub fn verify_slack(
    secret: &str,
    (timestamp, signature): (Option<&str>, Option<&str>),
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<(), SlackSignatureError> {
    let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
        return Err(SlackSignatureError::MissingHeader);
    };
    let seconds: i64 = timestamp.trim().parse().map_err(|_| SlackSignatureError::BadTimestamp)?;
    let sent_at = DateTime::<Utc>::from_timestamp(seconds, 0).ok_or(SlackSignatureError::BadTimestamp)?;
    if (now - sent_at).num_seconds().abs() > SLACK_TOLERANCE_SECONDS {
        return Err(SlackSignatureError::OutsideTolerance);
    }
    let tag = signature.trim().strip_prefix("v0=").and_then(|h| hex::decode(h).ok());
    let tag = tag.ok_or(SlackSignatureError::NoMatch)?;
    slack_mac(secret, timestamp.trim(), body).verify_slice(&tag).map_err(|_| SlackSignatureError::NoMatch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    // The example of Slack's documentation ("Verifying requests from Slack").
    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const TIMESTAMP: i64 = 1531420618;
    const BODY: &[u8] = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const SIGNATURE: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(seconds, 0).unwrap()
    }

    #[test]
    fn slacks_documented_example_signs_and_verifies() {
        assert_eq!(slack_signature(SECRET, TIMESTAMP, BODY), SIGNATURE);
        let ts = TIMESTAMP.to_string();
        assert_eq!(verify_slack(SECRET, (Some(&ts), Some(SIGNATURE)), BODY, at(TIMESTAMP + 300)), Ok(()));
    }

    #[test]
    fn a_tampered_body_another_secret_or_an_old_timestamp_is_refused() {
        let ts = TIMESTAMP.to_string();
        let now = at(TIMESTAMP);
        let mut tampered = BODY.to_vec();
        tampered[6] ^= 1;
        assert_eq!(
            verify_slack(SECRET, (Some(&ts), Some(SIGNATURE)), &tampered, now),
            Err(SlackSignatureError::NoMatch)
        );
        assert_eq!(verify_slack("another", (Some(&ts), Some(SIGNATURE)), BODY, now), Err(SlackSignatureError::NoMatch));
        assert_eq!(
            verify_slack(SECRET, (Some(&ts), Some(SIGNATURE)), BODY, at(TIMESTAMP + 301)),
            Err(SlackSignatureError::OutsideTolerance)
        );
        assert_eq!(
            verify_slack(SECRET, (Some(&ts), Some(SIGNATURE)), BODY, at(TIMESTAMP - 301)),
            Err(SlackSignatureError::OutsideTolerance)
        );
        assert_eq!(verify_slack(SECRET, (None, Some(SIGNATURE)), BODY, now), Err(SlackSignatureError::MissingHeader));
        assert_eq!(
            verify_slack(SECRET, (Some("soon"), Some(SIGNATURE)), BODY, now),
            Err(SlackSignatureError::BadTimestamp)
        );
        assert_eq!(verify_slack(SECRET, (Some(&ts), Some("v0=zz")), BODY, now), Err(SlackSignatureError::NoMatch));
    }

    #[test]
    fn a_buttons_value_names_a_request_or_a_bulk_rerun() {
        for subject in [ChatSubject::Request("rr_1".into()), ChatSubject::Batch("rb_2".into())] {
            assert_eq!(ChatSubject::parse(&subject.value()), Some(subject));
        }
        assert_eq!(ChatSubject::parse("rr_1"), None);
        assert_eq!(ChatSubject::parse("request:"), None);
    }

    #[test]
    fn a_buttons_action_id_names_what_it_asks() {
        for action in [ChatAction::Approve, ChatAction::Reject, ChatAction::Open] {
            assert_eq!(ChatAction::parse(action.id()), Some(action));
        }
        assert_eq!(ChatAction::parse("approve"), None);
    }
}
