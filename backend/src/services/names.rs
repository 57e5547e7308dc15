//! What the pages call people and departments: by name. The trail and the evidence store sign-in names and codes
//! (they are what an export and a search use); a page shows the name, the code only where no name is known.
use crate::db::departments::DepartmentRow;
use crate::db::users::UserRow;
use crate::db::{self, Conn};
use contract::audit::ActorView;
use domain::configuration::name_for;
use words::audit::stored_actor_label_in;
use words::i18n::Locale;

/// How many of an object's audit events its timeline shows.
const TIMELINE_LENGTH: i64 = 200;

pub struct Names {
    users: Vec<UserRow>,
    departments: Vec<DepartmentRow>,
}

impl Names {
    /// An object's audit events, newest first, in the reader's words: an operation's timeline, a bulk rerun's
    /// history.
    pub async fn timeline(
        &self,
        tx: &mut Conn,
        caller: &super::Caller,
        (object, id): (domain::audit::ObjectType, &str),
    ) -> Result<Vec<contract::board::TimelineEntry>, sqlx::Error> {
        use words::audit::{action_code_label_in, reason_label_in};
        let events = db::audit::for_object(tx, object.as_str(), id, TIMELINE_LENGTH).await?;
        Ok(events
            .into_iter()
            .map(|e| contract::board::TimelineEntry {
                seq: e.seq,
                at: e.at,
                actor: self.actor(caller.locale, &e.actor_kind, &e.actor_label),
                action_label: action_code_label_in(caller.locale, &e.action),
                action: e.action,
                reason: reason_label_in(caller.locale, e.reason),
                after: e.after_json,
            })
            .collect())
    }

    pub async fn load(tx: &mut Conn) -> Result<Names, sqlx::Error> {
        Ok(Names { users: db::users::all(tx).await?, departments: db::departments::all(tx).await? })
    }

    pub fn users(&self) -> &[UserRow] {
        &self.users
    }

    pub fn departments(&self) -> &[DepartmentRow] {
        &self.departments
    }

    pub fn user_by_id(&self, id: &str) -> Option<&UserRow> {
        let id: i64 = id.parse().ok()?;
        self.users.iter().find(|u| u.id == id)
    }

    fn display_name(&self, username: &str) -> Option<&str> {
        self.users.iter().find(|u| u.username == username).map(|u| u.display_name.as_str())
    }

    /// A department's name from its code, in English for a reader of English when it has one (the code when it
    /// left the configuration).
    pub fn department<'a>(&'a self, code: &'a str, english: bool) -> &'a str {
        let found = self.departments.iter().find(|d| d.code == code);
        found.map_or(code, |d| name_for(&d.name, d.name_en.as_deref(), english))
    }

    /// The person behind a reconciliation's `asked_by` (`user:<sign-in>`, `manual:<sign-in>`), by name.
    pub fn person_who_asked(&self, asked_by: &str) -> Option<&str> {
        match asked_by.split_once(':') {
            Some(("user" | "manual", username)) => self.display_name(username),
            _ => None,
        }
    }

    /// Who acted, as the trail stored them (`user` and a sign-in name, a part of the system…), in words.
    pub fn actor(&self, l: Locale, kind: &str, label: &str) -> ActorView {
        match (kind, self.display_name(label)) {
            ("user", Some(name)) => ActorView { name: name.to_string(), person: true },
            _ => ActorView { name: stored_actor_label_in(l, kind, label), person: false },
        }
    }
}
