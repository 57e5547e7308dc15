//! In-app notifications: the bell's count, the list, and marking them read.
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationView {
    pub id: i64,
    /// `approval_requested`, `approved`, `rejected`, `dispatched`, `failed`, `completed`.
    pub kind: String,
    /// In the reader's language; what people wrote stands in `slot`s, its text in `entered`.
    pub title: String,
    #[serde(default)]
    pub entered: Vec<String>,
    pub link: String,
    pub created_at: DateTime<Utc>,
    pub read: bool,
}
