//! Decisions in the company chat (Slack, Teams). A submitted rerun request or bulk rerun posts a decision message to
//! its department's channel or conversation (and, where configured, to each owner who linked their Slack account);
//! every later change updates every message about it, so that none keeps offering buttons for what no longer waits.
//! Messages are written in the transaction of the change and sent after the commit by `send_posts`, which shows
//! the subject as it is at the time of sending.
mod decide;
mod links;

pub use decide::{comment_problem, on_interaction, on_teams_press};
pub use links::{all_links, end_links, link, link_company_account, links_of, unlink};

use crate::db::batches::BatchRow;
use crate::db::rerun_requests::RequestRow;
use crate::{AppState, db, slack, teams};
use chrono::{DateTime, Utc};
use contract::AppError;
use domain::batches::MemberState;
use domain::chat::{CardPlan, CardStatus, ChatPlatform, ChatSubject, DecisionCard};
use domain::checklist::Check;
use domain::notifications::RerunNews;
use domain::rerun_plan::RerunPlan;
use words::i18n::Locale;

/// A bulk rerun's message lists this many of its operations; the page has them all.
const OPERATIONS_SHOWN: usize = 20;

/// A request's news, for its messages: a new one for a request that now waits for approval, an update of the others for
/// any other news. (A bulk rerun's members are told about with the bulk rerun: `batch_submitted`, `changed`.)
pub(super) async fn request_news(
    tx: &mut db::Conn,
    state: &AppState,
    request: &RequestRow,
    news: RerunNews,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let subject = ChatSubject::Request(request.id.clone());
    if news == RerunNews::ApprovalAsked {
        announce(tx, state, &subject, (&request.department, request.requested_by), now).await
    } else {
        changed(tx, &subject, now).await
    }
}

/// A bulk rerun waits for approval: its messages go out.
pub(super) async fn batch_submitted(
    tx: &mut db::Conn,
    state: &AppState,
    batch: &BatchRow,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    announce(tx, state, &ChatSubject::Batch(batch.id.clone()), (&batch.department, batch.created_by), now).await
}

/// A new subject's messages: to its department's channel, and to each of its owners (but whoever asked) who
/// linked their Slack account, where direct messages are on.
async fn announce(
    tx: &mut db::Conn,
    state: &AppState,
    subject: &ChatSubject,
    (department, asked_by): (&str, i64),
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    if let Some(teams) = state.teams.as_ref()
        && let Some(conversation) = teams.config().conversations.get(department)
    {
        db::chat::add_post(tx, ChatPlatform::Teams, subject, conversation, now).await?;
    }
    let Some(slack) = state.slack.as_ref() else { return Ok(()) };
    let config = slack.config();
    if let Some(channel) = config.channels.get(department) {
        db::chat::add_post(tx, ChatPlatform::Slack, subject, channel, now).await?;
    }
    if config.direct_messages {
        let mut owners = db::notifications::owners_of(tx, department).await?;
        owners.retain(|owner| *owner != asked_by);
        for person in db::chat::chat_ids_of(tx, &owners, ChatPlatform::Slack).await? {
            db::chat::add_post(tx, ChatPlatform::Slack, subject, &person, now).await?;
        }
    }
    Ok(())
}

/// The subject changed (decided, counted, expired, sent back, withdrawn, dispatched…): its messages are to show
/// it as it is now.
pub(super) async fn changed(tx: &mut db::Conn, subject: &ChatSubject, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    db::chat::changed(tx, subject, now).await
}

/// `true` the first time an interaction arrives (`key`: a Slack press's signed content,
/// `domain::chat::slack_request_key`, or a Teams activity's ID); it is remembered until `believed_until` (as long
/// as its signature or token could be believed), so that a replay within that time decides nothing.
pub async fn first_time(state: &AppState, key: &str, believed_until: DateTime<Utc>) -> Result<bool, AppError> {
    let now = state.clock.now();
    let old_rule = chrono::Duration::seconds(domain::chat::SLACK_REMEMBERED_SECONDS);
    let mut tx = state.db.begin_write().await?;
    let first = db::chat::first_time(&mut tx, key, now, believed_until, now - old_rule).await?;
    tx.commit().await?;
    Ok(first)
}

