//! A decision message in the company chat, in the chat's language: what it says about a rerun request or a bulk
//! rerun before and after the decision, the reject modal, and what a person is told after pressing a button.
use super::{batch_status_in, local_time_in, rerun_status_in, verdict_label_in};
use crate::i18n::{Locale, td_string};
use chrono_tz::Tz;
use domain::approval::Decision;
use domain::chat::{CardPlan, CardStatus, ChatDone, ChatRefusal, DecisionCard};

/// A decision message's sentences; the chat's own format is built from them.
pub struct CardWords {
    pub title: String,
    /// Label and value, side by side.
    pub fields: Vec<(String, String)>,
    /// Label and text (none for a bulk rerun, whose reason is its title).
    pub reason: Option<(String, String)>,
    /// Heading, then one line per step.
    pub steps: (String, Vec<String>),
    /// Checklist and approvals, in one line.
    pub progress: String,
    /// What happened, once the request no longer waits: its status, then every decision.
    pub outcome: Vec<String>,
    /// The buttons' words, while it waits: approve, reject, open.
    pub buttons: [String; 3],
    /// Said under the buttons when they only open the page.
    pub on_page: Option<String>,
    /// The approve button's confirmation: title, text, yes, no.
    pub confirm: [String; 4],
    /// The label of the reason asked for a rejection (Teams shows the input on the card).
    pub reason_input: String,
}

pub fn card_in(l: Locale, zone: Tz, card: &DecisionCard) -> CardWords {
    let about = card.about.as_str();
    let (title, status, confirm) = match card.status {
        CardStatus::Request(status) => (
            if card.waiting() {
                td_string!(l, rerun.chat.title, process_id = about).to_string()
            } else {
                td_string!(l, rerun.chat.title_decided, process_id = about).to_string()
            },
            rerun_status_in(l, status).to_string(),
            td_string!(l, rerun.chat.confirm_text, process_id = about).to_string(),
        ),
        CardStatus::Batch(status) => (
            if card.waiting() {
                td_string!(l, rerun.chat.batch_title, about = about).to_string()
            } else {
                td_string!(l, rerun.chat.batch_title_decided, about = about).to_string()
            },
            batch_status_in(l, status).to_string(),
            td_string!(l, rerun.chat.batch_confirm_text, about = about).to_string(),
        ),
        CardStatus::BatchStopped { stage } => (
            td_string!(l, rerun.chat.batch_title_decided, about = about).to_string(),
            td_string!(l, rerun.chat.batch_stopped, stage = stage).to_string(),
            td_string!(l, rerun.chat.batch_confirm_text, about = about).to_string(),
        ),
    };
    let mut fields = vec![
        (td_string!(l, rerun.chat.workflow).to_string(), card.workflows.join(td_string!(l, common.list))),
        (td_string!(l, rerun.chat.department).to_string(), card.department_name.clone()),
        (td_string!(l, rerun.chat.requester).to_string(), card.requester.clone()),
    ];
    if let Some(at) = card.expires_at.filter(|_| card.waiting()) {
        fields.push((td_string!(l, rerun.chat.deadline).to_string(), local_time_in(zone, at)));
    }
    let progress = [
        td_string!(l, rerun.chat.checklist, done = card.checks_confirmed, total = card.checks).to_string(),
        td_string!(l, rerun.chat.approvals, approvals = card.approvals, required = card.required).to_string(),
    ]
    .join(td_string!(l, common.dot));
    CardWords {
        title,
        fields,
        reason: (!card.reason.is_empty()).then(|| (td_string!(l, rerun.chat.reason).to_string(), card.reason.clone())),
        steps: plan_in(l, &card.plan),
        progress,
        outcome: outcome_in(l, zone, card, &status),
        buttons: [
            td_string!(l, rerun.chat.approve).to_string(),
            td_string!(l, rerun.chat.reject).to_string(),
            td_string!(l, rerun.chat.open).to_string(),
        ],
        on_page: match (card.decide_in_chat, card.needs_strong_sign_in) {
            (true, _) => None,
            (false, true) => Some(td_string!(l, rerun.chat.on_page_strong).to_string()),
            (false, false) => Some(td_string!(l, rerun.chat.on_page).to_string()),
        },
        confirm: [
            td_string!(l, rerun.chat.confirm_title).to_string(),
            confirm,
            td_string!(l, rerun.chat.confirm_yes).to_string(),
            td_string!(l, rerun.chat.cancel).to_string(),
        ],
        reason_input: td_string!(l, rerun.chat.modal_label, about = about).to_string(),
    }
}

