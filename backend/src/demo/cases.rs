//! The seed's cases, loaded with the demo: what staff find on the board on their first morning.
//! They happen an hour in the past (a clock set back), so the first sweep finds them stalled and asks the
//! demo outside systems what really happened.
use super::systems::{DemoSystems, Service};
use crate::AppState;
use crate::clock::ManualClock;
use crate::services::{Caller, api_clients, holds, registration, step_events, sweeper};
use chrono::Duration;
use contract::AppError;
use contract::operations::{ReportedError, StepEvent};
use domain::audit::{Actor, SystemActor};
use domain::operations::StepEventType;
use domain::stall::ErrorClass;
use serde_json::{Value, json};
use std::sync::Arc;

/// Registers the cases and runs one sweep; returns how many operations stalled.
pub async fn load(state: &AppState) -> Result<usize, AppError> {
    let departments = ["sales".to_string(), "billing".to_string()];
    let (id, _token) =
        api_clients::create(state, Actor::system(SystemActor::Demo), "demo-integration", &departments).await?;
    let client = api_clients::ApiClient {
        id,
        name: "demo-integration".into(),
        departments: departments.to_vec(),
        purpose: domain::directory::ClientPurpose::Ingestion,
    };
    let clock = Arc::new(ManualClock::new(state.clock.now() - Duration::hours(1)));
    let past =
        Past { state: state.with_clock(clock.clone()), client, outside: DemoSystems::new(state.db.clone(), clock) };
    past.lost_answer().await?;
    past.partial_success().await?;
    past.mail_not_found().await?;
    past.outage().await?;
    let stalled = sweeper::sweep(state).await?;
    hold_the_invoice(state).await?;
    Ok(stalled)
}

/// The hour before now, as the demo integration lived it: the app, the integration's client, the outside systems.
struct Past {
    state: AppState,
    client: api_clients::ApiClient,
    outside: DemoSystems,
}

impl Past {
    /// 1. A 4,000-yen order registered, the answer lost; the retry with the same key and content gets the same
    ///    order back; a 5,000-yen change under the same key is refused (409) and the order stays at 4,000 yen.
    async fn lost_answer(&self) -> Result<(), AppError> {
        let (past, client, outside) = (&self.state, &self.client, &self.outside);
        let order = json!({"item": "オフィスチェア", "amount": 4000});
        register(past, client, "ORD-1001", "order-intake", "sales", &order).await?;
        event(past, client, "ORD-1001", "register_order", 1, StepEventType::Started, None).await?;
        outside.execute(Service::Orders, "ORD-1001-register_order", &order, Some("ORD-1001")).await?;
        outside.execute(Service::Orders, "ORD-1001-register_order", &order, Some("ORD-1001")).await?;
        let changed = json!({"item": "オフィスチェア", "amount": 5000});
        let refused = outside.execute(Service::Orders, "ORD-1001-register_order", &changed, Some("ORD-1001")).await;
        debug_assert!(matches!(refused, Err(AppError::Conflict { .. })));
        let lost = ReportedError {
            class: ErrorClass::NoResponse,
            message: "応答を受け取る前に接続が切れました".into(),
        };
        event(past, client, "ORD-1001", "register_order", 2, StepEventType::Unknown, Some(lost)).await
    }

    /// 2. The order registered; the AI summary never started (partial success).
    async fn partial_success(&self) -> Result<(), AppError> {
        let (past, client, outside) = (&self.state, &self.client, &self.outside);
        let order = json!({"item": "ノートPCスタンド", "amount": 6800});
        register(past, client, "ORD-1002", "order-intake", "sales", &order).await?;
        event(past, client, "ORD-1002", "register_order", 1, StepEventType::Started, None).await?;
        let done = outside.execute(Service::Orders, "ORD-1002-register_order", &order, Some("ORD-1002")).await?;
        let succeeded =
            StepEvent { result_id: Some(done.execution.id), ..step_event(2, StepEventType::Succeeded, None) };
        step_events::report(past, client, "ORD-1002", "register_order", succeeded).await.map(drop)
    }

