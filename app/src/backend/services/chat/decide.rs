//! A press of a button in chat, after Slack's signature was verified and Slack was answered: who pressed it (the
//! account they linked), then the one decision path of the pages (`approvals::decide`) with the chat as the
//! proof of who they are, for a workflow whose organisation chose so (`decide_in_chat`). Whatever happens, the
//! person is told in their language; nothing is decided for someone unlinked, a maker or a non-owner.
use super::super::Caller;
use crate::backend::slack::{self, Interaction, Whom};
use crate::backend::{AppState, auth, db};
use crate::contract::AppError;
use crate::domain::approval::{Decision, Refusal, may_decide};
use crate::domain::chat::{ChatAction, ChatDone, ChatRefusal, ChatUser};
use crate::domain::conflict::Conflict;
use crate::domain::identity::{AuthMethod, Authentication};
use crate::domain::rerun_request::RerunRequestStatus;
use crate::i18n::Locale;
use crate::words::chat::{done_in, modal_in, refusal_in};

/// Handles an interaction Slack was already answered for.
pub async fn on_interaction(state: &AppState, interaction: Interaction) {
    let Some(slack) = state.slack.as_ref() else { return };
    let (who, whom, request_id) = match &interaction {
        Interaction::Pressed { who, whom, request_id, .. } | Interaction::Rejected { who, whom, request_id, .. } => {
            (who, whom, request_id)
        }
        Interaction::Other => return,
    };
    let said = match answer(state, who, whom, request_id, &interaction).await {
        Ok((locale, Some(done))) => done_in(locale, &done),
        Ok((_, None)) => return, // the reject modal is open
        Err((locale, refusal)) => {
            let url = match refusal {
                ChatRefusal::NotLinked => format!("{}/account", state.server.public_url),
                _ => format!("{}/reruns/{request_id}", state.server.public_url),
            };
            tracing::info!(team = who.team_id, user = who.user_id, request_id, ?refusal, "nothing decided in chat");
            refusal_in(locale, refusal, &url)
        }
    };
    if let Err(problem) = slack.tell(whom, &said).await {
        tracing::warn!(why = problem.why, "could not answer in chat");
    }
}

type Refused = (Locale, ChatRefusal);

async fn answer(
    state: &AppState,
    who: &ChatUser,
    whom: &Whom,
    request_id: &str,
    interaction: &Interaction,
) -> Result<(Locale, Option<ChatDone>), Refused> {
    let fallback = request_locale(state, request_id).await;
    let caller = caller_of(state, who).await.map_err(|refusal| (fallback, refusal))?;
    let locale = caller.locale;
    let refused = |refusal| (locale, refusal);
    let request = {
        let mut tx = state.db.begin_read().await.map_err(|_| refused(ChatRefusal::Failed))?;
        db::rerun_requests::by_id(&mut tx, request_id).await.map_err(|_| refused(ChatRefusal::Failed))?
    };
    let request = request.filter(|r| caller.may_read(&r.department)).ok_or(refused(ChatRefusal::NotFound))?;
    if !state.config.workflow(&request.workflow).is_some_and(|w| w.decide_in_chat) {
        return Err(refused(ChatRefusal::OnThePage));
    }
    match interaction {
        Interaction::Pressed { action: ChatAction::Approve, .. } => {
            let decided = super::super::approvals::decide(state, &caller, request_id, Decision::Approve, "").await;
            if let Err(error) = decided {
                return Err(refused(refusal_of(state, &caller, request_id, error).await));
            }
            done_approving(state, request_id).await.map(|done| (locale, Some(done))).map_err(|_| refused(ChatRefusal::Failed))
        }
        Interaction::Pressed { action: ChatAction::Reject, trigger_id, .. } => {
            // Refused before the modal opens, not after the person wrote their reason.
            if let Some(refusal) = rule_refusal(state, &caller, request_id).await {
                return Err(refused(refusal));
            }
            if request.status != RerunRequestStatus::PendingApproval {
                return Err(refused(ChatRefusal::NotWaiting));
            }
            let Some(slack) = state.slack.as_ref() else { return Err(refused(ChatRefusal::Failed)) };
            let view = slack::reject_modal(&modal_in(locale, &request.process_id), request_id, whom);
            slack.open_reject(trigger_id, &view).await.map_err(|problem| {
                tracing::warn!(why = problem.why, "the reject modal did not open");
                refused(ChatRefusal::Failed)
            })?;
            Ok((locale, None))
        }
        Interaction::Rejected { comment, .. } => {
            let decided = super::super::approvals::decide(state, &caller, request_id, Decision::Reject, comment).await;
            if let Err(error) = decided {
                return Err(refused(refusal_of(state, &caller, request_id, error).await));
            }
            Ok((locale, Some(ChatDone::Rejected { process_id: request.process_id })))
        }
        _ => Err(refused(ChatRefusal::NotFound)),
    }
}

