//! On an operation's page: past incidents of the department with the same event and failure class ("seen
//! before", and what was done then), which staff can mark as already understood with evidence; and the way to
//! report an incident for this operation.
use super::incidents::error_of;
use super::labels::{local_time, locale};
use crate::api::incidents::{AcknowledgePattern, load_known_patterns};
use crate::contract::incidents::{KnownPattern, KnownPatterns as Patterns};
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::components::A;

#[component]
pub fn KnownPatterns(process_id: String) -> impl IntoView {
    let acknowledge = ServerAction::<AcknowledgePattern>::new();
    // Loaded in the browser once the page has hydrated (and again after each acknowledgement): a second
    // resource inside the operation page's Suspense made its hydration fail. Nothing shows until then.
    let found = RwSignal::new(None::<Patterns>);
    let key = process_id.clone();
    Effect::new(move |_| {
        acknowledge.version().track();
        let key = key.clone();
        leptos::task::spawn_local(async move {
            // A failure leaves the box out: the page around it says what matters.
            found.set(load_known_patterns(key).await.ok());
        });
    });
    move || found.get().map(|found| view! { <Found found process_id=process_id.clone() acknowledge /> })
}

#[component]
fn Found(found: Patterns, process_id: String, acknowledge: ServerAction<AcknowledgePattern>) -> impl IntoView {
    let l = locale();
    let may_act = found.may_act;
    let report = may_act.then(|| {
        view! {
            <p data-testid="start-incident">
                <A href=format!(
                    "/incidents?from={}",
                    process_id.clone(),
                )>{td_string!(l, incident.patterns.start_report)}</A>
            </p>
        }
    });
    let patterns = (!found.patterns.is_empty()).then(|| {
        view! {
            <section class="card known-patterns" aria-labelledby="patterns-title" data-testid="known-patterns">
                <h2 id="patterns-title">{td_string!(l, incident.patterns.title)}</h2>
                <p class="hint">{td_string!(l, incident.patterns.intro)}</p>
                <ul>
                    {found
                        .patterns
                        .into_iter()
                        .map(|p| view! { <Pattern p process_id=process_id.clone() may_act acknowledge /> })
                        .collect_view()}
                </ul>
                <crate::ui::ErrorNote error=error_of(acknowledge) />
            </section>
        }
    });
    view! {
        {patterns}
        {report}
    }
}

#[component]
fn Pattern(
    p: KnownPattern,
    process_id: String,
    may_act: bool,
    acknowledge: ServerAction<AcknowledgePattern>,
) -> impl IntoView {
    let l = locale();
    let field = format!("pattern-{}-evidence", p.incident_id);
    let understood = p.acknowledgement.clone().map(|a| {
        view! {
            <p class="ok" data-testid="pattern-understood">
                {td_string!(l, incident.patterns.understood)}
                " "
                <span data-entered>{a.evidence}</span>
                " — "
                <span data-entered>{a.by}</span>
                " · "
                {local_time(a.at)}
            </p>
        }
    });
    let form = (may_act && p.acknowledgement.is_none()).then(|| {
        view! {
            <details>
                <summary>{td_string!(l, incident.patterns.acknowledge)}</summary>
                <ActionForm action=acknowledge attr:class="form">
                    <input type="hidden" name="process_id" value=process_id />
                    <input type="hidden" name="incident_id" value=p.incident_id.to_string() />
                    <label for=field.clone()>{td_string!(l, incident.patterns.evidence)}</label>
                    <textarea id=field name="evidence" required rows="2"></textarea>
                    <button type="submit" disabled=move || acknowledge.pending().get()>
                        {td_string!(l, incident.patterns.submit)}
                    </button>
                </ActionForm>
            </details>
        }
    });
    view! {
        <li data-incident=p.incident_id data-testid="known-pattern">
            <p>
                {td_string!(l, incident.patterns.seen_before)} " " <A href=format!("/incidents/{}", p.incident_id)>
                    <span data-entered>{p.title.clone()}</span>
                </A> <span>" (" {local_time(p.occurred_at)} ")"</span>
            </p>
            <p class="prose">
                {td_string!(l, incident.patterns.what_was_done)} " " <span data-entered>{p.response.clone()}</span>
            </p>
            {understood}
            {form}
        </li>
    }
}
