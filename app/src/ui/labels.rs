//! Words and formats shared by the pages (Japanese first; English arrives with the i18n issue).
use crate::domain::reconciliation::Verdict;
use chrono::{DateTime, FixedOffset, Utc};

/// Japan has no daylight saving: JST is UTC+9 all year.
pub fn jst(at: DateTime<Utc>) -> String {
    let zone = FixedOffset::east_opt(9 * 3600).expect("valid offset");
    at.with_timezone(&zone).format("%Y-%m-%d %H:%M").to_string()
}

pub fn event_label(event: &str) -> &'static str {
    match event {
        "auth_expired" => "認証切れ",
        "rate_limited" => "レート制限",
        "temporary_failure" => "一時障害",
        "no_response" => "応答なし",
        "duplicate_notification" => "重複通知",
        "stale_notification" => "古い通知",
        "partial_success" => "途中まで成功",
        "ai_in_progress" => "AI 処理中",
        "cancel_requested" => "キャンセル要求",
        "result_unknown" => "結果不明",
        _ => "未分類",
    }
}

pub fn failure_class_label(class: &str) -> &'static str {
    match class {
        "system_error" => "システムエラー",
        "outside_service_outage" => "外部サービス障害",
        "data_inconsistency" => "データ不整合",
        _ => "—",
    }
}

/// Step and operation states with an icon, so that colour is never the only sign.
pub fn state_label(state: &str) -> &'static str {
    match state {
        "not_started" => "○ 未開始",
        "started" => "▶ 実行中",
        "succeeded" => "✓ 成功",
        "failed" => "✕ 失敗",
        "unknown" => "? 不明",
        "running" => "▶ 実行中",
        "stalled" => "⚠ 停止",
        "on_hold" => "⏸ 保留",
        "rerun_pending" => "… 再実行待ち",
        "rerunning" => "↻ 再実行中",
        "completed" => "✓ 完了",
        "resolved" => "✓ 解決済み",
        _ => "?",
    }
}

/// Reconciliation verdicts, with a sign so that colour is never the only cue.
pub fn verdict_label(verdict: Option<Verdict>) -> &'static str {
    match verdict {
        Some(Verdict::Executed) => "✓ 実行済み",
        Some(Verdict::ExecutedMismatch) => "≠ 実行済み（内容不一致）",
        Some(Verdict::NotExecuted) => "○ 未実行",
        Some(Verdict::InProgress) => "▶ 処理中",
        Some(Verdict::Unknown) => "? 不明",
        Some(Verdict::LookupFailed) => "✕ 照会失敗",
        None => "— 未照合",
    }
}
