//! Admin pages' server functions: who may use them and what they record.
use crate::harness::{PASSWORD, TestApp};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_adds_a_user_who_can_then_sign_in_and_see_their_department() {
    let app = TestApp::spawn().await;
    app.user("root", &["admin"], &[]).await;
    let admin = app.sign_in("root", PASSWORD).await;
    let body = json!({"new": {"username": "kato", "display_name": "加藤 由美", "password": "harukaze-no-michi",
        "roles": ["staff"], "departments": ["billing"]}});
    let answer = app.call_json("admin/add_user", body, Some(&admin)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let cookie = app.sign_in("kato", "harukaze-no-michi").await;
    let me = app.call("me", &[], Some(&cookie)).await.json();
    assert_eq!(me["display_name"], "加藤 由美");
    assert_eq!(me["departments"][0]["code"], "billing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_sign_in_name_is_a_conflict_and_changes_nothing() {
    let app = TestApp::spawn().await;
    app.user("root", &["admin"], &[]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let admin = app.sign_in("root", PASSWORD).await;
    let body = json!({"new": {"username": "sato", "display_name": "Other", "password": "harukaze-no-michi",
        "roles": ["staff"], "departments": ["sales"]}});
    let answer = app.call_json("admin/add_user", body, Some(&admin)).await;
    assert_eq!(answer.status, StatusCode::CONFLICT);
    let users = app.call("admin/list_users", &[], Some(&admin)).await.json();
    assert_eq!(users.as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_department_is_named_in_the_error() {
    let app = TestApp::spawn().await;
    app.user("root", &["admin"], &[]).await;
    let admin = app.sign_in("root", PASSWORD).await;
    let body = json!({"new": {"username": "kato", "display_name": "Kato", "password": "harukaze-no-michi",
        "roles": ["staff"], "departments": ["legal"]}});
    let answer = app.call_json("admin/add_user", body, Some(&admin)).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(answer.body.contains("legal"), "{}", answer.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_admins_reach_the_people_functions_and_strangers_must_sign_in() {
    let app = TestApp::spawn().await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let manager = app.sign_in("suzuki", PASSWORD).await;
    for endpoint in ["admin/list_users", "admin/list_departments"] {
        assert_eq!(app.call(endpoint, &[], Some(&manager)).await.status, StatusCode::FORBIDDEN, "{endpoint}");
        assert_eq!(app.call(endpoint, &[], None).await.status, StatusCode::UNAUTHORIZED, "{endpoint}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_cannot_disable_themselves_nor_drop_their_own_admin_role() {
    let app = TestApp::spawn().await;
    let root = app.user("root", &["admin"], &[]).await;
    let admin = app.sign_in("root", PASSWORD).await;
    let answer = app
        .call("admin/set_user_disabled", &[("user_id", &root.to_string()), ("disabled", "true")], Some(&admin))
        .await;
    assert_eq!(answer.status, StatusCode::CONFLICT);
    let body = json!({"user_id": root, "roles": ["auditor"], "departments": []});
    assert_eq!(app.call_json("admin/set_user_roles", body, Some(&admin)).await.status, StatusCode::CONFLICT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_sees_the_loaded_configuration_without_any_secret_and_others_do_not() {
    let app = TestApp::spawn().await;
    app.user("root", &["admin"], &[]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let admin = app.sign_in("root", PASSWORD).await;
    let answer = app.call("admin/configuration", &[], Some(&admin)).await;
    assert_eq!(answer.status, StatusCode::OK);
    let config = answer.json();
    assert_eq!(config["workflows"][0]["name"], "order-intake");
    assert_eq!(config["workflows"][0]["signing_secret_env"], "RERUN_GATE_SECRET_ORDER_INTAKE");
    let staff = app.sign_in("sato", PASSWORD).await;
    assert_eq!(app.call("admin/configuration", &[], Some(&staff)).await.status, StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_revokes_an_api_client_and_its_token_stops_working() {
    let app = TestApp::spawn().await;
    app.user("root", &["admin"], &[]).await;
    let token = app.token("intake", &["sales"]).await;
    let admin = app.sign_in("root", PASSWORD).await;
    let clients = app.call("admin/list_api_clients", &[], Some(&admin)).await.json();
    assert_eq!(clients[0]["name"], "intake");
    assert_eq!(clients[0]["revoked"], false);
    let id = clients[0]["id"].to_string();
    assert_eq!(app.call("admin/revoke_api_client", &[("id", &id)], Some(&admin)).await.status, StatusCode::OK);
    let answer = app.api(reqwest::Method::GET, "/api/v1/operations/x", &token, None, None).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert!(app.audit_actions().await.contains(&"api_client.revoked".to_string()));
}
