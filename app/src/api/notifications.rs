//! In-app notifications: the bell's count, the list, and marking them read.
use super::AppError;
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
#[cfg(feature = "ssr")]
use {
    super::context,
    crate::backend::services,
};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationView {
    pub id: i64,
    /// `approval_requested`, `approved`, `rejected`, `dispatched`, `failed`, `completed`.
    pub kind: String,
    pub title: String,
    pub link: String,
    pub created_at: DateTime<Utc>,
    pub read: bool,
}

#[server(endpoint = "notifications/unread")]
pub async fn unread_notifications() -> Result<i64, AppError> {
    context::read_once("notifications/unread", async {
        let (state, caller) = context::caller().await?;
        services::notifications::unread(&state, &caller).await
    })
    .await
}

#[server(endpoint = "notifications/list")]
pub async fn list_notifications() -> Result<Vec<NotificationView>, AppError> {
    context::read_once("notifications/list", async {
        let (state, caller) = context::caller().await?;
        services::notifications::latest(&state, &caller).await
    })
    .await
}

#[server(endpoint = "notifications/read")]
pub async fn mark_notifications_read() -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::notifications::mark_all_read(&state, &caller).await
}
