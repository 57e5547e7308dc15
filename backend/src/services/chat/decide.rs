//! A press of a button in chat, once the chat's signature was verified: who pressed it (the account linked to
//! them), then the one decision path of the pages (`approvals::decide`, `batches::decide`) with the chat as the
//! proof of who they are, for workflows whose organisation chose so (`decide_in_chat`). Nothing is decided for
//! someone unlinked, a maker or a non-owner; they are told why, in their language.
use super::super::Caller;
use super::card_of;
use crate::slack::{self, Interaction};
use crate::{AppState, db, teams};
use contract::AppError;
use domain::approval::{Decision, Refusal, may_decide};
use domain::batches::MemberState;
use domain::chat::{ChatDone, ChatRefusal, ChatSubject, ChatUser};
use domain::conflict::Conflict;
use domain::identity::{AuthMethod, Authentication};
use words::chat::{done_in, modal_in, refusal_in};
use words::i18n::Locale;

/// What a press asks.
enum Asked<'a> {
    Approve,
    Reject(&'a str),
    /// 却下 pressed where the reason is asked next (Slack's modal): may this person reject it?
    MayReject,
}

/// What a press did.
enum Pressed {
    Done(ChatDone),
    /// The person may reject it: the chat asks for the reason (`about`: what is rejected).
    AskReason {
        about: String,
    },
}

type Refused = (Locale, ChatRefusal);

/// One press, through the decision path; the person's language with either answer.
async fn press(
    state: &AppState,
    who: &ChatUser,
    subject: &ChatSubject,
    asked: Asked<'_>,
) -> Result<(Locale, Pressed), Refused> {
    let card = card_of(state, subject).await;
    let fallback =
        card.as_ref().map_or_else(|_| Locale::default(), |(_, department)| super::chat_locale(state, department));
    let caller = caller_of(state, who).await.map_err(|refusal| (fallback, refusal))?;
    let locale = caller.locale;
    let refused = |refusal| (locale, refusal);
    let (card, _) =
        card.ok().filter(|(_, department)| caller.may_read(department)).ok_or(refused(ChatRefusal::NotFound))?;
    if !card.decide_in_chat {
        return Err(refused(ChatRefusal::OnThePage));
    }
    match asked {
        Asked::Approve => {
            decide(state, &caller, subject, Decision::Approve, "").await.map_err(refused)?;
            let (now, _) = card_of(state, subject).await.map_err(|_| refused(ChatRefusal::Failed))?;
            let done = if now.waiting() {
                ChatDone::Counted { about: now.about, approvals: now.approvals, required: now.required }
            } else {
                ChatDone::Approved { about: now.about }
            };
            Ok((locale, Pressed::Done(done)))
        }
        Asked::Reject(comment) => {
            decide(state, &caller, subject, Decision::Reject, comment).await.map_err(refused)?;
            Ok((locale, Pressed::Done(ChatDone::Rejected { about: card.about })))
        }
        Asked::MayReject => {
            if let Some(refusal) = rule_refusal(state, &caller, subject).await {
                return Err(refused(refusal));
            }
            if !card.waiting() {
                return Err(refused(ChatRefusal::NotWaiting));
            }
            Ok((locale, Pressed::AskReason { about: card.about }))
        }
    }
}

/// Handles an interaction Slack was already answered for: the decision, or the reject modal; the person is told
/// the outcome in a message only they see.
pub async fn on_interaction(state: &AppState, interaction: Interaction) {
    let Some(slack) = state.slack.as_ref() else { return };
    let (who, whom, subject, asked) = match &interaction {
        Interaction::Pressed { who, whom, subject, action, .. } => {
            let asked = match action {
                domain::chat::ChatAction::Approve => Asked::Approve,
                domain::chat::ChatAction::Reject => Asked::MayReject,
                domain::chat::ChatAction::Open => return,
            };
            (who, whom, subject, asked)
        }
        Interaction::Rejected { who, whom, subject, comment } => (who, whom, subject, Asked::Reject(comment)),
        Interaction::Other => return,
    };
    let said = match press(state, who, subject, asked).await {
        Ok((locale, Pressed::Done(done))) => done_in(locale, &done),
        Ok((locale, Pressed::AskReason { about })) => {
            let Interaction::Pressed { trigger_id, .. } = &interaction else { return };
            let view = slack::reject_modal(&modal_in(locale, &about), subject, whom);
            match slack.open_reject(trigger_id, &view).await {
                Ok(()) => return,
                Err(problem) => {
                    tracing::warn!(why = problem.why, "the reject modal did not open");
                    refusal_in(locale, ChatRefusal::Failed, "")
                }
            }
        }
        Err(refused) => refusal_words(state, who, subject, refused),
    };
    if let Err(problem) = slack.tell(whom, &said).await {
        tracing::warn!(why = problem.why, "could not answer in Slack");
    }
}

/// Answers a press in Teams (Teams waits for the answer): the card as it is now, which Teams shows everyone, or
/// why nothing was decided, to the person.
pub async fn on_teams_press(state: &AppState, pressed: teams::Execute) -> serde_json::Value {
    let asked = match pressed.verb.as_str() {
        teams::APPROVE => Asked::Approve,
        teams::REJECT => Asked::Reject(&pressed.comment),
        _ => return teams::message_answer(""),
    };
    match press(state, &pressed.who, &pressed.subject, asked).await {
        Ok(_) => match super::rendered(state, &pressed.subject, domain::chat::ChatPlatform::Teams).await {
            Ok(card) => teams::card_answer(&card),
            Err(error) => {
                tracing::error!(%error, "the decided card could not be drawn");
                teams::message_answer("")
            }
        },
        Err(refused) => teams::message_answer(&refusal_words(state, &pressed.who, &pressed.subject, refused)),
    }
}