/// Posts new messages and updates those whose request changed; returns how many went out. A failure is tried
/// again with backoff; one Slack will not accept (a channel the app is not in, a revoked token) ends at once.
pub async fn send_posts(state: &AppState) -> Result<usize, AppError> {
    if state.slack.is_none() && state.teams.is_none() {
        return Ok(0);
    }
    let mut sent = 0;
    for _ in 0..50 {
        let now = state.clock.now();
        let mut tx = state.db.begin_claim().await?;
        let claimed = db::chat::claim_post(&mut tx, now, now + chrono::Duration::seconds(60)).await?;
        tx.commit().await?;
        let Some(post) = claimed else { break };
        let shown = show(state, &post).await;
        let attempts = post.attempts + 1;
        let outcome = match &shown {
            Ok((channel, ts)) => db::chat::PostOutcome::Shown { shown: post.wanted, channel, ts },
            Err((why, permanent)) => match domain::dispatch::next_delay(attempts, None, 0.5).filter(|_| !permanent) {
                Some(wait) => db::chat::PostOutcome::Later { attempts, next: now + wait, error: why },
                None => db::chat::PostOutcome::Failed { attempts, error: why },
            },
        };
        let mut tx = state.db.begin_write().await?;
        db::chat::settle_post(&mut tx, post.id, outcome, now).await?;
        tx.commit().await?;
        match shown {
            Ok(_) => sent += 1,
            Err((why, _)) => {
                tracing::warn!(post = post.id, about = ?post.subject(), attempts, why, "chat message not sent")
            }
        }
    }
    Ok(sent)
}

/// Posts a message, or updates the one posted, to show its subject as it is now; returns where it is (the channel
/// or conversation, and the message's ID there), or why it is not (and whether trying again may help).
async fn show(state: &AppState, post: &db::chat::PostRow) -> Result<(String, String), (String, bool)> {
    let platform = ChatPlatform::parse(&post.platform).ok_or_else(|| (format!("no chat '{}'", post.platform), true))?;
    let message = rendered(state, &post.subject(), platform).await.map_err(|e| (e.to_string(), false))?;
    let posted = post.channel.as_deref().zip(post.message_ts.as_deref());
    match (platform, posted) {
        (ChatPlatform::Slack, posted) => {
            let slack = state.slack.as_ref().ok_or_else(|| ("Slack is no longer configured".to_string(), true))?;
            let shown = match posted {
                Some((channel, ts)) => {
                    slack.update((channel, ts), &message).await.map(|()| (channel.into(), ts.into()))
                }
                None => slack.post(&post.destination, &message).await,
            };
            shown.map_err(|problem| (problem.why, problem.permanent))
        }
        (ChatPlatform::Teams, posted) => {
            let teams = state.teams.as_ref().ok_or_else(|| ("Teams is no longer configured".to_string(), true))?;
            let shown = match posted {
                Some((conversation, id)) => {
                    teams.update((conversation, id), &message).await.map(|()| (conversation.into(), id.into()))
                }
                None => teams.post(&post.destination, &message).await.map(|id| (post.destination.clone(), id)),
            };
            shown.map_err(|problem| (problem.why, problem.permanent))
        }
    }
}

/// The message about `subject` as it is now, in its department's chat language, in the chat's own format.
pub(super) async fn rendered(
    state: &AppState,
    subject: &ChatSubject,
    platform: ChatPlatform,
) -> Result<serde_json::Value, AppError> {
    let (card, department) = card_of(state, subject).await?;
    let words = words::chat::card_in(chat_locale(state, &department), state.config.review_zone(), &card);
    Ok(match platform {
        ChatPlatform::Slack => slack::message(&words, &card.subject, card.decide_in_chat, &card.url),
        ChatPlatform::Teams => teams::card(&words, &card.subject, card.decide_in_chat, &card.url),
    })
}

/// The language of a department's messages: its chat language.
pub(super) fn chat_locale(state: &AppState, department: &str) -> Locale {
    state.config.department(department).and_then(|d| d.chat_language.parse().ok()).unwrap_or_default()
}

/// Whether a press in chat decides for these workflows: only if every one of them says so, and a chat identity can
/// meet what a decision asks of a sign-in (no second factor it cannot show): a press never weakens a decision.
pub(super) fn decided_in_chat<'a>(state: &AppState, mut workflows: impl Iterator<Item = &'a str>) -> bool {
    state.config.sign_in.chat_may_decide()
        && workflows.all(|name| state.config.workflow(name).is_some_and(|w| w.decide_in_chat))
}

/// What the messages about `subject` show, as it is now, and its department.
pub(super) async fn card_of(state: &AppState, subject: &ChatSubject) -> Result<(DecisionCard, String), AppError> {
    let mut tx = state.db.begin_read().await?;
    match subject {
        ChatSubject::Request(id) => request_card(&mut tx, state, id).await,
        ChatSubject::Batch(id) => batch_card(&mut tx, state, id).await,
    }
}

