//! What the pages call workflows and steps: the configuration's titles in both languages, beside the codes the
//! integration sends (`[[workflow]] title`, `title_en`). Sent once with each page; a code without a title reads
//! as itself.
use domain::configuration::{Config, Title};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Names {
    pub workflows: Vec<WorkflowNames>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowNames {
    pub code: String,
    pub title: Title,
    pub steps: Vec<(String, Title)>,
}

impl Names {
    pub fn of(config: &Config) -> Self {
        let workflows = config.workflows.iter().map(|w| WorkflowNames {
            code: w.name.clone(),
            title: w.title.clone(),
            steps: w.steps.iter().map(|s| (s.name.clone(), s.title.clone())).collect(),
        });
        Names { workflows: workflows.collect() }
    }

    /// A workflow as its reader calls it.
    pub fn workflow<'a>(&'a self, code: &'a str, english: bool) -> &'a str {
        self.workflows.iter().find(|w| w.code == code).map_or(code, |w| w.title.for_reader(code, english))
    }

    /// A step of a workflow as its reader calls it.
    pub fn step<'a>(&'a self, workflow: &str, step: &'a str, english: bool) -> &'a str {
        let steps = self.workflows.iter().find(|w| w.code == workflow).map(|w| w.steps.as_slice()).unwrap_or(&[]);
        steps.iter().find(|(code, _)| code == step).map_or(step, |(_, title)| title.for_reader(step, english))
    }
}