/// Why nothing was decided, with the page that helps (the account page to link, else the decision page).
fn refusal_words(state: &AppState, who: &ChatUser, subject: &ChatSubject, (locale, refusal): Refused) -> String {
    let page = match refusal {
        ChatRefusal::NotLinked | ChatRefusal::LinkLapsed => "/account".to_string(),
        _ => subject.path(),
    };
    tracing::info!(platform = ?who.platform, team = who.team_id, user = who.user_id, ?subject, ?refusal,
        "nothing decided in chat");
    refusal_in(locale, refusal, &format!("{}{page}", state.server.public_url))
}

/// The decision, through the path the pages take; its refusal in the chat's words.
async fn decide(
    state: &AppState,
    caller: &Caller,
    subject: &ChatSubject,
    decision: Decision,
    comment: &str,
) -> Result<(), ChatRefusal> {
    let decided = match subject {
        ChatSubject::Request(id) => super::super::approvals::decide(state, caller, id, decision, comment).await,
        ChatSubject::Batch(id) => {
            super::super::batches::decide(state, caller, id, decision == Decision::Approve, comment).await
        }
    };
    let Err(error) = decided else { return Ok(()) };
    Err(match error {
        AppError::NotFound => ChatRefusal::NotFound,
        // Disabled, deprovisioned or signed out everywhere since the chat's caller was read.
        AppError::Unauthorized => ChatRefusal::NotLinked,
        AppError::Validation(_) => ChatRefusal::ReasonMissing,
        AppError::Conflict { problem: Conflict::AlreadyDecided, .. } => ChatRefusal::AlreadyDecided,
        AppError::Conflict { problem: Conflict::Expired | Conflict::PlanChanged, .. } => ChatRefusal::SentBack,
        AppError::Conflict { .. } => ChatRefusal::NotWaiting,
        // Which part of the approval rule refused it.
        AppError::Forbidden => rule_refusal(state, caller, subject).await.unwrap_or(ChatRefusal::NotOwner),
        error => {
            tracing::error!(%error, "a decision in chat failed");
            ChatRefusal::Failed
        }
    })
}

/// The linked, enabled user as a caller whose proof of identity is the chat, just now.
async fn caller_of(state: &AppState, who: &ChatUser) -> Result<Caller, ChatRefusal> {
    let failed = |_| ChatRefusal::Failed;
    let mut tx = state.db.begin_read().await.map_err(failed)?;
    let (user_id, linked_at) = db::chat::user_of(&mut tx, who).await.map_err(failed)?.ok_or(ChatRefusal::NotLinked)?;
    if state.clock.now() >= domain::chat::link_lapses_at(linked_at, state.config.chat_link_days) {
        drop(tx);
        super::links::end_lapsed(state, user_id, who.platform).await.map_err(|_| ChatRefusal::Failed)?;
        return Err(ChatRefusal::LinkLapsed);
    }
    let row = db::users::by_id(&mut tx, user_id).await.map_err(failed)?.ok_or(ChatRefusal::NotLinked)?;
    let session = super::super::session_users::load_session_user(&mut tx, row).await.map_err(failed)?;
    let locale = session.user.language.parse().unwrap_or_default();
    let authentication = Some(Authentication { at: state.clock.now(), method: AuthMethod::Chat(who.clone()) });
    let request_id = Some(format!("{}-{}", who.platform.as_str(), uuid::Uuid::new_v4()));
    Ok(Caller { session, request_id, locale, authentication })
}

/// Why the approval rule refuses this caller now, if it does: read to explain, as the decision applies it.
async fn rule_refusal(state: &AppState, caller: &Caller, subject: &ChatSubject) -> Option<ChatRefusal> {
    let mut tx = state.db.begin_read().await.ok()?;
    let ballot = match subject {
        ChatSubject::Request(id) => {
            let request = db::rerun_requests::by_id(&mut tx, id).await.ok()??;
            super::super::makers::request_ballot(&mut tx, &request).await.ok()?
        }
        ChatSubject::Batch(id) => {
            let batch = db::batches::by_id(&mut tx, id).await.ok()??;
            let members = db::batches::members(&mut tx, id).await.ok()?;
            let requested: Vec<_> = members.into_iter().filter(|m| m.state == MemberState::Requested).collect();
            super::super::makers::batch_ballot(&mut tx, &batch, &requested).await.ok()?
        }
    };
    may_decide(&caller.person(), &ballot).err().map(|refusal| match refusal {
        Refusal::NotOwner(_) => ChatRefusal::NotOwner,
        Refusal::Maker(_) => ChatRefusal::Maker,
        Refusal::AlreadyDecided => ChatRefusal::AlreadyDecided,
    })
}

/// A reject modal's comment that cannot be a reason: what to show under it, in the person's language (the modal
/// stays open). Checked while Slack waits for the answer.
pub async fn comment_problem(state: &AppState, who: &ChatUser, comment: &str) -> Option<String> {
    domain::holds::reason(comment).err()?;
    let locale = caller_of(state, who).await.map_or_else(|_| Locale::default(), |caller| caller.locale);
    Some(refusal_in(locale, ChatRefusal::ReasonMissing, ""))
}
