//! The weekly and monthly review: indicators, what changed since the last review, and the manager's sign-off.
use crate::contract::AppError;
use crate::contract::reviews::*;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services};

#[server(endpoint = "reviews/show", input = leptos::server_fn::codec::Json)]
pub async fn load_review(query: ReviewQuery) -> Result<ReviewView, AppError> {
    context::read_once(("reviews/show", &query), async {
        let (state, caller) = context::caller().await?;
        services::reviews::review(&state, &caller, &query).await
    })
    .await
}

/// A manager of the department signs off a period's review, with a comment (audited).
#[server(endpoint = "reviews/sign_off")]
pub async fn sign_off_review(department: String, period: String, day: String, comment: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    let query = ReviewQuery { department: Some(department), period: Some(period), day: Some(day) };
    services::reviews::sign_off(&state, &caller, &query, &comment).await
}