/// What the rerun sends: a request's steps with their keys and verdicts, or a bulk rerun's first operations.
fn plan_in(l: Locale, plan: &CardPlan) -> (String, Vec<String>) {
    match plan {
        CardPlan::Steps(steps) => (
            td_string!(l, rerun.chat.steps).to_string(),
            steps
                .iter()
                .map(|(name, key, verdict)| format!("• {name} — {key} — {}", verdict_label_in(l, *verdict)))
                .collect(),
        ),
        CardPlan::Operations { shown, more } => {
            let mut lines: Vec<String> = shown
                .iter()
                .map(|(process_id, workflow, keys)| format!("• {process_id} — {workflow} — {}", keys.join(", ")))
                .collect();
            if *more > 0 {
                lines.push(td_string!(l, rerun.chat.more, count = *more).to_string());
            }
            (td_string!(l, rerun.chat.operations).to_string(), lines)
        }
    }
}

/// What happened, once the card no longer waits: its status, then every decision.
fn outcome_in(l: Locale, zone: Tz, card: &DecisionCard, status: &str) -> Vec<String> {
    let mut outcome = Vec::new();
    if !card.waiting() {
        outcome.push(td_string!(l, rerun.chat.now, status = status).to_string());
    }
    for (who, decision, at) in &card.decisions {
        let decision = match decision {
            Decision::Approve => td_string!(l, rerun.chat.approved_word),
            Decision::Reject => td_string!(l, rerun.chat.rejected_word),
        };
        let at = local_time_in(zone, *at);
        outcome.push(td_string!(l, rerun.chat.decision, decision = decision, who = who.as_str(), at = at).to_string());
    }
    outcome
}

/// The reject modal: title, the comment's label, submit, cancel.
pub fn modal_in(l: Locale, about: &str) -> [String; 4] {
    [
        td_string!(l, rerun.chat.modal_title).to_string(),
        td_string!(l, rerun.chat.modal_label, about = about).to_string(),
        td_string!(l, rerun.chat.modal_submit).to_string(),
        td_string!(l, rerun.chat.cancel).to_string(),
    ]
}

/// Why nothing was decided; `url` is the page that helps (the account page to link, the decision page).
pub fn refusal_in(l: Locale, refusal: ChatRefusal, url: &str) -> String {
    match refusal {
        ChatRefusal::NotLinked => td_string!(l, rerun.chat.refused.not_linked, url = url).to_string(),
        ChatRefusal::LinkLapsed => td_string!(l, rerun.chat.refused.link_lapsed, url = url).to_string(),
        ChatRefusal::OnThePage => td_string!(l, rerun.chat.refused.on_the_page, url = url).to_string(),
        ChatRefusal::Maker => td_string!(l, rerun.chat.refused.maker).to_string(),
        ChatRefusal::NotOwner => td_string!(l, rerun.chat.refused.not_owner).to_string(),
        ChatRefusal::AlreadyDecided => td_string!(l, rerun.chat.refused.already_decided).to_string(),
        ChatRefusal::NotWaiting => td_string!(l, rerun.chat.refused.not_waiting).to_string(),
        ChatRefusal::SentBack => td_string!(l, rerun.chat.refused.sent_back).to_string(),
        ChatRefusal::ReasonMissing => td_string!(l, rerun.chat.refused.reason_missing).to_string(),
        ChatRefusal::NotFound => td_string!(l, rerun.chat.refused.not_found).to_string(),
        ChatRefusal::Failed => td_string!(l, rerun.chat.refused.failed).to_string(),
    }
}

/// What a press decided.
pub fn done_in(l: Locale, done: &ChatDone) -> String {
    match done {
        ChatDone::Approved { about } => td_string!(l, rerun.chat.done_approved, about = about).to_string(),
        ChatDone::Counted { about, approvals, required } => {
            td_string!(l, rerun.chat.done_counted, about = about, approvals = *approvals, required = *required)
                .to_string()
        }
        ChatDone::Rejected { about } => td_string!(l, rerun.chat.done_rejected, about = about).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::chat::ChatSubject;

    #[test]
    fn a_bulk_rerun_stopped_by_a_stage_says_so_in_its_messages_and_offers_no_buttons() {
        let card = DecisionCard {
            subject: ChatSubject::Batch("rb_1".into()),
            about: "受注システムの障害".into(),
            workflows: vec!["受注の取り込み".into()],
            department_name: "営業部".into(),
            status: CardStatus::BatchStopped { stage: 1 },
            plan: CardPlan::Operations { shown: Vec::new(), more: 0 },
            checks_confirmed: 5,
            checks: 5,
            requester: "佐藤".into(),
            reason: String::new(),
            expires_at: None,
            approvals: 1,
            required: 1,
            decisions: Vec::new(),
            decide_in_chat: false,
            needs_strong_sign_in: false,
            url: "https://gate.example.jp/batches/rb_1".into(),
        };
        assert!(!card.waiting());
        let ja = card_in(Locale::ja, chrono_tz::Asia::Tokyo, &card);
        assert!(ja.outcome[0].contains("段階 1 が外部システムで確認できず停止中"), "{:?}", ja.outcome);
        let en = card_in(Locale::en, chrono_tz::Asia::Tokyo, &card);
        assert!(en.outcome[0].contains("stage 1 was not proven"), "{:?}", en.outcome);
    }
}
