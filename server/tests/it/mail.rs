//! E-mail notifications over SMTP (lettre), against a local SMTP server.
use crate::fixtures::{caller, count, pending_request};
use crate::harness::TestApp;
use crate::smtp_sink::SmtpSink;
use app::backend::config::{MailConfig, MailSecurity};
use app::backend::services::approvals::decide;
use app::backend::services::notifications::send_outbound;
use app::domain::approval::Decision;
use chrono::Duration;

async fn app_with_mail() -> (TestApp, SmtpSink) {
    let sink = SmtpSink::start().await;
    let mut config = crate::harness::example_config();
    config.mail = Some(MailConfig {
        smtp_host: "127.0.0.1".into(),
        smtp_port: sink.port,
        security: MailSecurity::None,
        from: "Rerun Gate <gate@example.jp>".into(),
        username_env: None,
        password_env: None,
    });
    (TestApp::spawn_configured(|_| {}, config).await, sink)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_get_an_email_when_their_approval_is_asked_and_the_requester_when_it_is_decided() {
    let (app, sink) = app_with_mail().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let no_address = app::api::admin::NewUser {
        username: "kimura".into(),
        display_name: "Kimura".into(),
        password: crate::harness::PASSWORD.into(),
        roles: vec![app::domain::roles::Role::Manager],
        departments: vec!["sales".into()],
        email: String::new(),
    };
    app::backend::services::users::add(
        &app.state,
        app::domain::audit::Actor::system(app::domain::audit::SystemActor::CommandLine),
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
    let purge = app::backend::services::notifications::purge_sent;
    assert_eq!(purge(&app.state).await.unwrap(), 0, "not yet");
    app.clock.advance(Duration::days(31));
    assert_eq!(purge(&app.state).await.unwrap(), 2);
    let actions = app.audit_actions().await;
    assert_eq!(actions.len(), events + 1);
    assert_eq!(actions.last().unwrap(), "outbound.messages_purged");
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
    let new = app::api::admin::NewUser {
        username: "yamada".into(),
        display_name: "Yamada".into(),
        password: crate::harness::PASSWORD.into(),
        roles: vec![app::domain::roles::Role::Staff],
        departments: vec!["sales".into()],
        email: "yamada at example".into(),
    };
    let refused = app::backend::services::users::add(
        &app.state,
        app::domain::audit::Actor::system(app::domain::audit::SystemActor::CommandLine),
        None,
        new,
    )
    .await;
    match refused {
        Err(app::api::AppError::Validation(fields)) => assert_eq!(fields[0].field, "email", "{fields:?}"),
        other => panic!("expected a validation error, got {other:?}"),
    }
}
