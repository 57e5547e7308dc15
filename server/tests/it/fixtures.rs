//! Shared steps of the gate's tests: a signed-in caller, and a rerun request waiting for approval.
use crate::harness::TestApp;
use backend::Clock;
use backend::services::{Caller, rerun_requests, sweeper};
use chrono::Duration;
use contract::reruns::StartAnswer;
use domain::identity::{AuthMethod, Authentication};
use reqwest::Method;
use serde_json::json;

pub async fn caller(app: &TestApp, username: &str) -> Caller {
    let mut tx = app.db().begin_read().await.unwrap();
    let row = backend::db::users::by_username(&mut tx, username).await.unwrap().unwrap();
    let user = backend::services::session_users::load_session_user(&mut tx, row).await.unwrap();
    // Signed in just now, with a password: fresh enough for decisions until the test's clock moves on.
    let authentication = Some(Authentication { at: app.clock.now(), method: AuthMethod::Password });
    Caller { session: user, request_id: None, locale: Default::default(), authentication }
}

/// A stalled order whose first step failed with a 503, past the look-ups' consistency delay.
pub async fn stalled(app: &TestApp, token: &str, process_id: &str) {
    let body = json!({"process_id": process_id, "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": format!("{process_id}-r")},
                  {"name": "ai_summary", "idempotency_key": format!("{process_id}-s")}]});
    app.api(Method::POST, "/api/v1/operations", token, Some(process_id), Some(&body)).await;
    let failed = json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}});
    let path = format!("/api/v1/operations/{process_id}/steps/register_order/events");
    app.api(Method::POST, &path, token, None, Some(&failed)).await;
    app.clock.advance(Duration::minutes(5)); // past the look-ups' consistency delay
    sweeper::sweep(&app.state).await.unwrap();
}

/// A stalled order whose steps the outside systems prove not executed, with a request waiting for approval.
pub async fn pending_request(app: &TestApp, token: &str, staff: &Caller, process_id: &str) -> String {
    stalled(app, token, process_id).await;
    submitted(app, staff, process_id).await
}

/// A request for a stalled operation, its five checks confirmed and sent for approval.
pub async fn submitted(app: &TestApp, staff: &Caller, process_id: &str) -> String {
    let StartAnswer::Created { id } = rerun_requests::start(&app.state, staff, process_id, "再実行する").await.unwrap()
    else {
        panic!("the plan should be ready")
    };
    for n in 1..=5 {
        let cause = rerun_requests::Cause { class: Some("outside_service_outage".into()), text: Some("503".into()) };
        rerun_requests::confirm(&app.state, staff, &id, n, "確認した", cause).await.unwrap();
    }
    rerun_requests::submit(&app.state, staff, &id).await.unwrap();
    id
}

/// The same, approved by `owner`: its dispatch is in the outbox.
pub async fn approved_request(app: &TestApp, token: &str, staff: &Caller, owner: &Caller, process_id: &str) -> String {
    let id = pending_request(app, token, staff, process_id).await;
    backend::services::approvals::decide(&app.state, owner, &id, domain::approval::Decision::Approve, "")
        .await
        .unwrap();
    id
}

/// One number from the database, for a query with one text parameter.
pub async fn count(app: &TestApp, sql: &str, id: &str) -> i64 {
    let mut tx = app.db().begin_read().await.unwrap();
    match &mut tx {
        backend::db::Conn::Sqlite(t, _) => sqlx::query_scalar(sql).bind(id).fetch_one(&mut **t).await.unwrap(),
        backend::db::Conn::Postgres(t, _) => sqlx::query_scalar(sql).bind(id).fetch_one(&mut **t).await.unwrap(),
    }
}

/// A company sign-in (`[sign_in.oidc]`) at `issuer`, mapping each group to its role in sales; nothing is fetched
/// from the provider (the tests hand the sign-in its identity).
pub fn company_sign_in(issuer: &str, groups: &[(&str, domain::roles::Role)]) -> domain::configuration::OidcConfig {
    domain::configuration::OidcConfig {
        issuer: issuer.into(),
        client_id: "rerun-gate".into(),
        client_secret_env: Some("RG_TEST_OIDC_SECRET".into()),
        scopes: vec!["openid".into()],
        groups_claim: "groups".into(),
        username_claim: "preferred_username".into(),
        name_claim: "name".into(),
        email_claim: "email".into(),
        allow_loopback: false,
        groups: groups
            .iter()
            .map(|(group, role)| domain::identity::GroupMapping {
                group: group.to_string(),
                roles: vec![*role],
                departments: vec!["sales".into()],
            })
            .collect(),
        decision: Default::default(),
    }
}
