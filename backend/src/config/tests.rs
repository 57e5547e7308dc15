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
fn titles_name_workflows_and_steps_in_both_languages_and_void_no_approval() {
    let titled = GOOD
        .replace(
            "signing_secret_env = \"ORDER_INTAKE_SECRET\"",
            "signing_secret_env = \"ORDER_INTAKE_SECRET\"\ntitle = \"受注の取り込み\"\ntitle_en = \"Order intake\"",
        )
        .replace("side_effect = true", "side_effect = true\ntitle = \"受注の登録\"");
    let config = parse(&titled, "test.toml", &kinds()).unwrap();
    let workflow = config.workflow("order-intake").unwrap();
    assert_eq!(workflow.title.for_reader("order-intake", false), "受注の取り込み");
    assert_eq!(workflow.title.for_reader("order-intake", true), "Order intake");
    let (step, note) = (&workflow.steps[0], &workflow.steps[1]);
    assert_eq!(step.title.for_reader(&step.name, false), "受注の登録");
    assert_eq!(step.title.for_reader(&step.name, true), "register_order", "no English title: the code");
    assert_eq!(note.title.for_reader(&note.name, false), "note");
    // The version of the definition as it was before titles existed: an upgrade voids no approval.
    assert_eq!(workflow.version, "e123b54ff53e1554");
    assert_eq!(parse(GOOD, "test.toml", &kinds()).unwrap().workflow("order-intake").unwrap().version, workflow.version);
    assert!(problem(&titled.replace("受注の登録", " ")).contains("title and title_en, when given, are names"));
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
    let config =
        parse(&with("input_tokens = \"usage.input_tokens\"\noutput_tokens = \"usage.output_tokens\""), "t", &kinds());
    assert!(config.is_ok(), "{:?}", config.err());
    for credential in ["bot_token = \"x\"", "client_secret = \"x\"", "api_key = \"x\"", "db-password = \"x\""] {
        assert!(problem(&with(credential)).contains("looks like a credential"), "{credential}");
    }
}

#[test]
fn a_side_effect_step_without_connector_is_refused() {
    let text = GOOD.replace("name = \"note\"\nside_effect = false", "name = \"note\"\nside_effect = true");
    assert!(problem(&text).contains("needs a connector"));
}

#[test]
fn syntax_errors_and_unknown_keys_name_their_line() {
    assert!(problem("[[department]\ncode = 1").starts_with("test.toml:1:"));
    let message = problem(&GOOD.replace("rerun_url", "rerun_uri"));
    assert!(message.starts_with("test.toml:") && message.contains("rerun_uri"), "{message}");
}

#[test]
fn unknown_connectors_kinds_and_duplicates_are_refused() {
    assert!(
        problem(&GOOD.replace("connector = \"orders\"", "connector = \"billing\""))
            .contains("unknown connector 'billing'")
    );
    assert!(
        problem(&GOOD.replace("kind = \"http_json\"", "kind = \"carrier-pigeon\"")).contains("unknown connector kind")
    );
    let twice = format!("{GOOD}\n[[department]]\ncode = \"sales\"\nname = \"again\"\n");
    assert!(problem(&twice).contains("defined twice"));
}

#[test]
fn zero_approvals_or_a_zero_timeout_are_refused() {
    let text = GOOD.replace(
        "signing_secret_env = \"ORDER_INTAKE_SECRET\"",
        "signing_secret_env = \"ORDER_INTAKE_SECRET\"\napprovals_required = 0",
    );
    assert!(problem(&text).contains("approvals_required must be at least 1"));
    assert!(problem(&GOOD.replace("deadline_seconds = 30", "deadline_seconds = 0")).contains("at least 1 second"));
}

