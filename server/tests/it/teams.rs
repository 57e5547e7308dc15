//! Decisions in Microsoft Teams (issue 50), against a local stand-in for the Bot Framework (its OpenID metadata and
//! keys, its token endpoint, the Bot Connector API): the same gate as the page and Slack — a person linked through
//! their company sign-in, maker ≠ checker, owners only, one dispatch — and activities whose token does not hold
//! decide nothing.
use crate::fixtures::{caller, count, pending_request, submitted};
use crate::harness::TestApp;
use crate::teams_standin::{SALES_CONVERSATION, TENANT, TeamsStandIn, Token, send};
use backend::oidc::Identity;
use backend::services::{approvals, chat, company_sign_in};
use domain::approval::Decision;
use domain::roles::Role;
use reqwest::StatusCode;
use serde_json::Value;

/// The app with a Teams bot and the company's sign-in (which links each person's Teams account).
async fn app_with_teams(decide_in_chat: bool) -> (TestApp, TeamsStandIn) {
    let teams = TeamsStandIn::start().await;
    let mut config = crate::harness::example_config();
    config.teams = Some(teams.config());
    for workflow in &mut config.workflows {
        workflow.decide_in_chat = decide_in_chat;
    }
    let issuer = "https://login.microsoftonline.com/11111111-2222-4333-8444-555555555555/v2.0";
    let groups = [("sales-approvers", Role::Manager), ("sales-staff", Role::Staff)];
    config.sign_in.oidc = Some(crate::fixtures::company_sign_in(issuer, &groups));
    (TestApp::spawn_configured(|_| {}, config).await, teams)
}

/// `username` signs in with the company account (Microsoft Entra ID), whose object ID Teams knows them by.
async fn signed_in_with_the_company(app: &TestApp, username: &str, group: &str) {
    company_sign_in::sign_in(&app.state, &identity(username, group), None).await.unwrap();
}

/// What the company's identity provider says of `username`, in `group`.
fn identity(username: &str, group: &str) -> Identity {
    Identity {
        issuer: "https://login.microsoftonline.com/11111111-2222-4333-8444-555555555555/v2.0".into(),
        subject: format!("sub-{username}"),
        username: username.into(),
        display_name: format!("{username} san"),
        email: None,
        groups: vec![group.into()],
        auth_time: None,
        amr: Vec::new(),
        acr: None,
        team: None,
        entra: Some((TENANT.into(), object_id(username))),
    }
}

fn object_id(username: &str) -> String {
    format!("oid-{username}")
}

async fn status_of(app: &TestApp, id: &str) -> String {
    let mut tx = app.db().begin_read().await.unwrap();
    backend::db::rerun_requests::by_id(&mut tx, id).await.unwrap().unwrap().status.as_str().to_string()
}

async fn dispatches(app: &TestApp, id: &str) -> i64 {
    count(app, "SELECT COUNT(*) FROM dispatches WHERE request_id = $1", id).await
}

fn executes(card: &Value) -> Vec<String> {
    let actions = card["actions"].as_array().cloned().unwrap_or_default();
    actions.iter().filter(|a| a["type"] == "Action.Execute").map(|a| a["verb"].as_str().unwrap().to_string()).collect()
}

