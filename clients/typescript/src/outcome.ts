import { OutcomeUnknown, StepFailed } from "./errors.js";
import type { ErrorClass } from "./types.js";

/** How a step's error is reported: `failed` (certainly did not happen) or `unknown` (it may have happened). */
export interface Outcome {
  type: "failed" | "unknown";
  errorClass: ErrorClass;
  message: string;
}

/** Connection errors where nothing was sent: the call certainly did not happen. */
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** Connection errors after the request went out: the answer was lost. */
const ANSWER_LOST = new Set([
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "ECONNRESET",
  "EPIPE",
  "ECONNABORTED",
]);

/** Time-outs while waiting for the answer. */
const TIMED_OUT = new Set(["ETIMEDOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

function chain(err: unknown): unknown[] {
  const out: unknown[] = [];
  let cur: unknown = err;
  while (cur !== undefined && cur !== null && out.length < 8 && !out.includes(cur)) {
    out.push(cur);
    if (cur instanceof AggregateError) out.push(...cur.errors);
    cur = (cur as { cause?: unknown }).cause;
  }
  return out;
}

function field(e: unknown, key: "name" | "code" | "message"): string {
  if (typeof e !== "object" || e === null) return "";
  const v = (e as Record<string, unknown>)[key];
  return typeof v === "string" ? v : "";
}

function messageOf(err: unknown): string {
  const parts = chain(err)
    .map((e) => field(e, "message") || (typeof e === "string" ? e : ""))
    .filter((m) => m !== "");
  return [...new Set(parts)].join(": ") || String(err);
}

/**
 * Classifies an error thrown by a step's outside call, following the rule of the contract: a call that timed
 * out or lost its answer is `unknown` (it may have happened: `timeout`, `no_response`), a call that certainly
 * did not happen (connection refused: `unavailable`) is `failed`. `StepFailed` and `OutcomeUnknown` say it
 * themselves; anything else is `failed` with class `other`.
 *
 * Use it in your own code to decide whether an outside call may be retried with the same idempotency key.
 */
export function classifyError(err: unknown): Outcome {
  if (err instanceof StepFailed) return { type: "failed", errorClass: err.errorClass, message: err.message };
  if (err instanceof OutcomeUnknown) return { type: "unknown", errorClass: err.errorClass, message: err.message };
  const links = chain(err);
  const message = messageOf(err);
  const names = links.map((e) => field(e, "name"));
  const codes = links.map((e) => field(e, "code"));
  const messages = links.map((e) => field(e, "message"));
  if (names.includes("AbortError") || names.includes("TimeoutError") || codes.some((c) => TIMED_OUT.has(c))) {
    return { type: "unknown", errorClass: "timeout", message };
  }
  if (codes.some((c) => ANSWER_LOST.has(c)) || messages.some((m) => m === "terminated" || m === "other side closed")) {
    return { type: "unknown", errorClass: "no_response", message };
  }
  const aggregate = links.find((e): e is AggregateError => e instanceof AggregateError);
  const aggregateNotSent =
    aggregate !== undefined && aggregate.errors.length > 0 && aggregate.errors.every((e) => NOT_SENT.has(field(e, "code")));
  if (aggregateNotSent || codes.some((c) => NOT_SENT.has(c))) {
    return { type: "failed", errorClass: "unavailable", message };
  }
  // fetch's own "fetch failed" with a cause we do not know: whether the request went out is not known.
  if (err instanceof TypeError && field(err, "message") === "fetch failed") {
    return { type: "unknown", errorClass: "no_response", message };
  }
  return { type: "failed", errorClass: "other", message };
}
