//! The floor for the board's whole page: a bare axum handler, in a process of its own (this bench binary run
//! as `bench bare-board DATABASE_URL PORT`), that reads the same 50 rows the board of a staff member of sales
//! shows and answers them as JSON. No session, no rendering: what the page costs beyond its rows.
use axum::http::StatusCode;
use backend::db::operations::{BoardQuery, stalled_page};

pub async fn serve(url: &str, port: u16) -> anyhow::Result<()> {
    let db = server::startup::open_database(url).await?;
    let read = move || {
        let db = db.clone();
        async move {
            let sales = ["sales".to_string()];
            let query = BoardQuery {
                departments: Some(&sales),
                workflow: None,
                event: None,
                created_before: None,
                after_id: 0,
                limit: 51,
            };
            let mut tx = db.begin_read().await.map_err(|_| StatusCode::SERVICE_UNAVAILABLE)?;
            let rows = stalled_page(&mut tx, &query).await.map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
            serde_json::to_vec(&rows[..rows.len().min(50)]).map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)
        }
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    axum::serve(listener, axum::Router::new().route("/board", axum::routing::get(read))).await?;
    Ok(())
}
