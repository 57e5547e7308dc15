//! The decision table of the source document: for each of the ten events, the state at the other side,
//! the next action, the records to compare, and the owner and cost; plus the actions the row allows.
use super::stall::StallEvent;
use serde::{Deserialize, Serialize};

/// What staff may do about a stalled operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Ask the outside systems what really happened.
    Reconcile,
    /// Start a rerun request for the steps proven not executed.
    RequestRerun,
    /// Use the result that exists: confirm the completion flag, send nothing.
    ConfirmExisting,
    /// Put on hold while someone asks the provider.
    Hold,
    /// Close without rerun (already processed, or must not be overwritten).
    Resolve,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionRow {
    pub event: StallEvent,
    pub other_side: &'static str,
    pub next_action: &'static str,
    pub compare: &'static str,
    pub owner_and_cost: &'static str,
    pub allowed: &'static [Action],
}

use Action::*;

const ROWS: [DecisionRow; 10] = [
    DecisionRow {
        event: StallEvent::AuthExpired,
        other_side: "拒否され、何も登録されていない",
        next_action: "認証情報を復旧する。未実行が証明できたときだけ再送する",
        compare: "認証エラー、受付記録",
        owner_and_cost: "接続管理者。AI が呼ばれたかを確認",
        allowed: &[Reconcile, RequestRerun, Hold],
    },
    DecisionRow {
        event: StallEvent::RateLimited,
        other_side: "一時的に拒否",
        next_action: "制限の解除後に再試行する。上限に達していれば止めて契約を見直す",
        compare: "エラー詳細、クォータ",
        owner_and_cost: "AI 運用。クォータと使用量を確認",
        allowed: &[Reconcile, RequestRerun, Hold],
    },
    DecisionRow {
        event: StallEvent::TemporaryFailure,
        other_side: "不明",
        next_action: "結果を照会する。未実行が証明され、安全なときだけ再送する",
        compare: "注文 ID、提供元の記録",
        owner_and_cost: "連携運用。その後の AI 実行を確認",
        allowed: &[Reconcile, RequestRerun, Hold],
    },
    DecisionRow {
        event: StallEvent::NoResponse,
        other_side: "登録済み",
        next_action: "既存の結果を使う。再送しない",
        compare: "注文 ID、結果、内容",
        owner_and_cost: "連携運用。要約を二重に始めない",
        allowed: &[Reconcile, ConfirmExisting, Hold],
    },
    DecisionRow {
        event: StallEvent::DuplicateNotification,
        other_side: "処理済み",
        next_action: "保存済みの結果を使う",
        compare: "イベント ID、処理状態",
        owner_and_cost: "連携運用。要約を二重に始めない",
        allowed: &[Reconcile, ConfirmExisting, Resolve],
    },
    DecisionRow {
        event: StallEvent::StaleNotification,
        other_side: "新しい内容が適用済み",
        next_action: "上書きしない。送信元の最新と比べる",
        compare: "送信元の最新、バージョン番号",
        owner_and_cost: "連携運用。古い内容から再生成しない",
        allowed: &[Reconcile, Resolve, Hold],
    },
    DecisionRow {
        event: StallEvent::PartialSuccess,
        other_side: "注文は登録済み、要約は未開始",
        next_action: "確認したうえで、要約だけを実行する",
        compare: "受付と要約を別々に確認",
        owner_and_cost: "連携運用。AI の実行回数を数える",
        allowed: &[Reconcile, RequestRerun, Hold],
    },
    DecisionRow {
        event: StallEvent::AiInProgress,
        other_side: "受付済み、生成中",
        next_action: "待つ。期限を過ぎたら人に引き継ぐ",
        compare: "AI 結果 ID の状態",
        owner_and_cost: "AI 運用。終了後に使用量を確認",
        allowed: &[Reconcile, Hold],
    },
    DecisionRow {
        event: StallEvent::CancelRequested,
        other_side: "止まったかどうか、まだ不明",
        next_action: "最終状態を確かめてから、再生成を決める",
        compare: "最終状態、出力",
        owner_and_cost: "AI 運用。キャンセルが無料だと思い込まない",
        allowed: &[Reconcile, RequestRerun, Hold],
    },
    DecisionRow {
        event: StallEvent::ResultUnknown,
        other_side: "照会できる ID がない",
        next_action: "送信を止め、提供元に問い合わせる",
        compare: "自社の記録、提供元の窓口",
        owner_and_cost: "AI 運用。決着まで使用量と請求を保留",
        allowed: &[Hold, Reconcile],
    },
];

pub fn row(event: StallEvent) -> &'static DecisionRow {
    ROWS.iter().find(|r| r.event == event).expect("every event has a row")
}

impl Action {
    pub fn label(self) -> &'static str {
        match self {
            Reconcile => "外部システムに照合",
            RequestRerun => "再実行を申請",
            ConfirmExisting => "既存の結果で完了にする",
            Hold => "保留にする",
            Resolve => "再実行せずに解決",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_has_exactly_one_row() {
        for event in StallEvent::ALL {
            assert_eq!(ROWS.iter().filter(|r| r.event == event).count(), 1, "{event:?}");
        }
    }

    #[test]
    fn rows_that_say_do_not_resend_never_offer_a_rerun() {
        for event in [StallEvent::NoResponse, StallEvent::DuplicateNotification, StallEvent::StaleNotification,
            StallEvent::AiInProgress, StallEvent::ResultUnknown] {
            assert!(!row(event).allowed.contains(&RequestRerun), "{event:?}");
        }
    }
}