/// Staff and two managers of sales, all signed in once with the company account; a request waiting for approval,
/// its card posted to the sales channel.
async fn waiting_request(app: &TestApp, teams: &TeamsStandIn, process_id: &str) -> String {
    signed_in_with_the_company(app, "sato", "sales-staff").await;
    signed_in_with_the_company(app, "suzuki", "sales-approvers").await;
    signed_in_with_the_company(app, "takahashi", "sales-approvers").await;
    let token = app.token(&format!("intake-{process_id}"), &["sales"]).await;
    let id = pending_request(app, &token, &caller(app, "sato").await, process_id).await;
    let before = teams.calls("POST").len();
    assert_eq!(chat::send_posts(&app.state).await.unwrap(), 1);
    assert_eq!(teams.calls("POST").len(), before + 1);
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_linked_by_the_company_sign_in_approves_in_teams_and_the_card_changes_for_everyone() {
    let (app, teams) = app_with_teams(true).await;
    let id = waiting_request(&app, &teams, "ORD-TEAMS-1").await;
    let linked = app.audit_after("user.chat_linked").await;
    assert_eq!(linked.len(), 3, "each company sign-in linked its Teams account");
    assert_eq!((linked[1]["team_id"].as_str(), linked[1]["chat_user_id"].as_str()), (Some(TENANT), Some("oid-suzuki")));

    let (path, posted) = teams.calls("POST").remove(0);
    assert_eq!(path, format!("/v3/conversations/{SALES_CONVERSATION}/activities"));
    let card = &posted["attachments"][0]["content"];
    assert_eq!((card["type"].as_str(), card["version"].as_str()), (Some("AdaptiveCard"), Some("1.4")));
    assert_eq!(executes(card), ["approve", "reject"]);
    let text = card.to_string();
    for fact in ["ORD-TEAMS-1", "ORD-TEAMS-1-r", "sato san", "再実行する"] {
        assert!(text.contains(fact), "the card names {fact}: {text}");
    }

    let subject = format!("request:{id}");
    let (status, answer) =
        send(&app, &teams.press("oid-suzuki", "approve", &subject, ""), &Token::valid(&teams.url)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["type"], "application/vnd.microsoft.card.adaptive", "{answer}");
    assert!(executes(&answer["value"]).is_empty(), "no buttons once decided");
    assert!(answer["value"].to_string().contains("suzuki san"), "who decided");
    assert_eq!(status_of(&app, &id).await, "approved");
    assert_eq!(dispatches(&app, &id).await, 1);
    let approved = app.audit_after("rerun_request.approved").await;
    let method = &approved[0]["authenticated"]["method"];
    assert_eq!((method["platform"].as_str(), method["user_id"].as_str()), (Some("teams"), Some("oid-suzuki")));

    // The same press again (Teams retries an invoke it got no answer to): it decides nothing more.
    let (_, again) =
        send(&app, &teams.press("oid-takahashi", "approve", &subject, ""), &Token::valid(&teams.url)).await;
    assert!(again["value"].as_str().unwrap().contains("もう承認を待っていません"), "{again}");
    assert_eq!(dispatches(&app, &id).await, 1);

    assert_eq!(chat::send_posts(&app.state).await.unwrap(), 1);
    let (path, updated) = teams.calls("PUT").remove(0);
    assert_eq!(path, format!("/v3/conversations/{SALES_CONVERSATION}/activities/activity-1"));
    assert!(executes(&updated["attachments"][0]["content"]).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_activity_whose_token_is_forged_expired_or_for_another_bot_decides_nothing() {
    let (app, teams) = app_with_teams(true).await;
    let id = waiting_request(&app, &teams, "ORD-TEAMS-2").await;
    let press = teams.press("oid-suzuki", "approve", &format!("request:{id}"), "");
    let url = teams.url.as_str();
    let attacks = [
        ("signed with a key the Bot Framework never published", Token { forged: true, ..Token::valid(url) }),
        ("expired more than five minutes ago", Token { expires_in: -301, ..Token::valid(url) }),
        ("for another bot", Token { audience: "another-bot", ..Token::valid(url) }),
        ("from another issuer", Token { issuer: "https://evil.example", ..Token::valid(url) }),
        ("for another service URL", Token { service_url: "https://evil.example/", ..Token::valid(url) }),
        ("naming no service URL", Token { service_url: "", ..Token::valid(url) }),
    ];
    for (attack, token) in attacks {
        let (status, _) = send(&app, &press, &token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "a token {attack}");
    }
    // Another channel the Bot Framework signs for (Web Chat, Direct Line): not Teams, whatever it claims.
    for channel in ["webchat", "directline", "telegram"] {
        let mut elsewhere = press.clone();
        elsewhere["channelId"] = channel.into();
        assert_eq!(send(&app, &elsewhere, &Token::valid(url)).await.0, StatusCode::UNAUTHORIZED, "from {channel}");
    }
    // Another tenant, claimed in either place the activity names one, or in none.
    let mut other_tenant = press.clone();
    other_tenant["conversation"]["tenantId"] = "another-tenant".into();
    assert_eq!(send(&app, &other_tenant, &Token::valid(url)).await.0, StatusCode::UNAUTHORIZED, "another tenant");
    let mut other_tenant = press.clone();
    other_tenant["channelData"]["tenant"]["id"] = "another-tenant".into();
    assert_eq!(send(&app, &other_tenant, &Token::valid(url)).await.0, StatusCode::UNAUTHORIZED, "another tenant");
    let mut no_tenant = press.clone();
    no_tenant["conversation"].as_object_mut().unwrap().remove("tenantId");
    no_tenant.as_object_mut().unwrap().remove("channelData");
    assert_eq!(send(&app, &no_tenant, &Token::valid(url)).await.0, StatusCode::UNAUTHORIZED, "no tenant");
    let unsigned = app.http.post(format!("{}/hooks/teams/messages", app.url)).json(&press).send().await.unwrap();
    assert_eq!(unsigned.status(), StatusCode::UNAUTHORIZED, "no token");
    assert_eq!(status_of(&app, &id).await, "pending_approval");
    // Within the five minutes' leeway, the real one still counts.
    let (status, _) = send(&app, &press, &Token { expires_in: -299, ..Token::valid(url) }).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(status_of(&app, &id).await, "approved");

    // An activity is accepted once: the same ID on a press for another request decides nothing.
    let token = app.token("intake-2b", &["sales"]).await;
    let other = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-TEAMS-2B").await;
    let mut again = teams.press("oid-suzuki", "approve", &format!("request:{other}"), "");
    again["id"] = press["id"].clone();
    let (status, answer) = send(&app, &again, &Token::valid(url)).await;
    assert_eq!((status, answer), (StatusCode::OK, Value::Null), "answered, nothing more");
    assert_eq!(status_of(&app, &other).await, "pending_approval");
}

/// A manager removed from the approvers' group at the identity provider is refused at the next company sign-in,
/// and their Teams link ends with it: a press decides nothing any more, though they never sign in on the web again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_refused_at_the_company_sign_in_decides_nothing_in_teams_any_more() {
    let (app, teams) = app_with_teams(true).await;
    let id = waiting_request(&app, &teams, "ORD-TEAMS-GONE").await;
    let refused = company_sign_in::sign_in(&app.state, &identity("suzuki", "former-approvers"), None).await;
    assert!(matches!(refused, Err(contract::AppError::Forbidden)), "no group maps to a role");
    assert!(app.audit_actions().await.contains(&"user.chat_unlinked".to_string()), "the end of the link is audited");

    let press = teams.press("oid-suzuki", "approve", &format!("request:{id}"), "");
    let (status, answer) = send(&app, &press, &Token::valid(&teams.url)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(answer["value"].as_str().unwrap_or_default().contains("連携されていない"), "{answer}");
    assert_eq!(status_of(&app, &id).await, "pending_approval");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_teams_a_maker_an_unlinked_person_and_staff_are_told_why_and_a_rejection_needs_its_reason() {
    let (app, teams) = app_with_teams(true).await;
    signed_in_with_the_company(&app, "kato", "sales-approvers").await;
    let id = waiting_request(&app, &teams, "ORD-TEAMS-3").await;
    let token = app.token("intake-maker", &["sales"]).await;
    crate::fixtures::stalled(&app, &token, "ORD-TEAMS-3B").await;
    let made = submitted(&app, &caller(&app, "kato").await, "ORD-TEAMS-3B").await;

    let said = |answer: &Value| answer["value"].as_str().unwrap_or_default().to_string();
    let valid = Token::valid(&teams.url);
    let (_, maker) = send(&app, &teams.press("oid-kato", "approve", &format!("request:{made}"), ""), &valid).await;
    assert!(said(&maker).contains("作成に関わったため"), "{maker}");
    let (_, stranger) = send(&app, &teams.press("oid-nobody", "approve", &format!("request:{id}"), ""), &valid).await;
    assert!(said(&stranger).contains("連携されていない"), "{stranger}");
    let (_, staff) = send(&app, &teams.press("oid-sato", "approve", &format!("request:{id}"), ""), &valid).await;
    assert!(said(&staff).contains("承認者（部門長）ではない"), "{staff}");
    let (_, no_reason) = send(&app, &teams.press("oid-suzuki", "reject", &format!("request:{id}"), " "), &valid).await;
    assert!(said(&no_reason).contains("理由が必要"), "{no_reason}");
    assert_eq!(
        (status_of(&app, &id).await, status_of(&app, &made).await),
        ("pending_approval".into(), "pending_approval".into())
    );

    let (_, rejected) =
        send(&app, &teams.press("oid-suzuki", "reject", &format!("request:{id}"), "金額が違う"), &valid).await;
    assert_eq!(rejected["type"], "application/vnd.microsoft.card.adaptive", "{rejected}");
    assert_eq!(status_of(&app, &id).await, "rejected");
    assert_eq!(app.audit_after("rerun_request.rejected").await[0]["authenticated"]["method"]["user_id"], "oid-suzuki");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_teams_two_managers_at_once_make_one_dispatch_and_a_decision_on_the_page_updates_the_card() {
    let (app, teams) = app_with_teams(true).await;
    let id = waiting_request(&app, &teams, "ORD-TEAMS-4").await;
    let subject = format!("request:{id}");
    let (first, second) =
        (teams.press("oid-suzuki", "approve", &subject, ""), teams.press("oid-takahashi", "approve", &subject, ""));
    let valid = Token::valid(&teams.url);
    let (a, b) = tokio::join!(send(&app, &first, &valid), send(&app, &second, &valid));
    let cards =
        [&a.1, &b.1].iter().filter(|answer| answer["type"] == "application/vnd.microsoft.card.adaptive").count();
    assert_eq!(cards, 1, "one decides, the other hears it no longer waits: {a:?} {b:?}");
    assert_eq!(dispatches(&app, &id).await, 1);

    let token = app.token("intake-page", &["sales"]).await;
    let other = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-TEAMS-4B").await;
    chat::send_posts(&app.state).await.unwrap();
    approvals::decide(&app.state, &caller(&app, "takahashi").await, &other, Decision::Approve, "").await.unwrap();
    chat::send_posts(&app.state).await.unwrap();
    let updated = teams.calls("PUT");
    let last = &updated.last().expect("the card was updated").1;
    assert!(executes(&last["attachments"][0]["content"]).is_empty());
    assert!(last.to_string().contains("takahashi san"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_decide_in_chat_the_teams_card_only_opens_the_decision_page() {
    let (app, teams) = app_with_teams(false).await;
    let id = waiting_request(&app, &teams, "ORD-TEAMS-5").await;
    let card = teams.calls("POST").remove(0).1["attachments"][0]["content"].clone();
    assert!(executes(&card).is_empty());
    let page = format!("{}/reruns/{id}", app.url);
    assert!(card["actions"].as_array().unwrap().iter().all(|a| a["url"] == page.as_str()), "{card}");
    let (_, answer) =
        send(&app, &teams.press("oid-suzuki", "approve", &format!("request:{id}"), ""), &Token::valid(&teams.url))
            .await;
    assert!(answer["value"].as_str().unwrap().contains("決定ページ"), "{answer}");
    assert_eq!(status_of(&app, &id).await, "pending_approval");
}
