use super::*;

/// The kinds a serving process knows: the built-in ones and the demo's.
fn kinds() -> ConnectorKinds {
    crate::reconciliation::built_in_kinds().with(crate::demo::connector::DemoKind)
}

const GOOD: &str = r#"
[[department]]
code = "sales"
name = "営業部"

[[connector]]
name = "orders"
kind = "http_json"
url = "https://orders.example.com/{idempotency_key}"
api_key_env = "ORDERS_API_KEY"

[[workflow]]
name = "order-intake"
department = "sales"
rerun_url = "https://integrations.example.com/rerun"
signing_secret_env = "ORDER_INTAKE_SECRET"

[[workflow.step]]
name = "register_order"
connector = "orders"
side_effect = true

[[workflow.step]]
name = "note"
side_effect = false
deadline_seconds = 30
"#;

fn problem(text: &str) -> String {
    parse(text, "test.toml", &kinds()).unwrap_err().to_string()
}

#[test]
fn a_good_file_loads_with_defaults_filled_in() {
    let config = parse(GOOD, "test.toml", &kinds()).unwrap();
    assert_eq!(config.idempotency_retention_days, 30);
    let workflow = config.workflow("order-intake").unwrap();
    assert_eq!(workflow.approvals_required, 1);
    assert_eq!(workflow.steps[0].deadline_seconds, 600);
    assert_eq!(workflow.steps[1].deadline_seconds, 30);
    assert_eq!(workflow.version.len(), 16);
    let orders = &config.connectors[0];
    assert_eq!(orders.credential_envs["api_key_env"], "ORDERS_API_KEY");
    assert!(orders.settings.contains_key("url"));
}

#[test]
fn the_shipped_example_is_valid() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../rerun-gate.toml");
    let config = load(Path::new(path), &kinds()).unwrap();
    assert!(config.workflow("order-intake").is_some() && config.workflow("monthly-billing").is_some());
}

#[test]
fn an_unknown_department_is_reported_at_its_line_and_column() {
    let text = GOOD.replace("department = \"sales\"", "department = \"legal\"");
    assert_eq!(problem(&text), "test.toml:14:14: unknown department 'legal'");
}

#[test]
fn a_credential_written_into_the_file_is_refused() {
    let text = GOOD.replace("api_key_env = \"ORDERS_API_KEY\"", "api_key = \"sk_live_123\"");
    let message = problem(&text);
    assert!(message.contains("looks like a credential") && message.contains("api_key_env"), "{message}");
    assert!(!message.contains("sk_live_123"), "the secret must not be echoed: {message}");
}

#[test]
fn the_paths_of_an_ai_providers_token_counts_are_settings_not_credentials() {
    let with = |line: &str| GOOD.replace("api_key_env = \"ORDERS_API_KEY\"", line);
    let config = parse(&with("input_tokens = \"usage.input_tokens\"\noutput_tokens = \"usage.output_tokens\""), "t", &kinds());
    assert!(config.is_ok(), "{:?}", config.err());
    for credential in ["bot_token = \"x\"", "client_secret = \"x\"", "api_key = \"x\"", "db-password = \"x\""] {
        assert!(problem(&with(credential)).contains("looks like a credential"), "{credential}");
    }
}
