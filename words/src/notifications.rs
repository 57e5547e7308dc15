//! A notification in its reader's words: the title in the app's list, the e-mail (plain text and HTML) and the
//! chat message, each in the recipient's language; times in their zone.
use super::{local_time_in, round};
use crate::i18n::{Locale, td_string};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use domain::indicators::PeriodKind;
use domain::notifications::{BatchNews, Notice, RerunNews};
use leptos_i18n::Locale as _;

pub fn notice_title_in(l: Locale, notice: &Notice) -> String {
    match notice {
        Notice::Rerun { process_id, news } => {
            let p = process_id.as_str();
            match news {
                RerunNews::ApprovalAsked => td_string!(l, rerun.notice.rerun.approval_asked, process_id = p),
                RerunNews::Withdrawn => td_string!(l, rerun.notice.rerun.withdrawn, process_id = p),
                RerunNews::Approved => td_string!(l, rerun.notice.rerun.approved, process_id = p),
                RerunNews::Rejected => td_string!(l, rerun.notice.rerun.rejected, process_id = p),
                RerunNews::SentBack => td_string!(l, rerun.notice.rerun.sent_back, process_id = p),
                RerunNews::Expired => td_string!(l, rerun.notice.rerun.expired, process_id = p),
                RerunNews::Sent => td_string!(l, rerun.notice.rerun.sent, process_id = p),
                RerunNews::NothingToSend => td_string!(l, rerun.notice.rerun.nothing_to_send, process_id = p),
                RerunNews::OutcomeUnknown => td_string!(l, rerun.notice.rerun.outcome_unknown, process_id = p),
                RerunNews::SendFailed => td_string!(l, rerun.notice.rerun.send_failed, process_id = p),
                RerunNews::StalledAgain => td_string!(l, rerun.notice.rerun.stalled_again, process_id = p),
                RerunNews::NotSent => td_string!(l, rerun.notice.rerun.not_sent, process_id = p),
                RerunNews::Completed => td_string!(l, rerun.notice.rerun.completed, process_id = p),
            }
            .to_string()
        }
        Notice::Batch { batch_id, reason, news } => {
            // Titled by what it is about; its ID only for a notice stored without a reason.
            batch_title(l, &short(if reason.trim().is_empty() { batch_id } else { reason }), *news)
        }
        Notice::AuditDigest { seq, .. } => td_string!(l, rerun.notice.audit_digest, seq = *seq).to_string(),
        Notice::AuditTrailBroken { alarm } => {
            td_string!(l, rerun.notice.audit_trail_broken, what = super::audit::signer_alarm_in(l, alarm)).to_string()
        }
        Notice::ThresholdCrossed { indicator, value, above, period, start } => {
            let period = match period {
                PeriodKind::Week => td_string!(l, rerun.notice.week),
                PeriodKind::Month => td_string!(l, rerun.notice.month),
            };
            td_string!(
                l,
                rerun.notice.threshold_crossed,
                indicator = super::indicator_label_in(l, *indicator),
                value = round(*value),
                above = round(*above),
                period = period,
                start = start
            )
            .to_string()
        }
    }
}

/// The title as a page shows it: a bulk rerun's reason is what a person wrote, in a slot (`super::slot`) with the
/// text beside it, so that the page marks it as theirs.
pub fn notice_title_for_page(l: Locale, notice: &Notice) -> (String, Vec<String>) {
    match notice {
        Notice::Batch { reason, news, .. } if !reason.trim().is_empty() => {
            (batch_title(l, &super::slot(0), *news), vec![short(reason)])
        }
        _ => (notice_title_in(l, notice), Vec::new()),
    }
}

fn batch_title(l: Locale, about: &str, news: BatchNews) -> String {
    match news {
        BatchNews::ApprovalAsked { requests } => {
            td_string!(l, rerun.notice.batch.approval_asked, about = about, requests = requests)
        }
        BatchNews::Approved => td_string!(l, rerun.notice.batch.approved, about = about),
        BatchNews::Dispatched => td_string!(l, rerun.notice.batch.dispatched, about = about),
        BatchNews::Ended { succeeded, failed } => {
            td_string!(l, rerun.notice.batch.ended, about = about, succeeded = succeeded, failed = failed)
        }
        BatchNews::Rejected => td_string!(l, rerun.notice.batch.rejected, about = about),
        BatchNews::Expired => td_string!(l, rerun.notice.batch.expired, about = about),
        BatchNews::Cancelled => td_string!(l, rerun.notice.batch.cancelled, about = about),
        BatchNews::StageFailed { stage, failed } => {
            td_string!(l, rerun.notice.batch.stage_failed, about = about, stage = stage, failed = failed)
        }
    }
    .to_string()
}

