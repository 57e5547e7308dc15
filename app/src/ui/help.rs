//! The "?" in a page's heading: that page's section of the user guide, in the reader's language. The guides are
//! `docs/ja/guide.md` (the reference) and `docs/en/guide.md`; the process serves them at `/guide/ja` and `/guide/en`,
//! and each section is an anchor of both (a test holds them together).
use super::labels::locale;
use crate::i18n::{Locale, td_string};
use leptos::prelude::*;

/// A section of the user guide, by the anchor both languages give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuideSection {
    Start,
    Board,
    Reconciliation,
    Checklist,
    Request,
    Approvals,
    Notifications,
    Batches,
    StopSwitch,
    Drills,
    Reviews,
    Incidents,
    Audit,
    Chat,
}

impl GuideSection {
    pub const ALL: [GuideSection; 14] = [
        GuideSection::Start,
        GuideSection::Board,
        GuideSection::Reconciliation,
        GuideSection::Checklist,
        GuideSection::Request,
        GuideSection::Approvals,
        GuideSection::Notifications,
        GuideSection::Batches,
        GuideSection::StopSwitch,
        GuideSection::Drills,
        GuideSection::Reviews,
        GuideSection::Incidents,
        GuideSection::Audit,
        GuideSection::Chat,
    ];

    pub fn anchor(self) -> &'static str {
        match self {
            GuideSection::Start => "start",
            GuideSection::Board => "board",
            GuideSection::Reconciliation => "reconciliation",
            GuideSection::Checklist => "checklist",
            GuideSection::Request => "request",
            GuideSection::Approvals => "approvals",
            GuideSection::Notifications => "notifications",
            GuideSection::Batches => "batches",
            GuideSection::StopSwitch => "stop-switch",
            GuideSection::Drills => "drills",
            GuideSection::Reviews => "reviews",
            GuideSection::Incidents => "incidents",
            GuideSection::Audit => "audit",
            GuideSection::Chat => "chat",
        }
    }
}

/// Where the guide of a language is served.
pub fn guide_path(l: Locale) -> &'static str {
    match l {
        Locale::ja => "/guide/ja",
        Locale::en => "/guide/en",
    }
}

/// The "?" beside a heading; the guide opens beside the page, which stays as it was.
#[component]
pub fn Help(section: GuideSection) -> impl IntoView {
    let l = locale();
    let href = format!("{}#{}", guide_path(l), section.anchor());
    let label = td_string!(l, common.help);
    view! {
        <a class="help" href=href target="_blank" rel="noopener" title=label aria-label=label data-testid="help">
            "?"
        </a>
    }
}
