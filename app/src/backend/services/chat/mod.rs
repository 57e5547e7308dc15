//! Decisions in the company chat (Slack). A submitted rerun request posts a decision message to its
//! department's channel (and, where configured, to each owner who linked their Slack account); every later change
//! of the request updates every message about it, so that none keeps offering buttons for a request that is no
//! longer waiting. Messages are written in the transaction of the change and sent after the commit by
//! `send_posts`, which shows the request as it is at the time of sending.
mod decide;
mod links;

pub use decide::{comment_problem, on_interaction};
pub use links::{all_links, end_links, link, links_of, unlink};

use crate::backend::db::rerun_requests::RequestRow;
use crate::backend::slack::{self, SlackProblem};
use crate::backend::{AppState, db};
use crate::contract::AppError;
use crate::domain::chat::{ChatPlatform, RequestCard};
use crate::domain::checklist::Check;
use crate::domain::notifications::RerunNews;
use crate::i18n::Locale;
use chrono::{DateTime, Utc};

/// A request's news, for its messages: a new one for a request that now waits for approval, an update of the
/// others for any other news.
pub(super) async fn request_news(
    tx: &mut db::Conn,
    state: &AppState,
    request: &RequestRow,
    news: RerunNews,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let Some(slack) = state.slack.as_ref() else { return Ok(()) };
    if news != RerunNews::ApprovalAsked {
        return db::chat::request_changed(tx, &request.id, now).await;
    }
    let config = slack.config();
    if let Some(channel) = config.channels.get(&request.department) {
        db::chat::add_post(tx, ChatPlatform::Slack, &request.id, channel, now).await?;
    }
    if config.direct_messages {
        let mut owners = db::notifications::owners_of(tx, &request.department).await?;
        owners.retain(|owner| *owner != request.requested_by);
        for person in db::chat::chat_ids_of(tx, &owners, ChatPlatform::Slack).await? {
            db::chat::add_post(tx, ChatPlatform::Slack, &request.id, &person, now).await?;
        }
    }
    Ok(())
}

/// `true` the first time a signed interaction (its signature) arrives; it is remembered as long as a signature
/// is believed.
pub async fn first_time(state: &AppState, signature: &str) -> Result<bool, AppError> {
    let now = state.clock.now();
    let believed = chrono::Duration::seconds(2 * crate::domain::chat::SLACK_TOLERANCE_SECONDS);
    let mut tx = state.db.begin_write().await?;
    let first = db::chat::first_time(&mut tx, signature, now, now - believed).await?;
    tx.commit().await?;
    Ok(first)
}

/// A change that notifies nobody (an approval counted, more needed): the messages still show it.
pub(super) async fn request_changed(tx: &mut db::Conn, request_id: &str, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    db::chat::request_changed(tx, request_id, now).await
}

/// Posts new messages and updates those whose request changed; returns how many went out. A failure is tried
/// again with backoff; one Slack will not accept (a channel the app is not in, a revoked token) ends at once.
pub async fn send_posts(state: &AppState) -> Result<usize, AppError> {
    let Some(slack) = state.slack.as_ref() else { return Ok(0) };
    let mut sent = 0;
    for _ in 0..50 {
        let now = state.clock.now();
        let mut tx = state.db.begin_write().await?;
        let claimed = db::chat::claim_post(&mut tx, now, now + chrono::Duration::seconds(60)).await?;
        tx.commit().await?;
        let Some(post) = claimed else { break };
        let message = {
            let mut tx = state.db.begin_read().await?;
            let card = card(&mut tx, state, &post.request_id).await?;
            let locale = chat_locale(state, &card);
            let words = crate::words::chat::card_in(locale, state.config.review_zone(), &card);
            slack::message(&words, &card.request_id, card.decide_in_chat, &card.url)
        };
        let shown: Result<(String, String), SlackProblem> = match (&post.channel, &post.message_ts) {
            (Some(channel), Some(ts)) => slack.update((channel, ts), &message).await.map(|()| (channel.clone(), ts.clone())),
            _ => slack.post(&post.destination, &message).await,
        };
        let attempts = post.attempts + 1;
        let outcome = match &shown {
            Ok((channel, ts)) => db::chat::PostOutcome::Shown { shown: post.wanted, channel, ts },
            Err(problem) => match crate::domain::dispatch::next_delay(attempts, None, 0.5).filter(|_| !problem.permanent) {
                Some(wait) => db::chat::PostOutcome::Later { attempts, next: now + wait, error: &problem.why },
                None => db::chat::PostOutcome::Failed { attempts, error: &problem.why },
            },
        };
        let mut tx = state.db.begin_write().await?;
        db::chat::settle_post(&mut tx, post.id, outcome, now).await?;
        tx.commit().await?;
        match shown {
            Ok(_) => sent += 1,
            Err(problem) => {
                tracing::warn!(post = post.id, request = post.request_id, attempts, why = problem.why, "chat message not sent")
            }
        }
    }
    Ok(sent)
}

/// The language of a request's messages: its department's chat language.
fn chat_locale(state: &AppState, card: &RequestCard) -> Locale {
    let department = state.config.workflow(&card.workflow).map(|w| w.department.as_str()).unwrap_or_default();
    state.config.department(department).and_then(|d| d.chat_language.parse().ok()).unwrap_or_default()
}

/// What a request's messages show, as it is now.
async fn card(tx: &mut db::Conn, state: &AppState, request_id: &str) -> Result<RequestCard, AppError> {
    let request = db::rerun_requests::by_id(tx, request_id).await?.ok_or(AppError::NotFound)?;
    let items = db::rerun_requests::items(tx, request_id).await?;
    let decisions = db::rerun_requests::decisions(tx, request_id).await?;
    let ballot = super::makers::request_ballot(tx, &request).await?;
    let required = state.config.approvals_required(&request.workflow);
    let approvals = super::decisions::tally(&decisions, &ballot, required).0;
    let operation = super::operations::view_in(tx, &request.process_id).await?;
    let verdict_of = |step: &str| {
        let steps = operation.as_ref().map(|o| o.steps.as_slice()).unwrap_or_default();
        steps.iter().find(|s| s.name == step).and_then(|s| s.latest_verdict)
    };
    let plan = request.plan()?;
    Ok(RequestCard {
        url: format!("{}/reruns/{}", state.server.public_url, request.id),
        decide_in_chat: state.config.workflow(&request.workflow).is_some_and(|w| w.decide_in_chat),
        steps: plan.steps.iter().map(|s| (s.name.clone(), s.idempotency_key.clone(), verdict_of(&s.name))).collect(),
        checks_confirmed: items.iter().filter(|i| i.confirmed_at.is_some()).count(),
        checks: Check::ALL.len(),
        department_name: state.config.department_name(&request.department),
        approvals,
        required,
        decisions: decisions.into_iter().map(|d| (d.approver, d.decision, d.decided_at)).collect(),
        request_id: request.id,
        process_id: request.process_id,
        workflow: request.workflow,
        status: request.status,
        requester: request.requester,
        reason: request.reason,
        expires_at: request.expires_at,
    })
}