/// The linked, enabled user as a caller whose proof of identity is the chat, just now.
async fn caller_of(state: &AppState, who: &ChatUser) -> Result<Caller, ChatRefusal> {
    let failed = |_| ChatRefusal::Failed;
    let mut tx = state.db.begin_read().await.map_err(failed)?;
    let user_id = db::chat::user_of(&mut tx, who).await.map_err(failed)?.ok_or(ChatRefusal::NotLinked)?;
    let row = db::users::by_id(&mut tx, user_id).await.map_err(failed)?.ok_or(ChatRefusal::NotLinked)?;
    let session = auth::load_session_user(&mut tx, row).await.map_err(failed)?;
    let locale = session.user.language.parse().unwrap_or_default();
    let authentication = Some(Authentication { at: state.clock.now(), method: AuthMethod::Chat(who.clone()) });
    Ok(Caller { session, request_id: Some(format!("slack-{}", uuid::Uuid::new_v4())), locale, authentication })
}

/// Why the approval rule refuses this caller now, if it does (read to explain; `decide` applies it).
async fn rule_refusal(state: &AppState, caller: &Caller, request_id: &str) -> Option<ChatRefusal> {
    let mut tx = state.db.begin_read().await.ok()?;
    let request = db::rerun_requests::by_id(&mut tx, request_id).await.ok()??;
    let ballot = super::super::makers::request_ballot(&mut tx, &request).await.ok()?;
    may_decide(&caller.person(), &ballot).err().map(|refusal| match refusal {
        Refusal::NotOwner(_) => ChatRefusal::NotOwner,
        Refusal::Maker(_) => ChatRefusal::Maker,
        Refusal::AlreadyDecided => ChatRefusal::AlreadyDecided,
    })
}

/// A refused decision, in the chat's words (a refusal by the approval rule says which part of it).
async fn refusal_of(state: &AppState, caller: &Caller, request_id: &str, error: AppError) -> ChatRefusal {
    match error {
        AppError::NotFound => ChatRefusal::NotFound,
        AppError::Validation(_) => ChatRefusal::ReasonMissing,
        AppError::Conflict { problem: Conflict::AlreadyDecided, .. } => ChatRefusal::AlreadyDecided,
        AppError::Conflict { problem: Conflict::Expired | Conflict::PlanChanged, .. } => ChatRefusal::SentBack,
        AppError::Conflict { .. } => ChatRefusal::NotWaiting,
        AppError::Forbidden => rule_refusal(state, caller, request_id).await.unwrap_or(ChatRefusal::NotOwner),
        error => {
            tracing::error!(%error, "a decision in chat failed");
            ChatRefusal::Failed
        }
    }
}

/// An approval recorded: whether it was the last one needed.
async fn done_approving(state: &AppState, request_id: &str) -> Result<ChatDone, AppError> {
    let mut tx = state.db.begin_read().await?;
    let request = db::rerun_requests::by_id(&mut tx, request_id).await?.ok_or(AppError::NotFound)?;
    let process_id = request.process_id.clone();
    if request.status != RerunRequestStatus::PendingApproval {
        return Ok(ChatDone::Approved { process_id });
    }
    let decisions = db::rerun_requests::decisions(&mut tx, request_id).await?;
    let ballot = super::super::makers::request_ballot(&mut tx, &request).await?;
    let required = state.config.approvals_required(&request.workflow);
    let approvals = super::super::decisions::tally(&decisions, &ballot, required).0;
    Ok(ChatDone::Counted { process_id, approvals, required })
}

/// The language to answer someone unlinked in: the request's department's chat language.
async fn request_locale(state: &AppState, request_id: &str) -> Locale {
    let Ok(mut tx) = state.db.begin_read().await else { return Locale::default() };
    let department = match db::rerun_requests::by_id(&mut tx, request_id).await {
        Ok(Some(request)) => request.department,
        _ => return Locale::default(),
    };
    state.config.department(&department).and_then(|d| d.chat_language.parse().ok()).unwrap_or_default()
}

/// A reject modal's comment that cannot be a reason: what to show under it, in the person's language (the modal
/// stays open). Checked while Slack waits for the answer.
pub async fn comment_problem(state: &AppState, who: &ChatUser, comment: &str) -> Option<String> {
    crate::domain::holds::reason(comment).err()?;
    let locale = caller_of(state, who).await.map_or_else(|_| Locale::default(), |caller| caller.locale);
    Some(refusal_in(locale, ChatRefusal::ReasonMissing, ""))
}
