// Signed rerun calls, as Rerun Gate sends them (Standard Webhooks).
import { Webhook } from "standardwebhooks";

export const SECRET = "whsec_YXBpLWZ1enotb25seS1yZXJ1bi1zaWduaW5nLTIwMjY=";

/** A RerunCall body (the contract's example). */
export function rerunCall(overrides = {}) {
  return {
    type: "rerun.approved",
    rerun_id: "rr-01",
    process_id: "ORD-1107",
    workflow: "order-intake",
    steps: [{ name: "ai_summary", idempotency_key: "ORD-1107:ai_summary" }],
    requested_by: "佐藤 花子",
    approved_by: ["鈴木 一郎"],
    requested_by_id: 3,
    approved_by_ids: [5],
    approved_at: "2026-12-05T10:00:00Z",
    ...overrides,
  };
}

/** The body text and headers of a signed call; `at` moves the timestamp, `secret` signs with another key. */
export function signed(call, { id = call.rerun_id ?? "rr-01", at = new Date(), secret = SECRET, body } = {}) {
  const text = body ?? JSON.stringify(call);
  const sig = new Webhook(secret).sign(id, at, text);
  return {
    body: text,
    headers: {
      "content-type": "application/json",
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": sig,
      "idempotency-key": id,
    },
  };
}