/// A person's text cut to a title's length.
fn short(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// An e-mail's subject, plain text and HTML (with the link to the page), in the recipient's language and zone.
pub struct Mail {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// What an e-mail or a chat message is about, besides the notice itself.
pub struct Occasion<'a> {
    pub department: &'a str,
    pub at: DateTime<Utc>,
    /// The page's full address.
    pub url: &'a str,
}

pub fn mail_in(l: Locale, zone: Tz, notice: &Notice, occasion: &Occasion) -> Mail {
    let title = notice_title_in(l, notice);
    // An organisation-wide notice (the audit trail's) has no department.
    let department = match occasion.department {
        "" => String::new(),
        department => td_string!(l, rerun.notice.mail.department, department = department).to_string() + "\n",
    };
    let when = td_string!(l, rerun.notice.mail.when, at = local_time_in(zone, occasion.at)).to_string();
    let link = td_string!(l, rerun.notice.mail.link, url = occasion.url).to_string();
    let footer = td_string!(l, rerun.notice.mail.footer);
    let digest = digest_of(l, notice);
    let text = format!("{title}\n\n{digest}{department}{when}\n{link}\n\n-- \n{footer}\n");
    let e = |s: &str| html_escape::encode_text(s).to_string();
    let html = format!(
        "<!doctype html><html lang=\"{lang}\"><body><p><strong>{title}</strong></p>{digest}<p>{department}{when}</p>\
         <p><a href=\"{href}\">{open}</a></p><hr><p><small>{footer}</small></p></body></html>",
        lang = l.as_str(),
        title = e(&title),
        digest = if digest.is_empty() { String::new() } else { format!("<pre>{}</pre>", e(&digest)) },
        department = if department.is_empty() { String::new() } else { format!("{}<br>", e(department.trim_end())) },
        when = e(&when),
        href = html_escape::encode_double_quoted_attribute(occasion.url),
        open = e(open_label(l, notice)),
        footer = e(footer),
    );
    Mail { subject: format!("[Rerun Gate] {title}"), text, html }
}

/// The e-mail's button. One that asks for a decision only opens the decision page, where the person signs in (a
/// recent sign-in for the decision itself): an e-mail never carries anything that decides by itself.
fn open_label(l: Locale, notice: &Notice) -> &'static str {
    match notice {
        Notice::Rerun { news: RerunNews::ApprovalAsked, .. }
        | Notice::Batch { news: BatchNews::ApprovalAsked { .. }, .. } => td_string!(l, rerun.notice.mail.decide),
        _ => td_string!(l, rerun.notice.mail.open),
    }
}

/// The team chat's message, in its department's language.
pub fn chat_in(l: Locale, notice: &Notice, occasion: &Occasion) -> String {
    let digest = digest_of(l, notice);
    let department = match occasion.department {
        "" => String::new(),
        department => format!(" ({department})"),
    };
    format!("[Rerun Gate] {}{department} {}\n{digest}", notice_title_in(l, notice), occasion.url).trim_end().to_string()
}

/// A checkpoint's digest, to keep, with what to do with it (empty for other notices).
fn digest_of(l: Locale, notice: &Notice) -> String {
    match notice {
        Notice::AuditDigest { digest, .. } => {
            format!("{digest}\n{}\n\n", td_string!(l, rerun.notice.audit_digest_keep))
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::indicators::Indicator;

    #[test]
    fn the_same_notice_reads_in_japanese_and_in_english() {
        let approved = Notice::rerun("ORD-1", RerunNews::Approved);
        assert_eq!(notice_title_in(Locale::ja, &approved), "ORD-1 — 再実行が承認されました");
        assert_eq!(notice_title_in(Locale::en, &approved), "ORD-1 — The rerun was approved");
        let crossed = Notice::ThresholdCrossed {
            indicator: Indicator::Stalled,
            value: 12.5,
            above: 10.0,
            period: PeriodKind::Week,
            start: chrono::NaiveDate::from_ymd_opt(2026, 11, 30).unwrap(),
        };
        assert_eq!(
            notice_title_in(Locale::en, &crossed),
            "Threshold crossed: Stalled operations 12.5 > 10 (week from 2026-11-30)"
        );
    }

    #[test]
    fn an_email_has_a_plain_part_and_an_html_part_with_the_link_in_the_readers_zone() {
        let at = DateTime::parse_from_rfc3339("2026-12-02T01:30:00Z").unwrap().to_utc();
        let occasion = Occasion { department: "sales", at, url: "https://gate.example.jp/reruns/rr_1?a=1&b=2" };
        let mail = mail_in(Locale::en, chrono_tz::Europe::London, &Notice::rerun("ORD-1", RerunNews::Sent), &occasion);
        assert_eq!(mail.subject, "[Rerun Gate] ORD-1 — The rerun was sent");
        assert!(mail.text.contains("When: 2026-12-02 01:30 GMT"), "{}", mail.text);
        assert!(mail.text.contains("Details: https://gate.example.jp/reruns/rr_1?a=1&b=2"), "{}", mail.text);
        assert!(mail.html.contains(r#"<a href="https://gate.example.jp/reruns/rr_1?a=1&amp;b=2">Open the page</a>"#));
        let ja = mail_in(Locale::ja, chrono_tz::Asia::Tokyo, &Notice::rerun("ORD-1", RerunNews::Sent), &occasion);
        assert!(ja.text.contains("日時: 2026-12-02 10:30 JST"), "{}", ja.text);
    }

    #[test]
    fn the_approval_emails_button_opens_the_decision_page_and_carries_nothing_else() {
        let at = DateTime::parse_from_rfc3339("2026-12-02T01:30:00Z").unwrap().to_utc();
        let occasion = Occasion { department: "sales", at, url: "https://gate.example.jp/reruns/rr_1" };
        let asked = Notice::rerun("ORD-1", RerunNews::ApprovalAsked);
        let mail = mail_in(Locale::ja, chrono_tz::Asia::Tokyo, &asked, &occasion);
        let links: Vec<&str> = mail.html.split("href=\"").skip(1).map(|rest| rest.split('"').next().unwrap()).collect();
        assert_eq!(links, ["https://gate.example.jp/reruns/rr_1"], "one link, to the page, with no token");
        assert!(mail.html.contains(">承認・却下のページを開く（サインインが必要です）</a>"), "{}", mail.html);
    }
}
