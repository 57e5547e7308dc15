//! Links between people and their chat accounts, as the account and admin pages show them.
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatLinkView {
    pub username: String,
    pub display_name: String,
    /// `slack`, `teams`
    pub platform: String,
    /// The workspace (Slack's team ID) and the person's ID in it.
    pub team_id: String,
    pub chat_user_id: String,
    pub linked_at: DateTime<Utc>,
    /// When it lapses (`[chat] link_days` after it was made): its person links again, after a fresh sign-in.
    pub lapses_at: DateTime<Utc>,
}

/// The account page's part about chat: whether a chat is set up here, and the person's links.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatLinks {
    pub slack_offered: bool,
    /// A Teams bot is set up: the company sign-in links the person's Teams account.
    pub teams_offered: bool,
    pub links: Vec<ChatLinkView>,
}
