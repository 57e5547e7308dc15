//! Admin: the loaded configuration (read-only) and the API clients (revocable).
use super::data::resource;
use super::help::{GuideSection, Help};
use super::labels::local_time;
use crate::api::admin::{CheckReceiver, RevokeApiClient, audit_signing, list_api_clients, loaded_configuration};
use crate::domain::configuration::{ConnectorConfig, DepartmentConfig, StepConfig, WorkflowConfig};
use crate::i18n::{td, td_string};
use leptos::prelude::*;

/// The key that signs the audit chain's checkpoints, by its fingerprint (auditors compare it with the public key
/// they keep), or a warning that nothing is signed.
#[component]
fn AuditSigning() -> impl IntoView {
    let signing = resource(|| (), |_| audit_signing());
    let l = super::labels::locale();
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                signing
                    .await
                    .ok()
                    .map(|s| {
                        view! {
                            {s.alarm.clone().map(|alarm| view! { <super::audit::SignerAlarmNotice alarm /> })}
                            <section class="card" data-testid="audit-signing">
                                <h2>{td_string!(l, admin.config.signing)}</h2>
                                {match s.fingerprint {
                                    Some(fingerprint) => {
                                        view! {
                                            <p>{td_string!(l, admin.config.signing_key)} " " <code>{s.key_id}</code></p>
                                            <p>
                                                {td_string!(l, admin.config.fingerprint)} " "
                                                <code class="wrap">{fingerprint}</code>
                                            </p>
                                            <p>
                                                {match s.latest {
                                                    Some((seq, at)) => {
                                                        td_string!(
                                                            l, admin.config.latest_checkpoint,
                                                            seq = seq, at = local_time(at)
                                                        )
                                                            .to_string()
                                                    }
                                                    None => td_string!(l, admin.config.no_checkpoint_yet).to_string(),
                                                }}
                                            </p>
                                        }
                                            .into_any()
                                    }
                                    None => {
                                        view! { <p class="badge warn">{td_string!(l, admin.config.not_signed)}</p> }
                                            .into_any()
                                    }
                                }}
                            </section>
                        }
                    })
            })}
        </Suspense>
    }
}

/// Sends a workflow's rerun endpoint the conformance check's test calls and shows what each showed.
#[component]
fn ReceiverCheckForm(workflow: String) -> impl IntoView {
    use crate::words::conformance::{line_in, verdict_in};
    let check = ServerAction::<CheckReceiver>::new();
    let error = super::error_of(check);
    let l = super::labels::locale();
    view! {
        <ActionForm action=check attr:class="inline">
            <input type="hidden" name="workflow" value=workflow />
            <button type="submit" class="small" data-testid="check-receiver" disabled=move || check.pending().get()>
                {td_string!(l, admin.conformance.button)}
            </button>
        </ActionForm>
        <crate::ui::ErrorNote error />
        {move || {
            check
                .value()
                .get()
                .and_then(Result::ok)
                .map(|c| {
                    let (all_met, verdict) = (c.all_met(), verdict_in(l, &c));
                    view! {
                        <div data-testid="receiver-check">
                            <p>{td_string!(l, admin.conformance.url)} " " <code>{c.url.clone()}</code></p>
                            <ul class="checks">
                                {c
                                    .results
                                    .iter()
                                    .map(|r| {
                                        view! { <li class=if r.met { "met" } else { "not-met" }>{line_in(l, r)}</li> }
                                    })
                                    .collect_view()}
                            </ul>
                            <p class=if all_met { "badge on" } else { "badge warn" }>{verdict}</p>
                        </div>
                    }
                })
        }}
    }
}

#[component]
pub fn ConfigurationPage() -> impl IntoView {
    let config = resource(|| (), |_| loaded_configuration());
    let l = super::labels::locale();
    view! {
        <h1>{td_string!(l, admin.config.title)} <Help section=GuideSection::Start /></h1>
        <AuditSigning />
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                match config.await {
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                    Ok(c) => {
                        view! {
                            <p>
                                {td!(
                                    l, admin.config.summary, source = c.source.clone(),
                                    days = c.idempotency_retention_days, <code> = <code />
                                )}
                            </p>
                            <section class="card" data-testid="config-workflows">
                                <h2>{td_string!(l, admin.config.workflows)}</h2>
                                {c.workflows.into_iter().map(|w| view! { <Workflow w /> }).collect_view()}
                            </section>
                            <Connectors connectors=c.connectors />
                            <Departments departments=c.departments />
                        }
                            .into_any()
                    }
                }
            })}
        </Suspense>
    }
}

/// A configured workflow: where its reruns go, its receiver's check, its steps.
#[component]
fn Workflow(w: WorkflowConfig) -> impl IntoView {
    let l = super::labels::locale();
    let english = super::names::english();
    view! {
        <h3>
            <super::names::Coded name=w.title.for_reader(&w.name, english).to_string() code=w.name.clone() />
            " "
            <small>
                "(" {w.department.clone()} {td_string!(l, admin.config.version)} <code>{w.version.clone()}</code> ")"
            </small>
        </h3>
        <p>
            {td!(
                l, admin.config.workflow_details, rerun_url = w.rerun_url.clone(),
                signing_env = w.signing_secret_env.clone(), approvals = w.approvals_required, <code> = <code />
            )}
        </p>
        <p class="lead">{td_string!(l, admin.conformance.explain)}</p>
        <ReceiverCheckForm workflow=w.name.clone() />
        <ol>{w.steps.into_iter().map(|s| view! { <Step s /> }).collect_view()}</ol>
    }
}

