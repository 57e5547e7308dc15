//! Decisions in Slack (issue 50), against a local stand-in for Slack's Web API with interactions signed by Slack's
//! own SDK: the gate's rules hold for a press of a button exactly as on the page — maker ≠ checker, owners only,
//! one dispatch, a linked person only — and every message about a request keeps telling the truth.
use crate::company_sign_in::{TestProvider, sign_in_at_provider};
use crate::fixtures::{caller, count, pending_request, submitted};
use crate::harness::{PASSWORD, TestApp};
use crate::slack_standin::{
    SALES_CHANNEL, SIGNING_SECRET, SlackStandIn, TEAM, form, post, press, send, slack_sdk_signature, submitted_modal,
    with_slack,
};
use backend::Clock;
use backend::services::{approvals, batches, chat, rerun_requests, users};
use chrono::Duration;
use domain::approval::Decision;
use domain::chat::{ChatPlatform, ChatSubject, ChatUser};
use domain::roles::Role;
use reqwest::StatusCode;
use serde_json::Value;

/// The app with Slack; Slack's sign-in is not used (its issuer answers nothing).
async fn app_with_slack(decide_in_chat: bool) -> (TestApp, SlackStandIn) {
    let stand_in = SlackStandIn::start().await;
    let config = with_slack(stand_in.config("http://127.0.0.1:9"), decide_in_chat);
    (TestApp::spawn_configured(|_| {}, config).await, stand_in)
}

/// An app with Slack and its sign-in (for linking), and that sign-in's stand-in provider.
async fn app_with_slack_sign_in() -> (TestApp, TestProvider) {
    let stand_in = SlackStandIn::start().await;
    let mut provider = None;
    let app = TestApp::spawn_knowing_url(
        |_| {},
        |url| {
            let slack_sign_in = TestProvider::start(&format!("{url}/account/slack/callback"), &[]);
            let config = with_slack(stand_in.config(&slack_sign_in.issuer), true);
            provider = Some(slack_sign_in);
            config
        },
    )
    .await;
    (app, provider.expect("the sign-in's provider"))
}

/// `username` linked to the Slack user `slack_user` (as the account page does, after a fresh sign-in).
async fn linked(app: &TestApp, username: &str, slack_user: &str) {
    let who = ChatUser { platform: ChatPlatform::Slack, team_id: TEAM.into(), user_id: slack_user.into() };
    chat::link(&app.state, &caller(app, username).await, &who).await.unwrap();
}

/// Staff, two managers of sales (linked to Slack as U0SUZUKI and U0TAKAHASHI) and a request waiting for them,
/// its message posted to the sales channel.
async fn waiting_request(app: &TestApp, process_id: &str) -> String {
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    app.user("takahashi", &["manager"], &["sales"]).await;
    linked(app, "suzuki", "U0SUZUKI").await;
    linked(app, "takahashi", "U0TAKAHASHI").await;
    let token = app.token("intake", &["sales"]).await;
    let id = pending_request(app, &token, &caller(app, "sato").await, process_id).await;
    assert_eq!(chat::send_posts(&app.state).await.unwrap(), 1, "one message, to the sales channel");
    id
}

fn request(id: &str) -> ChatSubject {
    ChatSubject::Request(id.to_string())
}

async fn status_of(app: &TestApp, id: &str) -> String {
    let mut tx = app.db().begin_read().await.unwrap();
    let request = backend::db::rerun_requests::by_id(&mut tx, id).await.unwrap().unwrap();
    request.status.as_str().to_string()
}

async fn dispatches(app: &TestApp, id: &str) -> i64 {
    count(app, "SELECT COUNT(*) FROM dispatches WHERE request_id = $1", id).await
}

fn text_of(message: &Value) -> String {
    message.to_string()
}