/// What a request's messages show, as it is now, and its department.
async fn request_card(tx: &mut db::Conn, state: &AppState, id: &str) -> Result<(DecisionCard, String), AppError> {
    let request = db::rerun_requests::by_id(tx, id).await?.ok_or(AppError::NotFound)?;
    let items = db::rerun_requests::items(tx, id).await?;
    let decisions = db::rerun_requests::decisions(tx, id).await?;
    let ballot = super::makers::request_ballot(tx, &request).await?;
    let required = state.config.approvals_required(&request.workflow);
    let approvals = super::decisions::tally(&decisions, &ballot, required).0;
    let operation = super::operations::view_in(tx, &request.process_id).await?;
    let verdict_of = |step: &str| {
        let steps = operation.as_ref().map(|o| o.steps.as_slice()).unwrap_or_default();
        steps.iter().find(|s| s.name == step).and_then(|s| s.latest_verdict)
    };
    let plan = request.plan()?;
    let subject = ChatSubject::Request(request.id.clone());
    let english = chat_in_english(state, &request.department);
    let step = |name: &str| state.config.step_name(&request.workflow, name, english);
    let card = DecisionCard {
        url: format!("{}{}", state.server.public_url, subject.path()),
        decide_in_chat: decided_in_chat(state, std::iter::once(request.workflow.as_str())),
        needs_strong_sign_in: !state.config.sign_in.chat_may_decide(),
        plan: CardPlan::Steps(
            plan.steps.iter().map(|s| (step(&s.name), s.idempotency_key.clone(), verdict_of(&s.name))).collect(),
        ),
        checks_confirmed: items.iter().filter(|i| i.confirmed_at.is_some()).count(),
        checks: Check::ALL.len(),
        department_name: department_in_its_chat(state, &request.department),
        approvals,
        required,
        decisions: decisions.into_iter().map(|d| (d.approver, d.decision, d.decided_at)).collect(),
        subject,
        about: request.process_id,
        workflows: vec![state.config.workflow_name(&request.workflow, english)],
        status: CardStatus::Request(request.status),
        requester: request.requester,
        reason: request.reason,
        expires_at: request.expires_at,
    };
    Ok((card, request.department))
}

/// What a bulk rerun's messages show, as it is now, and its department.
async fn batch_card(tx: &mut db::Conn, state: &AppState, id: &str) -> Result<(DecisionCard, String), AppError> {
    let batch = db::batches::by_id(tx, id).await?.ok_or(AppError::NotFound)?;
    let members = db::batches::members(tx, id).await?;
    let requested: Vec<_> = members.iter().filter(|m| m.state == MemberState::Requested).collect();
    let ballot = super::makers::batch_ballot(tx, &batch, &members).await?;
    let decisions = db::batches::decisions(tx, id).await?;
    let required = state.config.batch_approvals_required(requested.iter().map(|m| m.workflow.as_str()));
    let approvals = super::decisions::tally(&decisions, &ballot, required).0;
    let mut workflows: Vec<&str> = requested.iter().map(|m| m.workflow.as_str()).collect();
    workflows.sort();
    workflows.dedup();
    let english = chat_in_english(state, &batch.department);
    let keys = |plan: Option<&str>| -> Vec<String> {
        let plan: Option<RerunPlan> = plan.and_then(|p| serde_json::from_str(p).ok());
        plan.map_or_else(Vec::new, |p| p.steps.into_iter().map(|s| s.idempotency_key).collect())
    };
    let shown = requested
        .iter()
        .take(OPERATIONS_SHOWN)
        .map(|m| (m.process_id.clone(), state.config.workflow_name(&m.workflow, english), keys(m.plan_json.as_deref())))
        .collect::<Vec<_>>();
    let more = requested.len().saturating_sub(shown.len());
    let subject = ChatSubject::Batch(batch.id.clone());
    let status = match super::batches::facts::stopped_stage(tx, &batch).await? {
        Some(stage) => CardStatus::BatchStopped { stage },
        None => CardStatus::Batch(batch.status),
    };
    let card = DecisionCard {
        url: format!("{}{}", state.server.public_url, subject.path()),
        decide_in_chat: decided_in_chat(state, workflows.iter().copied()),
        needs_strong_sign_in: !state.config.sign_in.chat_may_decide(),
        plan: CardPlan::Operations { shown, more },
        checks_confirmed: db::batches::checks(tx, id).await?.len(),
        checks: Check::ALL.len(),
        department_name: department_in_its_chat(state, &batch.department),
        approvals,
        required,
        decisions: decisions.into_iter().map(|d| (d.approver, d.decision, d.decided_at)).collect(),
        subject,
        // Its reason is what it is about (the title).
        about: batch.reason,
        workflows: workflows.into_iter().map(|w| state.config.workflow_name(w, english)).collect(),
        status,
        requester: batch.creator,
        reason: String::new(),
        expires_at: batch.expires_at,
    };
    Ok((card, batch.department))
}

/// The department's name in the language of its chat messages.
fn department_in_its_chat(state: &AppState, code: &str) -> String {
    state.config.department_name(code, chat_in_english(state, code))
}

/// Whether the department's chat messages are in English.
fn chat_in_english(state: &AppState, department: &str) -> bool {
    state.config.department(department).is_some_and(|d| d.chat_language == "en")
}