/// One step of a workflow: its connector, whether it acts outside, its deadline and heartbeat.
#[component]
fn Step(s: StepConfig) -> impl IntoView {
    let l = super::labels::locale();
    let acts = if s.side_effect {
        td_string!(l, admin.config.side_effect)
    } else {
        td_string!(l, admin.config.no_side_effect)
    };
    view! {
        <li>
            <strong>
                <super::names::Coded
                    name=s.title.for_reader(&s.name, super::names::english()).to_string()
                    code=s.name.clone()
                />
            </strong>
            " — "
            {s.connector.unwrap_or_else(|| "—".into())}
            {acts}
            {td_string!(l, admin.config.deadline, seconds = s.deadline_seconds)}
            {s.heartbeat_seconds.map(|h| td_string!(l, admin.config.heartbeat, seconds = h))}
        </li>
    }
}

/// The connectors: kind, settings and the names of their credential variables (never the values).
#[component]
fn Connectors(connectors: Vec<ConnectorConfig>) -> impl IntoView {
    let l = super::labels::locale();
    let settings = |k: &ConnectorConfig| k.settings.iter().map(|(key, v)| format!("{key} = {v}")).collect::<Vec<_>>();
    view! {
        <section class="card">
            <h2>{td_string!(l, admin.config.connectors)}</h2>
            <table class="grid">
                <thead>
                    <tr>
                        <th scope="col">{td_string!(l, admin.config.name)}</th>
                        <th scope="col">{td_string!(l, admin.config.kind)}</th>
                        <th scope="col">{td_string!(l, admin.config.settings)}</th>
                        <th scope="col">{td_string!(l, admin.config.credential_envs)}</th>
                    </tr>
                </thead>
                <tbody>
                    {connectors
                        .into_iter()
                        .map(|k| {
                            let settings = settings(&k).join(", ");
                            let envs = k.credential_envs.values().cloned().collect::<Vec<_>>().join(", ");
                            view! {
                                <tr>
                                    <td>{k.name}</td>
                                    <td>{k.kind}</td>
                                    <td>
                                        <code>{settings}</code>
                                    </td>
                                    <td>{envs}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
        </section>
    }
}

/// The departments, by name and code.
#[component]
fn Departments(departments: Vec<DepartmentConfig>) -> impl IntoView {
    let l = super::labels::locale();
    view! {
        <section class="card">
            <h2>{td_string!(l, admin.config.departments)}</h2>
            <ul>
                {departments
                    .into_iter()
                    .map(|d| {
                        view! {
                            <li>
                                <span data-entered>{d.name}</span>
                                " ("
                                <code>{d.code}</code>
                                ")"
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </section>
    }
}

#[component]
pub fn ApiClientsPage() -> impl IntoView {
    let revoke = ServerAction::<RevokeApiClient>::new();
    let clients = resource(move || revoke.version().get(), |_| list_api_clients());
    let error = super::error_of(revoke);
    let l = super::labels::locale();
    view! {
        <h1>{td_string!(l, common.nav.api_clients)} <Help section=GuideSection::Start /></h1>
        <p>{td!(l, admin.api_clients.token_hint, <code> = <code />)}</p>
        <crate::ui::ErrorNote error />
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                match clients.await {
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                    Ok(list) => {
                        view! {
                            <table class="grid" data-testid="api-clients">
                                <thead>
                                    <tr>
                                        <th scope="col">{td_string!(l, admin.api_clients.name)}</th>
                                        <th scope="col">{td_string!(l, admin.api_clients.departments)}</th>
                                        <th scope="col">{td_string!(l, admin.api_clients.created)}</th>
                                        <th scope="col">{td_string!(l, admin.api_clients.status)}</th>
                                    </tr>
                                </thead>
                                <tbody>
                                    {list
                                        .into_iter()
                                        .map(|c| {
                                            let (id, scope) = (c.id, scope(&c));
                                            view! {
                                                <tr>
                                                    <td>{c.name}</td>
                                                    <td>{scope}</td>
                                                    <td>{local_time(c.created_at)}</td>
                                                    <td>
                                                        {if c.revoked {
                                                            view! {
                                                                <span class="badge off">
                                                                    {td_string!(l, admin.api_clients.revoked)}
                                                                </span>
                                                            }
                                                                .into_any()
                                                        } else {
                                                            view! {
                                                                <span class="badge on">
                                                                    {td_string!(l, admin.api_clients.active)}
                                                                </span>
                                                                <button
                                                                    class="small"
                                                                    on:click=move |_| {
                                                                        revoke.dispatch(RevokeApiClient { id });
                                                                    }
                                                                >
                                                                    {td_string!(l, admin.api_clients.revoke)}
                                                                </button>
                                                            }
                                                                .into_any()
                                                        }}
                                                    </td>
                                                </tr>
                                            }
                                        })
                                        .collect_view()}
                                </tbody>
                            </table>
                        }
                            .into_any()
                    }
                }
            })}
        </Suspense>
    }
}

/// What a token may reach: its departments, or the company directory's provisioning.
fn scope(client: &crate::contract::admin::ApiClientSummary) -> String {
    let l = super::labels::locale();
    if client.directory {
        td_string!(l, admin.api_clients.directory).to_string()
    } else {
        client.departments.join(", ")
    }
}
