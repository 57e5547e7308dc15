/**
 * Wire types of the Rerun Gate ingestion API and of the rerun call.
 *
 * Convention of this kit: everything that comes FROM Rerun Gate (views, answers, the rerun call) keeps the
 * wire's snake_case field names exactly as the OpenAPI document spells them, so what you log and what the
 * document says are the same. The options you pass TO the kit's functions are camelCase.
 */

/** Any JSON object (step or operation content). */
export type JsonObject = { [key: string]: unknown };

export type OperationStatus =
  | "running"
  | "stalled"
  | "on_hold"
  | "rerun_pending"
  | "rerunning"
  | "completed"
  | "resolved";

export type StepState = "not_started" | "started" | "succeeded" | "failed" | "unknown";

export type StepEventType = "started" | "succeeded" | "failed" | "unknown" | "heartbeat";

/** The error classes Rerun Gate accepts with a `failed` or `unknown` event (any other is refused with 422). */
export const ERROR_CLASSES = [
  "auth_expired",
  "unauthorized",
  "rate_limited",
  "server_error",
  "unavailable",
  "temporary",
  "timeout",
  "no_response",
  "duplicate_notification",
  "stale_notification",
  "in_progress",
  "cancel_requested",
  "result_unknown",
  "validation",
  "other",
] as const;

export type ErrorClass = (typeof ERROR_CLASSES)[number];

export type Verdict =
  | "executed"
  | "executed_not_compared"
  | "executed_mismatch"
  | "not_executed"
  | "in_progress"
  | "unknown"
  | "lookup_failed";

/** Tokens one AI generation used, as the provider reports them. */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export interface StepError {
  class: string;
  message: string;
}

export interface ComparedField {
  name: string;
  matches: boolean;
  expected?: unknown;
  found?: unknown;
}

export interface Evidence {
  records: number;
  compared: ComparedField[];
  summary: string;
  basis?: JsonObject | null;
  external_at?: string | null;
  external_id?: string | null;
  status_text?: string | null;
}

export interface ReconciliationView {
  verdict: Verdict;
  connector: string;
  checked_at: string;
  asked_by: string;
  evidence: Evidence;
  asked_by_person?: string | null;
  superseded_at?: string | null;
}

export interface AiAttemptView {
  result_id: string;
  adopted: boolean;
  first_seen_at: string;
  background_status?: string | null;
  cancel_confirmed_at?: string | null;
  cancel_requested_at?: string | null;
  cost_micro_yen?: number | null;
  usage?: Usage | null;
}

/** One step of an operation, as Rerun Gate stores it. */
export interface StepView {
  position: number;
  name: string;
  state: StepState;
  idempotency_key: string;
  attempts: number;
  /** The newest applied event's seq (heartbeats are not kept). */
  last_seq?: number | null;
  result_id?: string | null;
  /** The completion flag: set only when success is confirmed. */
  completed_at?: string | null;
  error?: StepError | null;
  latest_verdict?: Verdict | null;
  reconciliation?: ReconciliationView | null;
  ai_attempts?: AiAttemptView[];
}

/** A warning in a registration's answer, e.g. kind `step_content_missing`. */
export interface RegistrationWarning {
  kind: "step_content_missing" | "step_content_not_read" | "connector_reads_no_field" | (string & {});
  step: string;
  /** What is wrong and what to do, in English. */
  message: string;
}

/** One operation (one run of a workflow), as Rerun Gate stores it. */
export interface OperationView {
  process_id: string;
  workflow: string;
  department: string;
  status: OperationStatus;
  created_at: string;
  updated_at: string;
  steps: StepView[];
  business_key?: string | null;
  drill_id?: string | null;
  event?: string | null;
  failure_class?: string | null;
  possible_duplicate_of?: string | null;
  warnings?: RegistrationWarning[];
}

/** What `Client.register` returns: the operation, plus what the HTTP exchange said. */
export interface Registration extends OperationView {
  /** `true` when Rerun Gate answered the stored answer of an earlier call with the same key and body. */
  replayed: boolean;
  /** The answer's warnings (each was also logged with what to do); empty when there were none. */
  warnings: RegistrationWarning[];
}

/** `POST /api/v1/operations` body (wire form). */
export interface RegisterOperationBody {
  process_id: string;
  workflow: string;
  department: string;
  steps: { name: string; idempotency_key: string; content?: JsonObject | null }[];
  business_key?: string | null;
  content?: JsonObject | null;
}

/** A step event body (wire form). */
export interface StepEventBody {
  seq: number;
  type: StepEventType;
  result_id?: string | null;
  error?: { class: ErrorClass; message: string } | null;
  at?: string | null;
  usage?: Usage | null;
}

/** The answer to a step event. */
export interface StepEventAnswer {
  applied: boolean;
  step: StepView;
}

/** One step a rerun asks to run again, with its ORIGINAL idempotency key. */
export interface RerunStep {
  name: string;
  idempotency_key: string;
}

/** The body of a rerun call (Rerun Gate -> integration), as on the wire. */
export interface Rerun {
  type: "rerun.approved" | "rerun.test";
  rerun_id: string;
  process_id: string;
  workflow: string;
  /** ONLY the steps to run again, each with its original idempotency key. */
  steps: RerunStep[];
  /** Display names, as people know them (they can change). */
  requested_by?: string;
  approved_by?: string[];
  /** The same people by their stable user ID. */
  requested_by_id?: number;
  approved_by_ids?: number[];
  approved_at?: string | null;
  [extra: string]: unknown;
}
