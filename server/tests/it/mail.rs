//! E-mail notifications over SMTP (lettre), against a local SMTP server.
use crate::fixtures::{caller, count, pending_request};
use crate::harness::TestApp;
use crate::smtp_sink::SmtpSink;
use backend::config::{MailConfig, MailSecurity};
use backend::services::approvals::decide;
use backend::services::notifications::send_outbound;
use chrono::Duration;
use domain::approval::Decision;

async fn app_with_mail() -> (TestApp, SmtpSink) {
    let sink = SmtpSink::start().await;
    let mut config = crate::harness::example_config();
    config.mail = app_with_mail_config(sink.port);
    (TestApp::spawn_configured(|_| {}, config).await, sink)
}

fn app_with_mail_config(port: u16) -> Option<MailConfig> {
    Some(MailConfig {
        smtp_host: "127.0.0.1".into(),
        smtp_port: port,
        security: MailSecurity::None,
        from: "Rerun Gate <gate@example.jp>".into(),
        username_env: None,
        password_env: None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_get_an_email_when_their_approval_is_asked_and_the_requester_when_it_is_decided() {
    let (app, sink) = app_with_mail().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let no_address = contract::admin::NewUser {
        username: "kimura".into(),
        display_name: "Kimura".into(),
        password: crate::harness::PASSWORD.into(),
        roles: vec![domain::roles::Role::Manager],
        departments: vec!["sales".into()],
        memberships: Vec::new(),
        email: String::new(),
    };
    backend::services::users::add(
        &app.state,
        domain::audit::Actor::system(domain::audit::SystemActor::CommandLine),
        None,
        no_address,
    )
    .await
    .unwrap();

    let id = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-MAIL-1").await;
    assert_eq!(send_outbound(&app.state).await.unwrap(), 1, "one owner has an address");
    let asked = &sink.mails()[0];
    assert_eq!(asked.to, ["suzuki@example.jp"]);
    assert!(asked.subject.starts_with("[Rerun Gate] ORD-MAIL-1"), "{}", asked.subject);
    assert!(asked.body.contains(&format!("/reruns/{id}")) && asked.body.contains("sales"), "{}", asked.body);

    decide(&app.state, &caller(&app, "suzuki").await, &id, Decision::Approve, "").await.unwrap();
    assert_eq!(send_outbound(&app.state).await.unwrap(), 1);
    let decided = &sink.mails()[1];
    assert_eq!(decided.to, ["sato@example.jp"]);
    assert!(decided.subject.contains("承認されました"), "the subject is readable Japanese: {}", decided.subject);
    assert_eq!(send_outbound(&app.state).await.unwrap(), 0, "each once");

    // Retention: the sent texts go after message_retention_days (30), the purge is audited, the trail stays.
    let events = app.audit_actions().await.len();
    let purge = backend::services::notifications::purge_sent;
    assert_eq!(purge(&app.state).await.unwrap(), 0, "not yet");
    app.clock.advance(Duration::days(31));
    assert_eq!(purge(&app.state).await.unwrap(), 2);
    let actions = app.audit_actions().await;
    assert_eq!(actions.len(), events + 1);
    assert_eq!(actions.last().unwrap(), "outbound.messages_purged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_event_reaches_each_recipient_in_their_language_and_the_chat_in_its_departments() {
    let sink = SmtpSink::start().await;
    let mut config = crate::harness::example_config();
    config.mail = app_with_mail_config(sink.port);
    config.chat_webhook_url_env = Some("RG_TEST_CHAT_URL".into());
    config.chat_webhook_allow_loopback = true;
    config.departments.iter_mut().find(|d| d.code == "sales").unwrap().chat_language = "en".into();
    let app = TestApp::spawn_configured(|_| {}, config).await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    app.user("smith", &["manager"], &["sales"]).await;
    let english = caller(&app, "smith").await;
    backend::services::users::set_preferences(&app.state, &english, Some("en"), Some("Europe/London")).await.unwrap();

    // A request asks both owners for their approval; the department's chat speaks English.
    let id = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-WORDS-1").await;
    assert_eq!(send_outbound(&app.state).await.unwrap(), 3, "two e-mails and one chat message");
    let mails = sink.mails();
    let to = |who: &str| mails.iter().find(|m| m.to == [format!("{who}@example.jp")]).unwrap().clone();
    let (ja, en) = (to("suzuki"), to("smith"));
    assert_eq!(ja.subject, "[Rerun Gate] ORD-WORDS-1 — 再実行の承認をお願いします");
    assert_eq!(en.subject, "[Rerun Gate] ORD-WORDS-1 — Your approval of a rerun is asked");
    assert!(ja.body.contains("部門: sales") && ja.body.contains(" JST"), "Tokyo time: {}", ja.body);
    assert!(en.body.contains("Department: sales") && en.body.contains(" GMT"), "London time: {}", en.body);
    let link = format!("/reruns/{id}");
    for mail in [&ja, &en] {
        assert!(mail.body.contains(&link), "the plain part has the link: {}", mail.body);
        let html = mail.html.as_deref().expect("an HTML part");
        assert!(html.contains(&format!("{link}\">")), "the HTML part links to the page: {html}");
    }
    assert!(!en.body.chars().any(is_japanese) && !en.html.unwrap().chars().any(is_japanese), "{}", en.body);
    let chat = crate::harness::CHAT_MESSAGES.lock().unwrap().clone();
    let heard = chat.iter().find(|m| m.contains("ORD-WORDS-1")).unwrap();
    assert!(heard.contains("Your approval of a rerun is asked") && !heard.chars().any(is_japanese), "{heard}");

    // In the app each reads it in their own language.
    let mut reader = english.clone();
    reader.locale = words::i18n::Locale::en;
    let title = |list: Vec<contract::notifications::NotificationView>| list[0].title.clone();
    let latest = backend::services::notifications::latest;
    assert_eq!(title(latest(&app.state, &reader).await.unwrap()), "ORD-WORDS-1 — Your approval of a rerun is asked");
    let suzuki = caller(&app, "suzuki").await;
    assert_eq!(title(latest(&app.state, &suzuki).await.unwrap()), "ORD-WORDS-1 — 再実行の承認をお願いします");
}

fn is_japanese(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30ff}' | '\u{4e00}'..='\u{9fff}' | '\u{ff00}'..='\u{ffef}')
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_that_says_later_gets_the_mail_again_and_a_permanent_refusal_ends_it() {
    let (app, sink) = app_with_mail().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    sink.refuse_next();
    pending_request(&app, &token, &caller(&app, "sato").await, "ORD-MAIL-2").await;
    assert_eq!(send_outbound(&app.state).await.unwrap(), 0);
    let pending = "SELECT COUNT(*) FROM outbound_messages WHERE channel = 'mail' AND status = $1 AND attempts = 1";
    assert_eq!(count(&app, pending, "pending").await, 1, "451 is kept for another attempt");
    assert_eq!(send_outbound(&app.state).await.unwrap(), 0, "not before its backoff");
    app.clock.advance(Duration::minutes(5));
    assert_eq!(send_outbound(&app.state).await.unwrap(), 1);
    assert_eq!(sink.mails().len(), 1);

    app.user("nobody", &["manager"], &["sales"]).await; // the sink refuses nobody@… with 550
    pending_request(&app, &token, &caller(&app, "sato").await, "ORD-MAIL-3").await;
    send_outbound(&app.state).await.unwrap();
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM outbound_messages WHERE status = $1", "failed").await,
        1,
        "550 ends at once"
    );
    assert_eq!(sink.mails().len(), 2, "the other owner still got theirs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_address_that_is_not_an_email_address_is_refused_with_the_field_named() {
    let app = TestApp::spawn().await;
    let new = contract::admin::NewUser {
        username: "yamada".into(),
        display_name: "Yamada".into(),
        password: crate::harness::PASSWORD.into(),
        roles: vec![domain::roles::Role::Staff],
        departments: vec!["sales".into()],
        memberships: Vec::new(),
        email: "yamada at example".into(),
    };
    let refused = backend::services::users::add(
        &app.state,
        domain::audit::Actor::system(domain::audit::SystemActor::CommandLine),
        None,
        new,
    )
    .await;
    match refused {
        Err(contract::AppError::Validation(fields)) => assert_eq!(fields[0].field.as_str(), "email", "{fields:?}"),
        other => panic!("expected a validation error, got {other:?}"),
    }
}