#[test]
fn a_mail_relay_is_configured_with_the_port_its_security_implies_and_credentials_from_the_environment() {
    let text = format!(
        "[mail]\nsmtp_host = \"smtp.example.co.jp\"\nsecurity = \"starttls\"\nfrom = \"Rerun Gate <gate@example.co.jp>\"\n\
         username_env = \"SMTP_USER\"\npassword_env = \"SMTP_PASSWORD\"\n{GOOD}"
    );
    let mail = parse(&text, "test.toml", &kinds()).unwrap().mail.unwrap();
    assert_eq!((mail.smtp_port, mail.security), (587, MailSecurity::Starttls));
    assert_eq!(mail.password_env.as_deref(), Some("SMTP_PASSWORD"));
}

#[test]
fn mail_in_clear_text_is_only_allowed_to_a_relay_on_loopback_and_a_password_in_the_file_is_refused() {
    let mail = |host: &str, extra: &str| {
        format!("[mail]\nsmtp_host = \"{host}\"\nsecurity = \"none\"\nfrom = \"gate@example.co.jp\"\n{extra}{GOOD}")
    };
    assert!(parse(&mail("127.0.0.1", ""), "test.toml", &kinds()).is_ok());
    assert!(problem(&mail("smtp.example.co.jp", "")).contains("only for a relay on loopback"));
    let message = problem(&mail("127.0.0.1", "password = \"hunter2-secret\"\n"));
    assert!(message.contains("unknown field `password`") && !message.contains("hunter2"), "{message}");
}

#[test]
fn thresholds_name_a_known_indicator_a_limit_of_at_least_zero_and_a_week_or_month() {
    let with = |threshold: &str| format!("{GOOD}\n[[threshold]]\n{threshold}\n");
    let config =
        parse(&with("indicator = \"rerun_error_rate\"\nabove = 12.5\ndepartment = \"sales\""), "test.toml", &kinds())
            .unwrap();
    let limit = &config.thresholds[0];
    assert_eq!((limit.indicator, limit.above, limit.period), (Indicator::RerunErrorRate, 12.5, PeriodKind::Week));
    assert_eq!(config.review_time_zone, "Asia/Tokyo");
    assert!(
        problem(&with("indicator = \"happiness\"\nabove = 1"))
            .contains("unknown indicator 'happiness' (known: missing_process_id,")
    );
    assert!(problem(&with("indicator = \"stalled\"\nabove = -1")).contains("above must be a number of at least 0"));
    assert!(
        problem(&with("indicator = \"stalled\"\nabove = 1\nperiod = \"year\""))
            .contains("period must be \"week\" or \"month\"")
    );
    assert!(
        problem(&with("indicator = \"stalled\"\nabove = 1\ndepartment = \"legal\""))
            .contains("unknown department 'legal'")
    );
    let zone = GOOD.replace("[[department]]", "[settings]\nreview_time_zone = \"Mars/Olympus\"\n\n[[department]]");
    assert!(problem(&zone).contains("review_time_zone: unknown time zone 'Mars/Olympus'"), "{}", problem(&zone));
}

#[test]
fn the_audit_section_signs_every_five_minutes_by_default_and_guards_the_time_stamping_url() {
    assert_eq!(parse(GOOD, "test.toml", &kinds()).unwrap().audit, AuditConfig::default());
    let with = |audit: &str| format!("[audit]\n{audit}\n{GOOD}");
    let config =
        parse(&with("checkpoint_minutes = 15\ntimestamp_url = \"https://tsa.example.com/\""), "t.toml", &kinds())
            .unwrap();
    assert_eq!(config.audit.checkpoint_minutes, 15);
    assert_eq!(config.audit.timestamp_url.as_deref(), Some("https://tsa.example.com/"));
    assert!(problem(&with("checkpoint_minutes = 0")).contains("checkpoint_minutes must be 1 to 1440"));
    for refused in ["http://127.0.0.1:3318/", "http://169.254.169.254/", "file:///etc/passwd"] {
        let message = problem(&with(&format!("timestamp_url = \"{refused}\"")));
        assert!(message.contains("timestamp_url:") && message.contains("test.toml:2"), "{refused}: {message}");
    }
    assert!(
        parse(&with("timestamp_url = \"http://127.0.0.1:3318/\"\ntimestamp_allow_loopback = true"), "t", &kinds())
            .is_ok()
    );
}

