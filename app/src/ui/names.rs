//! Workflows and steps by the names their readers know (`api::names`): loaded by each page that shows them,
//! beside its own data.
use super::data::{SameJson, resource};
use crate::api::names::load_names;
use crate::contract::AppError;
use crate::contract::names::Names;
use crate::i18n::Locale;
use leptos::prelude::*;

/// The names as they load: started in a page's body, awaited in its `Suspend`.
#[derive(Clone, Copy)]
pub struct NamesLoad(Resource<Result<Names, AppError>, SameJson>);

pub fn use_names() -> NamesLoad {
    NamesLoad(resource(|| (), |_| load_names()))
}

impl NamesLoad {
    /// The names; without them (a failed load) each code reads as itself.
    pub async fn get(self) -> Names {
        self.0.await.unwrap_or_default()
    }
}

/// Whether this page is read in English.
pub fn english() -> bool {
    super::labels::locale() == Locale::en
}

/// A name with its code beside it in small type (when they differ), where people need the code too.
#[component]
pub fn Coded(name: String, code: String) -> impl IntoView {
    let code = (name != code).then_some(code);
    view! {
        <span data-entered>{name}</span>
        {code
            .map(|c| {
                view! {
                    " "
                    <small class="code">
                        <code>{c}</code>
                    </small>
                }
            })}
    }
}

/// A step's name as its reader knows it (`names`: each step's code and name, from `Names::step`).
pub fn name_of(names: &[(String, String)], code: &str) -> String {
    names.iter().find(|(c, _)| c == code).map_or_else(|| code.to_string(), |(_, name)| name.clone())
}
