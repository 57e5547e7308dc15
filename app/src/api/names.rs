//! What every signed-in page calls workflows and steps (`contract::names`).
#[cfg(feature = "ssr")]
use super::context;
use crate::contract::AppError;
use crate::contract::names::Names;
use leptos::prelude::*;

#[server(endpoint = "names")]
pub async fn load_names() -> Result<Names, AppError> {
    context::read_once("names", async {
        let (state, _caller) = context::caller().await?;
        Ok(Names::of(&state.config))
    })
    .await
}