const OIDC: &str = r#"
[sign_in]
local_passwords = "break_glass"
break_glass_users = ["root"]

[sign_in.oidc]
issuer = "https://login.microsoftonline.com/0000/v2.0"
client_id = "rerun-gate"
client_secret_env = "RERUN_GATE_OIDC_SECRET"

[[sign_in.oidc.group]]
group = "sales-approvers"
roles = ["manager"]
departments = ["sales"]
"#;

#[test]
fn a_company_provider_maps_groups_to_roles_in_known_departments_and_keeps_passwords_for_break_glass() {
    let config = parse(&format!("{OIDC}{GOOD}"), "test.toml", &kinds()).unwrap();
    let oidc = config.sign_in.oidc.as_ref().unwrap();
    assert_eq!(oidc.scopes, ["openid", "profile", "email"]);
    assert_eq!((oidc.groups_claim.as_str(), oidc.username_claim.as_str()), ("groups", "preferred_username"));
    assert_eq!(oidc.groups[0].roles, [domain::roles::Role::Manager]);
    assert!(config.sign_in.password_allowed_for("root") && !config.sign_in.password_allowed_for("sato"));
    assert!(parse(GOOD, "test.toml", &kinds()).unwrap().sign_in.password_allowed_for("sato"), "no provider: passwords");

    for (change, expected) in [
        (("departments = [\"sales\"]", "departments = [\"cafeteria\"]"), "unknown department 'cafeteria'"),
        (("roles = [\"manager\"]", "roles = [\"boss\"]"), "unknown role 'boss'"),
        (("https://login.microsoftonline.com/0000/v2.0", "http://10.0.0.5/"), "issuer: address 10.0.0.5"),
        (
            ("client_secret_env = \"RERUN_GATE_OIDC_SECRET\"", "client_secret = \"s3cret\""),
            "unknown field `client_secret`",
        ),
    ] {
        let message = problem(&format!("{}{GOOD}", OIDC.replace(change.0, change.1)));
        assert!(message.contains(expected) && !message.contains("s3cret"), "{expected}: {message}");
    }
    let without_provider = "[sign_in]\nlocal_passwords = \"break_glass\"\n";
    assert!(problem(&format!("{without_provider}{GOOD}")).contains("needs [sign_in.oidc]"));
}

#[test]
fn a_workflow_runs_its_bulk_reruns_in_the_default_stages_unless_its_canary_says_otherwise() {
    let config = parse(GOOD, "test.toml", &kinds()).unwrap();
    let default = config.workflow("order-intake").unwrap().canary.clone();
    assert_eq!(default, Some(domain::canary::CanaryConfig::default()));
    let version = config.workflow("order-intake").unwrap().version.clone();

    let tuned = format!("{GOOD}\n[workflow.canary]\nsize = 5\nsettle_seconds = 10\non_failure = \"pause\"\n");
    let config = parse(&tuned, "test.toml", &kinds()).unwrap();
    let workflow = config.workflow("order-intake").unwrap();
    let canary = workflow.canary.clone().unwrap();
    assert_eq!((canary.size, canary.settle_seconds, canary.stages), (5, 10, vec![25, 100]));
    assert_eq!(canary.on_failure, domain::canary::OnFailure::Pause);
    assert_eq!(workflow.version, version, "the stages are a bulk rerun's plan, not the workflow's definition");

    let off = format!("{GOOD}\n[workflow.canary]\nenabled = false\n");
    assert_eq!(parse(&off, "test.toml", &kinds()).unwrap().workflow("order-intake").unwrap().canary, None);
    assert!(problem(&format!("{GOOD}\n[workflow.canary]\nstages = [50, 25]\n")).contains("larger than the one before"));
    assert!(problem(&format!("{GOOD}\n[workflow.canary]\non_failure = \"stop\"\n")).contains("pause_and_stop"));
    assert!(problem(&format!("{GOOD}\n[workflow.canary]\nsize = 0\n")).contains("at least 1"));
}
