//! The rerun call in the OpenAPI document (OpenAPI 3.1 `webhooks`): what Rerun Gate sends to a workflow's
//! `rerun_url` and what it expects back. utoipa 5 has no `webhooks` field, so the section is added as a
//! top-level member beside the others (its extensions are written at the document's top level).
use serde_json::json;
use utoipa::Modify;

pub struct RerunWebhook;

/// How long the dispatcher waits for the receiver's answer before the outcome is unknown (`dispatch_timeout`).
const ANSWER_WITHIN: &str =
    "the dispatch timeout (10 s unless the server's `RERUN_GATE_DISPATCH_TIMEOUT_SECONDS` says otherwise)";

impl Modify for RerunWebhook {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let header = |description: &str, example: &str| {
            json!({"required": true, "description": description,
                   "schema": {"type": "string"}, "example": example})
        };
        let answer = |description: &str| {
            json!({"description": description,
                   "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RerunAnswer"}}}})
        };
        let description = format!(
            "Sent to the workflow's `rerun_url` once the rerun is approved, signed per Standard Webhooks with the \
             workflow's `signing_secret_env` secret. Run only the listed steps, each with its original idempotency \
             key. The same `webhook-id` (the rerun ID) comes on every attempt: deduplicate on it and answer 2xx \
             again without acting twice. Answer within {ANSWER_WITHIN}, before long work (hand it to a queue): \
             no answer in time is an unknown outcome, never resent blindly. Refuse unsigned, wrongly signed and \
             stale calls (timestamp more than 5 minutes away) with 401. `type: rerun.test` comes from \
             `server integration check`: verify and deduplicate it, change nothing."
        );
        let operation = json!({
            "operationId": "rerunApproved",
            "summary": "An approved rerun of a stalled operation's unfinished steps",
            "description": description,
            "parameters": [
                {"in": "header", "name": "webhook-id", "required": true, "schema": {"type": "string"},
                 "description": "The rerun ID; the same on every attempt"},
                {"in": "header", "name": "webhook-timestamp", "required": true, "schema": {"type": "string"},
                 "description": "Unix seconds when this attempt was signed"},
                {"in": "header", "name": "webhook-signature", "required": true, "schema": {"type": "string"},
                 "description": "`v1,<base64 HMAC-SHA256 of \"id.timestamp.body\">`"},
                {"in": "header", "name": "idempotency-key", "required": true, "schema": {"type": "string"},
                 "description": "The rerun ID again, for receivers that deduplicate on this header"},
            ],
            "requestBody": {"required": true,
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RerunCall"}}}},
            "responses": {
                "200": answer(
                    "Received (`done`), or received before (`duplicate`), or a verified `rerun.test` (`test`)"
                ),
                "401": answer("Unsigned, wrongly signed or stale: refused; the dispatch fails and a person looks"),
                "410": {"description": "This endpoint is retired: the dispatch ends as endpoint gone"},
                "422": answer("Not a rerun call (`refused`): the dispatch fails and a person looks"),
                "429": {"description": "Busy: sent again after `Retry-After` seconds (or the backoff)",
                        "headers": {"Retry-After": header("Seconds to wait", "5")}},
                "500": answer("The handler failed (`failed`): sent again later with the same `webhook-id`"),
                "503": {"description": "This `webhook-id` is still being handled (`in_progress`): sent again after \
                                        `Retry-After`",
                        "headers": {"Retry-After": header("Seconds to wait", "5")},
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RerunAnswer"}}}},
            },
            "security": [],
        });
        let extensions = openapi.extensions.get_or_insert_with(Default::default);
        extensions.insert("webhooks".into(), json!({"rerunApproved": {"post": operation}}));
    }
}
