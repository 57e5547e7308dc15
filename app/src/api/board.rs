//! The stalled-operations board and the operation detail page.
use super::AppError;
use super::operations::OperationView;
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use serde::{Deserialize, Serialize};
#[cfg(feature = "ssr")]
use {
    super::{context, finish},
    crate::backend::services,
};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardFilter {
    pub department: Option<String>,
    pub workflow: Option<String>,
    pub event: Option<String>,
    /// Only operations registered at least this many minutes ago.
    pub min_age_minutes: Option<i64>,
    /// Keyset cursor: the last row of the previous page.
    pub after: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardRow {
    pub cursor: i64,
    pub process_id: String,
    pub workflow: String,
    pub department: String,
    pub event: Option<String>,
    pub failure_class: Option<String>,
    pub business_key: Option<String>,
    pub possible_duplicate_of: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardPage {
    /// Stalled operations per event (`None`: not classified), under the filters other than the event.
    pub counts: Vec<(Option<String>, i64)>,
    pub rows: Vec<BoardRow>,
    /// Pass as `after` for the next page; `None` on the last page.
    pub next: Option<i64>,
    /// The departments and workflows the filters may choose from.
    pub departments: Vec<String>,
    pub workflows: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEntry {
    pub seq: i64,
    pub at: DateTime<Utc>,
    pub actor: String,
    pub action: String,
    pub reason: Option<String>,
    pub after: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OperationDetail {
    pub operation: OperationView,
    pub timeline: Vec<TimelineEntry>,
}

#[server(endpoint = "board/stalled", input = Json)]
pub async fn stalled_operations(filter: BoardFilter) -> Result<BoardPage, AppError> {
    finish(
        async {
            let (state, caller) = context::caller().await?;
            services::board::stalled(&state, &caller, filter).await
        }
        .await,
    )
}

#[server(endpoint = "board/operation")]
pub async fn load_operation(process_id: String) -> Result<OperationDetail, AppError> {
    finish(
        async {
            let (state, caller) = context::caller().await?;
            services::board::detail(&state, &caller, &process_id).await
        }
        .await,
    )
}

/// Asks the outside systems again about every step of the operation (staff or manager of its department).
#[server(endpoint = "board/reconcile")]
pub async fn reconcile_now(process_id: String) -> Result<usize, AppError> {
    finish(
        async {
            let (state, caller) = context::caller().await?;
            Ok(
                services::reconciliation::on_demand(&state, &caller, &process_id)
                    .await?
                    .len(),
            )
        }
        .await,
    )
}
