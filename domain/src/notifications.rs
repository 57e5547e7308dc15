//! What a notification tells, as facts: stored with the notification and its outbound e-mail or chat message,
//! and put into words for each reader when read or sent (their language and time zone; the chat's language is
//! its department's).
use super::indicators::{Indicator, PeriodKind};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "about", rename_all = "snake_case")]
pub enum Notice {
    /// News of one rerun request of an operation.
    Rerun { process_id: String, news: RerunNews },
    /// News of a bulk rerun, titled by its reason (what it is about; notices stored before it had none).
    Batch {
        batch_id: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
        news: BatchNews,
    },
    /// A department's risk indicator went over its threshold in a review period.
    ThresholdCrossed { indicator: Indicator, value: f64, above: f64, period: PeriodKind, start: NaiveDate },
    /// The audit signer's alarm: the chain no longer extends what it signed (to the auditors and admins).
    AuditTrailBroken { alarm: super::signer_alarm::SignerAlarm },
    /// The newest signed checkpoint, as its short signed digest (to the auditors, who keep it).
    AuditDigest { seq: i64, digest: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RerunNews {
    ApprovalAsked,
    Withdrawn,
    Approved,
    Rejected,
    /// Its approval no longer held (the plan changed or the approval's validity ended before sending).
    SentBack,
    /// Nobody decided within the approval's validity.
    Expired,
    Sent,
    /// The outside system had done it all already: completed without sending.
    NothingToSend,
    OutcomeUnknown,
    SendFailed,
    /// Sent, and the operation stalled again: the rerun failed.
    StalledAgain,
    /// Ended without sending (the approval expired or was voided at send time).
    NotSent,
    Completed,
}

impl RerunNews {
    /// The notification's kind, as stored beside it.
    pub fn kind(self) -> &'static str {
        match self {
            RerunNews::ApprovalAsked => "approval_requested",
            RerunNews::Withdrawn => "cancelled",
            RerunNews::Approved => "approved",
            RerunNews::Rejected => "rejected",
            RerunNews::SentBack => "sent_back",
            RerunNews::Expired => "expired",
            RerunNews::Sent => "dispatched",
            RerunNews::NothingToSend => "nothing_to_send",
            RerunNews::OutcomeUnknown => "outcome_unknown",
            RerunNews::SendFailed => "send_failed",
            RerunNews::StalledAgain => "stalled_again",
            RerunNews::NotSent => "not_sent",
            RerunNews::Completed => "completed",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "news", rename_all = "snake_case")]
pub enum BatchNews {
    ApprovalAsked {
        requests: u32,
    },
    Approved,
    Dispatched,
    /// Every member ended: how many reruns succeeded and how many failed.
    Ended {
        succeeded: u32,
        failed: u32,
    },
    Rejected,
    Expired,
    Cancelled,
    /// A stage (numbered from 1) was not proven at the outside systems: the batch stopped, `failed` reruns.
    StageFailed {
        stage: u32,
        failed: u32,
    },
}

impl BatchNews {
    /// The notification's kind, as stored beside it.
    pub fn kind(self) -> &'static str {
        match self {
            BatchNews::ApprovalAsked { .. } => "approval_requested",
            BatchNews::Approved => "approved",
            BatchNews::Dispatched => "sent",
            BatchNews::Ended { .. } => "completed",
            BatchNews::Rejected => "rejected",
            BatchNews::Expired => "expired",
            BatchNews::Cancelled => "cancelled",
            BatchNews::StageFailed { .. } => "stage_failed",
        }
    }
}

impl Notice {
    pub fn rerun(process_id: &str, news: RerunNews) -> Notice {
        Notice::Rerun { process_id: process_id.to_string(), news }
    }

    pub fn batch(batch_id: &str, reason: &str, news: BatchNews) -> Notice {
        Notice::Batch { batch_id: batch_id.to_string(), reason: reason.to_string(), news }
    }

    /// The stored form (JSON).
    pub fn to_stored(&self) -> String {
        serde_json::to_string(self).expect("a notice serializes")
    }

    /// A stored notice; `None` for one this version does not know (its stored title is shown instead).
    pub fn from_stored(text: &str) -> Option<Notice> {
        serde_json::from_str(text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_is_stored_as_its_facts_and_read_back() {
        let notices = [
            Notice::rerun("ORD-1", RerunNews::Approved),
            Notice::batch("bt_1", "決済障害の分", BatchNews::ApprovalAsked { requests: 3 }),
            Notice::ThresholdCrossed {
                indicator: Indicator::Stalled,
                value: 12.0,
                above: 10.0,
                period: PeriodKind::Week,
                start: NaiveDate::from_ymd_opt(2026, 11, 30).unwrap(),
            },
            Notice::AuditTrailBroken {
                alarm: super::super::signer_alarm::SignerAlarm::HistoryChanged {
                    seq: 12,
                    hash: "ab".into(),
                    found: None,
                    head: 9,
                },
            },
        ];
        for notice in notices {
            assert_eq!(Notice::from_stored(&notice.to_stored()), Some(notice));
        }
        assert_eq!(
            Notice::rerun("ORD-1", RerunNews::SentBack).to_stored(),
            r#"{"about":"rerun","process_id":"ORD-1","news":"sent_back"}"#
        );
        assert_eq!(Notice::from_stored(r#"{"about":"weather"}"#), None, "an unknown notice is not guessed");
    }
}
