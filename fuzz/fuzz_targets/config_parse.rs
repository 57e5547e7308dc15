//! The configuration file: any text is read into a configuration or refused with a problem at a real place in
//! the text (`file:line:column: problem`, the line and column inside the text), never a panic.
#![no_main]
use backend::config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    // The kinds a serving process knows: the built-in ones and the demo's.
    let kinds = backend::reconciliation::built_in_kinds().with(backend::demo::connector::DemoKind);
    match config::parse(text, "fuzz.toml", &kinds) {
        Ok(config) => {
            for workflow in &config.workflows {
                assert!(!workflow.steps.is_empty(), "a workflow has steps");
                assert_eq!(workflow.version.len(), 16);
            }
        }
        Err(e) => {
            let lines: Vec<&str> = text.split('\n').collect();
            assert!(e.line >= 1 && e.line <= lines.len(), "line {} of {}: {e}", e.line, lines.len());
            let width = lines[e.line - 1].chars().count();
            assert!(e.column >= 1 && e.column <= width + 1, "column {} of {}: {e}", e.column, width + 1);
            assert!(!e.problem.trim().is_empty(), "a refusal says what is wrong");
            assert!(e.to_string().starts_with(&format!("fuzz.toml:{}:{}: ", e.line, e.column)));
        }
    }
});