fn buttons(message: &Value) -> Vec<Value> {
    let blocks = message["blocks"].as_array().cloned().unwrap_or_default();
    blocks.iter().filter(|b| b["type"] == "actions").flat_map(|b| b["elements"].as_array().cloned().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linked_manager_approves_in_slack_the_rerun_is_dispatched_once_and_the_message_says_who_decided() {
    let (app, slack) = app_with_slack(true).await;
    let id = waiting_request(&app, "ORD-SLACK-1").await;

    let posted = &slack.calls("chat.postMessage")[0];
    assert_eq!(posted["channel"], SALES_CHANNEL);
    let text = text_of(posted);
    for fact in [
        "ORD-SLACK-1",
        "ORD-SLACK-1-r",
        "受注の取り込み",
        "受注の登録",
        "sato san",
        "再実行する",
        "承認",
        "却下",
        "開く",
    ] {
        assert!(text.contains(fact), "the message names {fact}: {text}");
    }
    let actions: Vec<String> = buttons(posted).iter().map(|b| b["action_id"].as_str().unwrap().to_string()).collect();
    assert_eq!(actions, ["rerun_approve", "rerun_reject", "rerun_open"]);
    assert_eq!(buttons(posted)[0]["value"], format!("request:{id}"));
    assert!(buttons(posted)[0]["confirm"].is_object(), "承認 asks to confirm");

    let pressed = press(&slack, "U0SUZUKI", "rerun_approve", &request(&id));
    let answer = send(&app, &pressed).await;
    assert_eq!(answer.status, StatusCode::OK, "Slack is answered at once: {}", answer.body);
    let told = slack.wait_for("response_url", 1).await;
    assert_eq!(told[0]["response_type"], "ephemeral");
    assert!(told[0]["text"].as_str().unwrap().contains("ORD-SLACK-1 を承認しました"), "{}", told[0]);
    assert_eq!(status_of(&app, &id).await, "approved");
    assert_eq!(dispatches(&app, &id).await, 1);
    let approved = app.audit_after("rerun_request.approved").await;
    let authenticated = &approved[0]["authenticated"];
    assert_eq!(authenticated["method"]["kind"], "chat", "{authenticated}");
    assert_eq!(authenticated["method"]["platform"], "slack");
    assert_eq!(
        (authenticated["method"]["team_id"].as_str(), authenticated["method"]["user_id"].as_str()),
        (Some(TEAM), Some("U0SUZUKI"))
    );

    // The same signed press again (Slack's retry, or someone replaying it): answered, nothing more.
    let body = form(&pressed);
    let now = app.clock.now().timestamp();
    let signature = slack_sdk_signature(SIGNING_SECRET, now, &body);
    assert_eq!(post(&app, &body, now, &signature).await.status, StatusCode::OK);
    assert_eq!(post(&app, &body, now, &signature).await.status, StatusCode::OK);
    // The same press with its signature's hex in capitals: the same signed request, not a new one.
    let recased = format!("v0={}", signature["v0=".len()..].to_uppercase());
    assert_ne!(recased, signature);
    assert_eq!(post(&app, &body, now, &recased).await.status, StatusCode::OK);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(slack.calls("response_url").len(), 1, "a replay is not even answered");
    assert_eq!(dispatches(&app, &id).await, 1);

    assert_eq!(chat::send_posts(&app.state).await.unwrap(), 1);
    let updated = &slack.calls("chat.update")[0];
    // The message Slack gave this `ts` when it was posted.
    assert_eq!((updated["channel"].as_str(), updated["ts"].as_str()), (Some(SALES_CHANNEL), Some("1700000000.000100")));
    assert!(buttons(updated).is_empty(), "no buttons once decided: {updated}");
    let text = text_of(updated);
    assert!(text.contains("承認済み") && text.contains("suzuki san"), "who decided: {text}");
    assert_eq!(chat::send_posts(&app.state).await.unwrap(), 0, "each change shown once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_maker_an_unlinked_person_and_a_staff_member_are_told_why_and_nothing_is_decided() {
    let (app, slack) = app_with_slack(true).await;
    app.user("yamada", &["staff"], &["sales"]).await;
    linked(&app, "yamada", "U0YAMADA").await;
    // A manager who prepared the request themselves.
    app.user("kato", &["manager"], &["sales"]).await;
    linked(&app, "kato", "U0KATO").await;
    let token = app.token("intake", &["sales"]).await;
    crate::fixtures::stalled(&app, &token, "ORD-SLACK-2").await;
    let id = submitted(&app, &caller(&app, "kato").await, "ORD-SLACK-2").await;

    for (user, reason) in
        [("U0KATO", "作成に関わったため"), ("U0STRANGER", "連携されていない"), ("U0YAMADA", "承認者（部門長）ではない")]
    {
        let before = slack.calls("response_url").len();
        assert_eq!(send(&app, &press(&slack, user, "rerun_approve", &request(&id))).await.status, StatusCode::OK);
        let told = slack.wait_for("response_url", before + 1).await;
        let said = told[before]["text"].as_str().unwrap().to_string();
        assert!(said.contains(reason), "{user} hears why: {said}");
        assert_eq!(told[before]["response_type"], "ephemeral");
    }
    assert!(slack.calls("views.open").is_empty(), "nobody got as far as a modal");
    assert_eq!(send(&app, &press(&slack, "U0KATO", "rerun_reject", &request(&id))).await.status, StatusCode::OK);
    slack.wait_for("response_url", 4).await;
    assert!(slack.calls("views.open").is_empty(), "a maker's 却下 opens no modal");
    assert_eq!(status_of(&app, &id).await, "pending_approval");
    assert_eq!(dispatches(&app, &id).await, 0);
    assert!(app.audit_after("rerun_request.rejected").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_body_an_old_timestamp_and_another_secret_are_refused_before_anything_is_read() {
    let (app, slack) = app_with_slack(true).await;
    let id = waiting_request(&app, "ORD-SLACK-3").await;
    let body = form(&press(&slack, "U0SUZUKI", "rerun_approve", &request(&id)));
    let now = app.clock.now().timestamp();
    let signature = slack_sdk_signature(SIGNING_SECRET, now, &body);

    let tampered = body.replace("U0SUZUKI", "U0TAKAHASHI");
    assert_eq!(post(&app, &tampered, now, &signature).await.status, StatusCode::UNAUTHORIZED, "tampered");
    let old = now - 301;
    let old_signature = slack_sdk_signature(SIGNING_SECRET, old, &body);
    assert_eq!(post(&app, &body, old, &old_signature).await.status, StatusCode::UNAUTHORIZED, "301 s old");
    let other = slack_sdk_signature("another-apps-signing-secret", now, &body);
    assert_eq!(post(&app, &body, now, &other).await.status, StatusCode::UNAUTHORIZED, "another app's secret");
    let unsigned = app.http.post(format!("{}/hooks/slack/interactions", app.url)).body(body.clone()).send().await;
    assert_eq!(unsigned.unwrap().status(), StatusCode::UNAUTHORIZED, "no signature");

    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(slack.calls("response_url").is_empty(), "nothing was even answered");
    assert_eq!(status_of(&app, &id).await, "pending_approval");
    // Within the five minutes, the real one still counts.
    let at = now - 299;
    let fresh = slack_sdk_signature(SIGNING_SECRET, at, &body);
    assert_eq!(post(&app, &body, at, &fresh).await.status, StatusCode::OK);
    slack.wait_for("response_url", 1).await;
    assert_eq!(status_of(&app, &id).await, "approved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_managers_pressing_approve_at_once_make_one_dispatch() {
    let (app, slack) = app_with_slack(true).await;
    for round in 0..3 {
        let process_id = format!("ORD-SLACK-4{round}");
        let id = if round == 0 {
            waiting_request(&app, &process_id).await
        } else {
            let token = app.token(&format!("intake-{round}"), &["sales"]).await;
            pending_request(&app, &token, &caller(&app, "sato").await, &process_id).await
        };
        let before = slack.calls("response_url").len();
        let (first, second) = (
            press(&slack, "U0SUZUKI", "rerun_approve", &request(&id)),
            press(&slack, "U0TAKAHASHI", "rerun_approve", &request(&id)),
        );
        let (a, b) = tokio::join!(send(&app, &first), send(&app, &second));
        assert_eq!((a.status, b.status), (StatusCode::OK, StatusCode::OK));
        let told = slack.wait_for("response_url", before + 2).await;
        let approved = told[before..].iter().filter(|t| t["text"].as_str().unwrap().contains("を承認しました")).count();
        assert_eq!(approved, 1, "round {round}: one approval decides, the other hears it no longer waits: {told:?}");
        assert_eq!(dispatches(&app, &id).await, 1, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_on_the_page_or_the_requests_expiry_updates_every_message_about_it() {
    let (app, slack) = app_with_slack(true).await;
    let id = waiting_request(&app, "ORD-SLACK-5").await;
    approvals::decide(&app.state, &caller(&app, "takahashi").await, &id, Decision::Reject, "金額が違う").await.unwrap();
    assert_eq!(chat::send_posts(&app.state).await.unwrap(), 1);
    let updated = &slack.calls("chat.update")[0];
    assert!(buttons(updated).is_empty());
    let text = text_of(updated);
    assert!(text.contains("却下") && text.contains("takahashi san"), "{text}");

    // Another request nobody decides on: its message says it expired.
    let token = app.token("intake-2", &["sales"]).await;
    let other = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-SLACK-5B").await;
    assert_eq!(chat::send_posts(&app.state).await.unwrap(), 1);
    app.clock.advance(Duration::days(3));
    backend::services::approvals::expire_overdue(&app.state).await.unwrap();
    assert_eq!(status_of(&app, &other).await, "expired");
    assert_eq!(chat::send_posts(&app.state).await.unwrap(), 1);
    let expired = &slack.calls("chat.update")[1];
    assert!(buttons(expired).is_empty() && text_of(expired).contains("期限切れ"), "{expired}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_decide_in_chat_the_buttons_open_the_decision_page_and_a_forged_approval_decides_nothing() {
    let (app, slack) = app_with_slack(false).await;
    let id = waiting_request(&app, "ORD-SLACK-6").await;
    let posted = &slack.calls("chat.postMessage")[0];
    let page = format!("{}/reruns/{id}", app.url);
    assert!(buttons(posted).iter().all(|b| b["url"] == page.as_str()), "each button opens the page: {posted}");
    assert!(text_of(posted).contains("再サインイン"), "it says why");

    // A press Slack never offered, signed correctly: still only the page decides.
    assert_eq!(send(&app, &press(&slack, "U0SUZUKI", "rerun_approve", &request(&id))).await.status, StatusCode::OK);
    let told = slack.wait_for("response_url", 1).await;
    assert!(told[0]["text"].as_str().unwrap().contains("決定ページ"), "{}", told[0]);
    assert_eq!(status_of(&app, &id).await, "pending_approval");
}

/// A link ends with the access it stood for: after a password change (whoever knew the old one may have made
/// it), when its person signs out everywhere, after the last membership is removed, and once it is older than `[chat] link_days`; each press is then
/// refused with its reason, and each end is in the audit trail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_ends_with_a_password_change_signing_out_everywhere_the_last_membership_and_after_link_days() {
    let (app, slack) = app_with_slack(true).await;
    let id = waiting_request(&app, "ORD-SLACK-END").await;
    let approve = |user: &str| press(&slack, user, "rerun_approve", &request(&id));

    // suzuki changes their password: the link made with the old one ends; a press now decides nothing.
    let suzuki = caller(&app, "suzuki").await;
    users::change_own_password(&app.state, &suzuki, "127.0.0.1", PASSWORD.into(), "a-brand-new-pass-phrase".into())
        .await
        .unwrap();
    assert_eq!(send(&app, &approve("U0SUZUKI")).await.status, StatusCode::OK);
    let told = slack.wait_for("response_url", 1).await;
    assert!(told[0]["text"].as_str().unwrap().contains("連携されていない"), "{}", told[0]);
    assert_eq!(status_of(&app, &id).await, "pending_approval");

    // tanaka, signed in on a device they lost, signs out everywhere: that session and the link end.
    app.user("tanaka", &["manager"], &["sales"]).await;
    linked(&app, "tanaka", "U0TANAKA").await;
    let lost = app.sign_in("tanaka", PASSWORD).await;
    let everywhere = app.call("sign_out_everywhere", &[], Some(&app.sign_in("tanaka", PASSWORD).await)).await;
    assert_eq!(everywhere.status, StatusCode::OK, "{}", everywhere.body);
    assert_eq!(app.call("me", &[], Some(&lost)).await.status, StatusCode::UNAUTHORIZED, "the lost device's session");
    assert_eq!(send(&app, &approve("U0TANAKA")).await.status, StatusCode::OK);
    let told = slack.wait_for("response_url", 2).await;
    assert!(told[1]["text"].as_str().unwrap().contains("連携されていない"), "{}", told[1]);

    // takahashi loses the last membership (an auditor now, of no department): the link ends with it.
    app.user("admin", &["admin"], &[]).await;
    let (admin, takahashi) = (caller(&app, "admin").await, caller(&app, "takahashi").await.user_id());
    users::set_access(&app.state, &admin, takahashi, vec![Role::Auditor], vec![], vec![]).await.unwrap();
    assert_eq!(send(&app, &approve("U0TAKAHASHI")).await.status, StatusCode::OK);
    let told = slack.wait_for("response_url", 3).await;
    assert!(told[2]["text"].as_str().unwrap().contains("連携されていない"), "{}", told[2]);

    // A link made 30 days ago lapses: the press is refused with that reason, and the link ends.
    app.user("ito", &["manager"], &["sales"]).await;
    linked(&app, "ito", "U0ITO").await;
    app.clock.advance(chrono::Duration::days(30));
    assert_eq!(send(&app, &press(&slack, "U0ITO", "rerun_approve", &request(&id))).await.status, StatusCode::OK);
    let told = slack.wait_for("response_url", 4).await;
    assert!(told[3]["text"].as_str().unwrap().contains("期限が切れた"), "{}", told[3]);
    assert_eq!(status_of(&app, &id).await, "pending_approval");
    let unlinked = app.audit_actions().await.iter().filter(|a| *a == "user.chat_unlinked").count();
    assert_eq!(unlinked, 4, "each end of a link is in the audit trail");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_the_company_directory_removed_presses_approve_in_vain_and_is_told_why() {
    let stand_in = SlackStandIn::start().await;
    let config = crate::directory::with_directory(with_slack(stand_in.config("http://127.0.0.1:9"), true));
    let app = TestApp::spawn_configured(|_| {}, config).await;
    let id = waiting_request(&app, "ORD-SLACK-SCIM").await;
    let token = crate::directory::directory_token(&app).await;
    let tanaka = crate::directory::provisioned(&app, &token, "tanaka", "sales-approvers").await;
    linked(&app, "tanaka", "U0TANAKA").await;

    let gone = crate::directory::scim(&app, &token, reqwest::Method::DELETE, &format!("/Users/{tanaka}"), None).await;
    assert_eq!(gone.0, StatusCode::NO_CONTENT);
    assert_eq!(send(&app, &press(&stand_in, "U0TANAKA", "rerun_approve", &request(&id))).await.status, StatusCode::OK);
    let told = stand_in.wait_for("response_url", 1).await;
    assert!(told[0]["text"].as_str().unwrap().contains("連携されていない"), "{}", told[0]);
    assert_eq!(status_of(&app, &id).await, "pending_approval", "nothing decided");
}

/// A press in chat never weakens a decision: where a decision's sign-in must show a second factor, which a chat
/// identity cannot, the buttons open the page even for a workflow that decides in chat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_decisions_need_a_second_factor_a_press_in_slack_only_opens_the_page_and_says_why() {
    let stand_in = SlackStandIn::start().await;
    let mut config = with_slack(stand_in.config("http://127.0.0.1:9"), true);
    let mut company = config.slack.as_ref().unwrap().oidc();
    company.decision.amr = vec!["mfa".into()];
    config.sign_in.oidc = Some(company);
    let (app, slack) = (TestApp::spawn_configured(|_| {}, config).await, stand_in);
    let id = waiting_request(&app, "ORD-SLACK-MFA").await;
    let posted = &slack.calls("chat.postMessage")[0];
    let page = format!("{}/reruns/{id}", app.url);
    assert!(buttons(posted).iter().all(|b| b["url"] == page.as_str()), "each button opens the page: {posted}");
    assert!(text_of(posted).contains("多要素認証"), "it says why: {posted}");

    assert_eq!(send(&app, &press(&slack, "U0SUZUKI", "rerun_approve", &request(&id))).await.status, StatusCode::OK);
    let told = slack.wait_for("response_url", 1).await;
    assert!(told[0]["text"].as_str().unwrap().contains("決定ページ"), "{}", told[0]);
    assert_eq!(status_of(&app, &id).await, "pending_approval");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_in_slack_asks_for_the_reason_in_a_modal_and_an_empty_one_keeps_it_open() {
    let (app, slack) = app_with_slack(true).await;
    let id = waiting_request(&app, "ORD-SLACK-7").await;
    assert_eq!(send(&app, &press(&slack, "U0SUZUKI", "rerun_reject", &request(&id))).await.status, StatusCode::OK);
    let opened = slack.wait_for("views.open", 1).await.remove(0);
    assert!(opened["trigger_id"].as_str().unwrap().starts_with("trigger."));
    assert_eq!(opened["view"]["type"], "modal");

    let empty = send(&app, &submitted_modal(&opened, "U0SUZUKI", "  ")).await;
    assert_eq!(empty.status, StatusCode::OK);
    let kept_open: Value = serde_json::from_str(&empty.body).unwrap();
    assert_eq!(kept_open["response_action"], "errors", "{kept_open}");
    assert!(kept_open["errors"]["comment"].as_str().unwrap().contains("理由"));
    assert_eq!(status_of(&app, &id).await, "pending_approval");

    assert_eq!(send(&app, &submitted_modal(&opened, "U0SUZUKI", "金額が注文と違う")).await.status, StatusCode::OK);
    // Told through the press's `response_url`, which the modal kept.
    let told = slack.wait_for("response_url", 1).await;
    assert_eq!(told[0]["response_type"], "ephemeral");
    assert!(told[0]["text"].as_str().unwrap().contains("却下しました"), "{}", told[0]);
    assert_eq!(status_of(&app, &id).await, "rejected");
    let rejected = app.audit_after("rerun_request.rejected").await;
    assert_eq!(rejected[0]["authenticated"]["method"]["user_id"], "U0SUZUKI");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_links_their_slack_account_after_a_fresh_sign_in_and_disabling_them_ends_the_link() {
    let (app, provider) = app_with_slack_sign_in().await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let cookie = app.sign_in("suzuki", crate::harness::PASSWORD).await;
    let get = |path: String| app.http.get(format!("{}{path}", app.url)).header("cookie", &cookie).send();

    let off = get("/account/slack/link".into()).await.unwrap();
    assert_eq!(off.status(), StatusCode::SEE_OTHER);
    let authorize = off.headers()["location"].to_str().unwrap().to_string();
    assert!(authorize.starts_with(&provider.issuer), "to Slack's sign-in: {authorize}");
    let back = sign_in_at_provider(&authorize, "U0SUZUKI", &format!("{}/account/slack/callback", app.url)).await;
    let done = get(format!("{}?{}", back.path(), back.query().unwrap())).await.unwrap();
    assert_eq!(done.headers()["location"], "/account?chat=linked");
    let linked = app.audit_after("user.chat_linked").await;
    assert_eq!((linked[0]["team_id"].as_str(), linked[0]["chat_user_id"].as_str()), (Some(TEAM), Some("U0SUZUKI")));
    let mut tx = app.db().begin_read().await.unwrap();
    let who = ChatUser { platform: ChatPlatform::Slack, team_id: TEAM.into(), user_id: "U0SUZUKI".into() };
    assert!(backend::db::chat::user_of(&mut tx, &who).await.unwrap().is_some());
    drop(tx);

    // Some minutes later the sign-in is no longer fresh: linking asks for it again first.
    app.clock.advance(Duration::minutes(11));
    let again = get("/account/slack/link".into()).await.unwrap();
    assert!(again.headers()["location"].to_str().unwrap().starts_with("/sign-in/again"), "{:?}", again.headers());

    app.user("kanri", &["admin"], &[]).await;
    let suzuki = caller(&app, "suzuki").await.user_id();
    backend::services::users::set_disabled(&app.state, &caller(&app, "kanri").await, suzuki, true).await.unwrap();
    let mut tx = app.db().begin_read().await.unwrap();
    assert!(backend::db::chat::user_of(&mut tx, &who).await.unwrap().is_none(), "the link ended");
    assert!(app.audit_actions().await.contains(&"user.chat_unlinked".to_string()));
}

/// On a shared browser, a link one person started is never finished for another: the pending link is bound to
/// the person and the sign-in that started it, and dropped when someone signs in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_started_by_one_person_and_finished_after_another_signed_in_is_refused() {
    let (app, _provider) = app_with_slack_sign_in().await; // kept: it answers the link
    app.user("suzuki", &["manager"], &["sales"]).await;
    app.user("takahashi", &["manager"], &["sales"]).await;
    let suzuki = app.sign_in("suzuki", PASSWORD).await;
    let off = app.http.get(format!("{}/account/slack/link", app.url)).header("cookie", &suzuki).send().await.unwrap();
    let authorize = off.headers()["location"].to_str().unwrap().to_string();

    // takahashi signs in on the same browser; then Slack's answer for the link suzuki started comes back.
    let takahashi = app.call("sign_in", &[("username", "takahashi"), ("password", PASSWORD)], Some(&suzuki)).await;
    let takahashi = takahashi.session_cookie().expect("a session");
    let back = sign_in_at_provider(&authorize, "U0SUZUKI", &format!("{}/account/slack/callback", app.url)).await;
    let done = app.http.get(format!("{}{}?{}", app.url, back.path(), back.query().unwrap()));
    let done = done.header("cookie", &takahashi).send().await.unwrap();
    assert_eq!(done.headers()["location"], "/account?chat=failed");
    assert!(!app.audit_actions().await.contains(&"user.chat_linked".to_string()), "nobody was linked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_rerun_is_decided_in_slack_by_an_owner_and_staff_are_told_they_cannot() {
    let (app, slack) = app_with_slack(true).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    linked(&app, "sato", "U0SATO").await;
    linked(&app, "suzuki", "U0SUZUKI").await;
    let token = app.token("intake", &["sales"]).await;
    for n in 1..=3 {
        crate::fixtures::stalled(&app, &token, &format!("ORD-BULK-{n}")).await;
    }
    let staff = caller(&app, "sato").await;
    let id = batches::create(&app.state, &staff, crate::batches::by_filter(), "決済サービスの障害で停止した分")
        .await
        .unwrap();
    for _ in 0..600 {
        if batches::view(&app.state, &staff, &id).await.unwrap().status.as_str() != "previewing" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    batches::request(&app.state, &staff, &id, Some(60)).await.unwrap();
    for n in 1..=5 {
        let cause = rerun_requests::Cause { class: Some("outside_service_outage".into()), text: Some("503".into()) };
        batches::confirm(&app.state, &staff, &id, n, "ログで確認した", cause).await.unwrap();
    }
    batches::submit(&app.state, &staff, &id).await.unwrap();
    assert_eq!(chat::send_posts(&app.state).await.unwrap(), 1);
    let posted = &slack.calls("chat.postMessage")[0];
    let text = text_of(posted);
    for fact in
        ["一括再実行の承認をお願いします", "決済サービスの障害で停止した分", "ORD-BULK-1", "ORD-BULK-3-r", "sato san"]
    {
        assert!(text.contains(fact), "the message names {fact}: {text}");
    }
    assert_eq!(buttons(posted)[0]["value"], format!("batch:{id}"));

    let bulk = ChatSubject::Batch(id.clone());
    assert_eq!(send(&app, &press(&slack, "U0SATO", "rerun_approve", &bulk)).await.status, StatusCode::OK);
    let told = slack.wait_for("response_url", 1).await;
    assert!(told[0]["text"].as_str().unwrap().contains("承認者（部門長）ではない"), "{}", told[0]);
    assert_eq!(send(&app, &press(&slack, "U0SUZUKI", "rerun_approve", &bulk)).await.status, StatusCode::OK);
    let told = slack.wait_for("response_url", 2).await;
    assert!(told[1]["text"].as_str().unwrap().contains("を承認しました"), "{}", told[1]);
    assert_eq!(batches::view(&app.state, &staff, &id).await.unwrap().status.as_str(), "dispatching");
    let approved = app.audit_after("rerun_batch.approved").await;
    assert_eq!(approved[0]["authenticated"]["method"]["user_id"], "U0SUZUKI");

    chat::send_posts(&app.state).await.unwrap();
    let updated = slack.calls("chat.update");
    let last = updated.last().expect("the message was updated");
    assert!(buttons(last).is_empty() && text_of(last).contains("suzuki san"), "{last}");
}
