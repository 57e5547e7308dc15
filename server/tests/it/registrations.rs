//! Registrations at once (issue 27): many at the same moment share the writer's commits on SQLite, and what each
//! was decided on (key, process ID, step keys, the business-key duplicate) still holds when it is written.
use crate::harness::{Answer, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn order(process_id: &str, business_key: &str, step_key: &str) -> Value {
    json!({
        "process_id": process_id,
        "workflow": "order-intake",
        "department": "sales",
        "business_key": business_key,
        "content": {"order_id": business_key, "amount": 4000, "currency": "JPY"},
        "steps": [
            {"name": "register_order", "idempotency_key": step_key, "content": {"amount": 4000, "currency": "JPY"}},
            {"name": "ai_summary", "idempotency_key": format!("{process_id}:ai_summary"),
             "content": {"order_id": business_key}}
        ]
    })
}

async fn register(app: &TestApp, token: &str, key: &str, body: &Value) -> Answer {
    app.api(Method::POST, "/api/v1/operations", token, Some(key), Some(body)).await
}

async fn chain_is_intact(app: &TestApp) {
    let events = app.audit_actions().await.len() as i64;
    let verification = backend::services::audit::verify(app.db()).await.unwrap();
    assert_eq!(verification, backend::services::audit::Verification::Intact { events });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_registrations_at_once_are_each_registered_audited_and_answered_as_a_read_of_them_answers() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let bodies: Vec<Value> =
        (0..40).map(|i| order(&format!("ORD-{i}"), &format!("ORDER-{i}"), &format!("ORD-{i}:register"))).collect();
    let keys: Vec<String> = (0..40).map(|i| format!("k-{i}")).collect();
    let answers = futures::future::join_all(bodies.iter().zip(&keys).map(|(b, k)| register(&app, &token, k, b))).await;
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        let read = app.api(Method::GET, &format!("/api/v1/operations/ORD-{i}"), &token, None, None).await;
        assert_eq!(answer.body, read.body, "the stored answer is what a read of the operation says");
        let again = register(&app, &token, &format!("k-{i}"), &bodies[i]).await;
        assert_eq!((again.status, &again.body), (StatusCode::CREATED, &answer.body));
        assert_eq!(again.headers["idempotency-replayed"], "true");
    }
    let registered = app.audit_actions().await.iter().filter(|a| *a == "operation.registered").count();
    assert_eq!(registered, 40);
    chain_is_intact(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_process_id_registered_at_once_under_ten_keys_is_registered_once() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let body = order("ORD-1", "ORDER-1", "ORD-1:register");
    let keys: Vec<String> = (0..10).map(|i| format!("k-{i}")).collect();
    let answers = futures::future::join_all(keys.iter().map(|k| register(&app, &token, k, &body))).await;
    let created = answers.iter().filter(|a| a.status == StatusCode::CREATED).count();
    assert_eq!(created, 1);
    for refused in answers.iter().filter(|a| a.status != StatusCode::CREATED) {
        assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
        assert!(refused.json()["type"].as_str().unwrap().ends_with("process-id-exists"), "{}", refused.body);
    }
    let registered = app.audit_actions().await.iter().filter(|a| *a == "operation.registered").count();
    assert_eq!(registered, 1);
    chain_is_intact(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_step_key_claimed_at_once_by_ten_operations_goes_to_one_of_them() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let answers = futures::future::join_all((0..10).map(|i| {
        let body = order(&format!("ORD-{i}"), &format!("ORDER-{i}"), "the-same-order-key");
        let token = &token;
        let app = &app;
        async move { register(app, token, &format!("k-{i}"), &body).await }
    }))
    .await;
    let created = answers.iter().filter(|a| a.status == StatusCode::CREATED).count();
    assert_eq!(created, 1, "{:?}", answers.iter().map(|a| &a.body).collect::<Vec<_>>());
    for refused in answers.iter().filter(|a| a.status != StatusCode::CREATED) {
        assert!(refused.json()["type"].as_str().unwrap().ends_with("idempotency-key-taken"), "{}", refused.body);
    }
    chain_is_intact(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_orders_with_one_business_key_at_once_each_point_to_the_first_one_written() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let answers = futures::future::join_all((0..10).map(|i| {
        let body = order(&format!("ORD-{i}"), "ORDER-4000", &format!("ORD-{i}:register"));
        let (app, token) = (&app, &token);
        async move { register(app, token, &format!("k-{i}"), &body).await }
    }))
    .await;
    let marks: Vec<Value> = answers.iter().map(|a| a.json()["possible_duplicate_of"].clone()).collect();
    let first: Vec<&Value> = marks.iter().filter(|m| m.is_null()).collect();
    assert_eq!(first.len(), 1, "exactly one was first: {marks:?}");
    // The first written is the oldest: every other one points to it, in its answer, its row and its audit event.
    let index = marks.iter().position(Value::is_null).unwrap();
    let oldest = format!("ORD-{index}");
    for (i, mark) in marks.iter().enumerate().filter(|(i, _)| *i != index) {
        assert_eq!(mark, &json!(oldest), "ORD-{i}");
        let read = app.api(Method::GET, &format!("/api/v1/operations/ORD-{i}"), &token, None, None).await;
        assert_eq!(read.json()["possible_duplicate_of"], json!(oldest));
    }
    let mut tx = app.db().begin_read().await.unwrap();
    let events = backend::db::audit::page_after(&mut tx, 0, 10_000).await.unwrap();
    drop(tx);
    let registered: Vec<_> = events.iter().filter(|e| e.action == "operation.registered").collect();
    for e in registered {
        let after: Value = serde_json::from_str(e.after_json.as_deref().unwrap()).unwrap();
        let expected = if e.object_id == oldest { Value::Null } else { json!(oldest) };
        assert_eq!(after["possible_duplicate_of"], expected, "{}", e.object_id);
    }
    chain_is_intact(&app).await;
}