    /// 3. The invoice mail: the sender got no ID back and the mail log finds nothing, which proves nothing.
    async fn mail_not_found(&self) -> Result<(), AppError> {
        let (past, client) = (&self.state, &self.client);
        let invoice = json!({"customer": "株式会社サンプル", "amount": 132000});
        register(past, client, "INV-2001", "monthly-billing", "billing", &invoice).await?;
        event(past, client, "INV-2001", "draft_invoice", 1, StepEventType::Started, None).await?;
        event(past, client, "INV-2001", "draft_invoice", 2, StepEventType::Succeeded, None).await?;
        event(past, client, "INV-2001", "send_mail", 1, StepEventType::Started, None).await?;
        let unknown = ReportedError {
            class: ErrorClass::ResultUnknown,
            message: "送信結果の ID が返りませんでした".into(),
        };
        event(past, client, "INV-2001", "send_mail", 2, StepEventType::Unknown, Some(unknown)).await
    }

    /// 4. The order system was down for a while: six orders got 503 and never reached it, all with the same
    ///    cause (a bulk rerun's case); a seventh that failed the same way is in the order system with another
    ///    amount than the operation's (data inconsistency: blocked, never rerun).
    async fn outage(&self) -> Result<(), AppError> {
        let (past, client, outside) = (&self.state, &self.client, &self.outside);
        let outage = || ReportedError {
            class: ErrorClass::ServerError,
            message: "503 Service Unavailable（受注システムの障害）".into(),
        };
        let items = [
            ("デスクチェア", 18000),
            ("モニターアーム", 7200),
            ("USB-C ハブ", 4800),
            ("キーボード", 9900),
            ("ワイヤレスマウス", 3600),
            ("ノートPC スリーブ", 2900),
        ];
        for (n, (item, amount)) in items.into_iter().enumerate() {
            let process_id = format!("ORD-{}", 1101 + n);
            let content = json!({"item": item, "amount": amount});
            register(past, client, &process_id, "order-intake", "sales", &content).await?;
            event(past, client, &process_id, "register_order", 1, StepEventType::Started, None).await?;
            event(past, client, &process_id, "register_order", 2, StepEventType::Failed, Some(outage())).await?;
        }
        let desk = json!({"item": "昇降デスク", "amount": 52000});
        register(past, client, "ORD-1107", "order-intake", "sales", &desk).await?;
        let other_amount = json!({"item": "昇降デスク", "amount": 25000});
        outside.execute(Service::Orders, "ORD-1107-register_order", &other_amount, Some("ORD-1107")).await?;
        event(past, client, "ORD-1107", "register_order", 1, StepEventType::Started, None).await?;
        event(past, client, "ORD-1107", "register_order", 2, StepEventType::Failed, Some(outage())).await
    }
}

/// Nothing found proves nothing: the billing staff hold the invoice while they ask the mail provider.
async fn hold_the_invoice(state: &AppState) -> Result<(), AppError> {
    let ito = {
        let mut tx = state.db.begin_read().await?;
        let row = crate::db::users::by_username(&mut tx, "ito").await?.ok_or(AppError::NotFound)?;
        crate::services::session_users::load_session_user(&mut tx, row).await?
    };
    let caller = Caller { session: ito, request_id: None, locale: Default::default(), authentication: None };
    holds::place(state, &caller, "INV-2001", "メール配信ログに見当たらないため、配信事業者に送信有無を問い合わせ中")
        .await
}

async fn register(
    state: &AppState,
    client: &api_clients::ApiClient,
    process_id: &str,
    workflow: &str,
    department: &str,
    content: &Value,
) -> Result<(), AppError> {
    let workflow_steps = &state.config.workflow(workflow).ok_or(AppError::NotFound)?.steps;
    let steps: Vec<Value> = workflow_steps
        .iter()
        .map(|s| json!({"name": s.name, "idempotency_key": format!("{process_id}-{}", s.name), "content": content}))
        .collect();
    let body = json!({
        "process_id": process_id, "workflow": workflow, "department": department,
        "business_key": process_id, "content": content, "steps": steps,
    });
    registration::register(state, client, &format!("demo-{process_id}"), &body).await.map(drop)
}

fn step_event(seq: i64, kind: StepEventType, error: Option<ReportedError>) -> StepEvent {
    StepEvent { seq, kind, result_id: None, error, at: None, usage: None }
}

async fn event(
    state: &AppState,
    client: &api_clients::ApiClient,
    process_id: &str,
    step: &str,
    seq: i64,
    kind: StepEventType,
    error: Option<ReportedError>,
) -> Result<(), AppError> {
    step_events::report(state, client, process_id, step, step_event(seq, kind, error)).await.map(drop)
}
