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

/// The steps of one workflow, as their reader calls them (`Names::step`).
#[derive(Clone)]
pub struct StepNames {
    names: Names,
    workflow: String,
}

impl StepNames {
    pub fn new(names: Names, workflow: &str) -> Self {
        StepNames { names, workflow: workflow.to_string() }
    }

    pub fn of(&self, step: &str) -> String {
        self.names.step(&self.workflow, step, english()).to_string()
    }
}
