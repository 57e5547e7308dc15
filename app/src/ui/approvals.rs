//! Requests and approvals: what waits for the reader's decision (single and bulk together, oldest deadline
//! first), the requests the reader prepared and the decisions they took, each with where it stands now and the
//! way to its decision page, where the evidence is. Readable on a phone.
use super::checklist::standing_label;
use super::data::resource;
use super::help::{GuideSection, Help};
use super::labels::{batch_status_label, status_label};
use super::labels::{local_time, slot, with_entered};
use crate::api::reruns::approval_inbox;
use crate::contract::reruns::{Inbox, InboxItem, Stage, Subject};
use crate::domain::approval::{Decision, Standing};
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::components::A;

#[component]
pub fn ApprovalsPage() -> impl IntoView {
    let l = super::labels::locale();
    let inbox = resource(|| (), |_| approval_inbox());
    view! {
        <h1>{td_string!(l, rerun.approvals.title)} <Help section=GuideSection::Approvals /></h1>
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                match inbox.await {
                    Ok(inbox) => view! { <Lists inbox /> }.into_any(),
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Lists(inbox: Inbox) -> impl IntoView {
    let l = super::labels::locale();
    let Inbox { decides, waiting, requested, decided } = inbox;
    let waiting = decides.then(|| {
        view! {
            <section aria-labelledby="waiting-title">
                <h2 id="waiting-title">{td_string!(l, rerun.approvals.waiting)}</h2>
                {if waiting.is_empty() {
                    view! {
                        <p class="empty" data-testid="inbox-empty">
                            {td_string!(l, rerun.approvals.empty)}
                        </p>
                    }
                        .into_any()
                } else {
                    view! {
                        <p class="hint">{td_string!(l, rerun.approvals.waiting_hint)}</p>
                        <Items items=waiting testid="inbox" />
                    }
                        .into_any()
                }}
            </section>
        }
    });
    let requested = (!requested.is_empty() || !decides).then(|| {
        view! {
            <section aria-labelledby="requested-title">
                <h2 id="requested-title">{td_string!(l, rerun.approvals.requested)}</h2>
                {if requested.is_empty() {
                    view! { <p class="empty">{td_string!(l, rerun.approvals.requested_empty)}</p> }.into_any()
                } else {
                    view! { <Items items=requested testid="my-requests" /> }.into_any()
                }}
            </section>
        }
    });
    let decided = (!decided.is_empty()).then(|| {
        view! {
            <section aria-labelledby="decided-title">
                <h2 id="decided-title">{td_string!(l, rerun.approvals.decided)}</h2>
                <Items items=decided testid="my-decisions" />
            </section>
        }
    });
    view! {
        {waiting}
        {requested}
        {decided}
    }
}

#[component]
fn Items(items: Vec<InboxItem>, testid: &'static str) -> impl IntoView {
    view! {
        <ul class="inbox" data-testid=testid>
            {items.into_iter().map(|item| view! { <Item item /> }).collect_view()}
        </ul>
    }
}

/// One request or bulk rerun: the facts in a line or two, where it stands, and the way to its decision page.
#[component]
fn Item(item: InboxItem) -> impl IntoView {
    let l = super::labels::locale();
    let href = match item.subject {
        Subject::Request => format!("/reruns/{}", item.id),
        Subject::Batch => format!("/batches/{}", item.id),
    };
    let title = match (&item.process_id, item.subject) {
        (Some(process_id), _) => process_id.clone(),
        (None, _) => td_string!(l, rerun.approvals.batch_title, count = item.operations).to_string(),
    };
    let steps = (!item.steps.is_empty()).then(|| {
        let steps = item.steps.iter().map(|(s, k)| format!("{s} ({k})")).collect::<Vec<_>>();
        let line = td_string!(l, rerun.approvals.steps, steps = steps.join(td_string!(l, rerun.separator))).to_string();
        view! { <p>{line}</p> }
    });
    view! {
        <li
            class="card"
            data-request=item.id.clone()
            data-subject=match item.subject {
                Subject::Request => "request",
                Subject::Batch => "batch",
            }
        >
            <h3>
                <A href=href.clone()>{title}</A>
                " · "
                <span>{item.workflows.join(td_string!(l, rerun.separator))}</span>
            </h3>
            <p>
                <span class="badge" data-entered>
                    {item.department.clone()}
                </span>
                <span data-entered>{item.requester.clone()}</span>
                {item.submitted_at.map(|at| format!(" · {}", local_time(at)))}
            </p>
            {item
                .expires_at
                .map(|at| {
                    view! {
                        <p class="deadline">
                            {td_string!(l, rerun.approvals.deadline, at = local_time(at)).to_string()}
                        </p>
                    }
                })}
            <p>{with_entered(&td_string!(l, rerun.approvals.reason, reason = slot(0)).to_string(), &[&item.reason])}</p>
            {steps}
            <WhereItStands
                approvals=item.approvals
                required=item.required
                stage=item.stage
                my_decision=item.my_decision
            />
            <WayToDecide href standing=item.standing />
        </li>
    }
}

/// Where it stands now: the approvals so far, its stage, and what the reader decided.
#[component]
fn WhereItStands(approvals: i64, required: i64, stage: Stage, my_decision: Option<Decision>) -> impl IntoView {
    let l = super::labels::locale();
    let stage = match stage {
        Stage::Request(status) => status_label(status),
        Stage::Batch(status) => batch_status_label(status),
    };
    let decision = my_decision.map(|d| match d {
        Decision::Approve => td_string!(l, rerun.approvals.you_approved),
        Decision::Reject => td_string!(l, rerun.approvals.you_rejected),
    });
    view! {
        <p>
            {td_string!(l, rerun.approvals.count, approvals = approvals, required = required).to_string()} " · "
            <span data-testid="stage">{td_string!(l, rerun.approvals.status_now, status = stage).to_string()}</span>
            {decision
                .map(|d| {
                    view! {
                        " · "
                        <strong data-testid="my-decision">{d}</strong>
                    }
                })}
        </p>
    }
}

/// The way to its decision page for a reader who may decide, or why the reader may not.
#[component]
fn WayToDecide(href: String, standing: Standing) -> impl IntoView {
    let l = super::labels::locale();
    match standing {
        Standing::MayDecide => view! {
            <A href attr:class="button" attr:data-testid="open-decision">
                {td_string!(l, rerun.approvals.open)}
            </A>
        }
        .into_any(),
        Standing::Maker(_) | Standing::NotOwner | Standing::Decided => view! {
            <p class="badge warn" data-testid="standing">
                {standing_label(standing)}
            </p>
        }
        .into_any(),
        Standing::NotWaiting | Standing::InBatch => ().into_any(),
    }
}
