//! The demo: one user of every role in the configured departments, with one-time passwords printed once,
//! and the seed's cases (see `cases`). The demo's outside systems (`systems`), the connector that reads them
//! (`connector`) and their webhook sender's receiver (`receiver`) are beside it; their HTTP side is
//! `server/src/demo`.
//! Loaded only on an empty database, and `serve` only does it on a loopback address.
pub mod cases;
pub mod connector;
pub mod receiver;
pub mod systems;

use super::services::users;
use super::{AppState, db};
use contract::AppError;
use contract::admin::NewUser;
use domain::audit::{Actor, SystemActor};
use domain::roles::Role;
use rand::Rng;

struct DemoUser {
    username: &'static str,
    display_name: &'static str,
    roles: &'static [Role],
    departments: &'static [&'static str],
}

const USERS: [DemoUser; 6] = [
    DemoUser { username: "sato", display_name: "佐藤 花子", roles: &[Role::Staff], departments: &["sales"] },
    DemoUser { username: "ito", display_name: "伊藤 翔", roles: &[Role::Staff], departments: &["billing"] },
    DemoUser { username: "suzuki", display_name: "鈴木 一郎", roles: &[Role::Manager], departments: &["sales"] },
    DemoUser {
        username: "takahashi",
        display_name: "高橋 美咲",
        roles: &[Role::Manager],
        departments: &["sales", "billing"],
    },
    DemoUser { username: "tanaka", display_name: "田中 健", roles: &[Role::Auditor], departments: &[] },
    DemoUser { username: "admin", display_name: "管理者", roles: &[Role::Admin], departments: &[] },
];

pub struct DemoCredential {
    pub username: String,
    pub display_name: String,
    pub roles: String,
    pub password: String,
}

/// Loads the demo into an empty database; returns `None` when there is already someone in it.
pub async fn load_if_empty(state: &AppState) -> Result<Option<Vec<DemoCredential>>, AppError> {
    let mut tx = state.db.begin_read().await?;
    if db::users::count(&mut tx).await? > 0 {
        return Ok(None);
    }
    drop(tx);
    let mut credentials = Vec::new();
    for demo in USERS {
        let password = one_time_password();
        let new = NewUser {
            username: demo.username.into(),
            display_name: demo.display_name.into(),
            password: password.clone(),
            roles: demo.roles.to_vec(),
            departments: demo.departments.iter().map(|d| d.to_string()).collect(),
            memberships: Vec::new(),
            email: String::new(),
        };
        users::add(state, Actor::system(SystemActor::Demo), None, new).await?;
        credentials.push(DemoCredential {
            username: demo.username.into(),
            display_name: demo.display_name.into(),
            roles: demo.roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(","),
            password,
        });
    }
    super::services::drills::mark_database(state, Actor::system(SystemActor::Demo), "demo").await?;
    cases::load(state).await?;
    Ok(Some(credentials))
}

/// 16 characters from an alphabet without look-alikes: about 90 bits.
fn one_time_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut rng = rand::thread_rng();
    (0..16).map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char).collect()
}
