//! In-app notifications: the bell's count, the list, and marking them read.
use crate::contract::AppError;
use crate::contract::notifications::*;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services};

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
