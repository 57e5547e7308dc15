import type { ErrorClass } from "./types.js";

/** One field error of a 422 answer. */
export interface FieldError {
  field: string;
  message: string;
  [extra: string]: unknown;
}

/** The `application/problem+json` body Rerun Gate answers errors with. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldError[];
}

export interface RerunGateErrorInit {
  /** HTTP status; 0 when no answer came (network). */
  status: number;
  /** The problem slug (`/problems/<slug>`), e.g. `idempotency-key-mismatch`; "" when the answer had none. */
  problem: string;
  /** Rerun Gate's own explanation (the problem's `detail`), or what went wrong locally. */
  detail: string;
  /** What to do about it, appended to the message. */
  advice?: string;
  /** The answer's `Retry-After`, in seconds, when it had one. */
  retryAfterSeconds?: number | undefined;
  errors?: FieldError[];
  cause?: unknown;
}

/**
 * Base class of every error the kit raises about Rerun Gate itself. `status`, `problem` (slug) and `detail`
 * come from the answer; the message says what happened and what to do.
 */
export class RerunGateError extends Error {
  readonly status: number;
  readonly problem: string;
  readonly detail: string;
  readonly retryAfterSeconds: number | undefined;

  constructor(init: RerunGateErrorInit) {
    const head = init.status >= 400 ? `Rerun Gate answered ${init.status}${init.problem ? ` ${init.problem}` : ""}` : "Rerun Gate";
    super(`${head}: ${init.detail}${init.advice ? ` — ${init.advice}` : ""}`, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.problem = init.problem;
    this.detail = init.detail;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

type Init = Omit<RerunGateErrorInit, "advice">;

/** 409 `idempotency-key-mismatch`: this Idempotency-Key was already used with another body (e.g. a "correction"). */
export class IdempotencyKeyMismatch extends RerunGateError {
  constructor(init: Init) {
    super({
      ...init,
      advice:
        "the registration with this key was already made with other content and nothing was changed; do not 'correct' a registered operation by sending it again — register a new process_id (with its own key) or resolve it in Rerun Gate",
    });
  }
}

/** 409 `idempotency-key-in-flight`: the first request with this key is still being processed. */
export class IdempotencyKeyInFlight extends RerunGateError {
  constructor(init: Init) {
    super({
      ...init,
      advice:
        "the first request with this key is still being processed; wait a few seconds and call register() again with the SAME key: it answers the stored result",
    });
  }
}

/** 409 `process-id-exists`: the process_id is already registered under another Idempotency-Key. */
export class ProcessIdExists extends RerunGateError {
  constructor(init: Init) {
    super({
      ...init,
      advice:
        "this process_id was registered with another Idempotency-Key; reuse the key of the first registration (the kit derives `register:<workflow>:<process_id>` when you pass none) or choose a new process_id",
    });
  }
}

/** 409 `idempotency-key-taken`: a step's idempotency key is already used by another step at the same outside system. */
export class IdempotencyKeyTaken extends RerunGateError {
  constructor(init: Init) {
    super({
      ...init,
      advice:
        "a step idempotency key must be unique at its outside system; derive it from this run's own process_id (the default `<process_id>:<step>` does) instead of reusing another run's key",
    });
  }
}

/** 401 `invalid-token`: the token is unknown, mistyped or revoked. */
export class InvalidToken extends RerunGateError {
  constructor(init: Init) {
    super({
      ...init,
      advice:
        "check the token you configured (it starts with `rg_`); an admin creates a new one with `server token create --name … --department …`",
    });
  }
}

/** 401 `token-missing`: no bearer token was sent. */
export class TokenMissing extends RerunGateError {
  constructor(init: Init) {
    super({ ...init, advice: "pass `token` (rg_…) to new Client({ baseUrl, token })" });
  }
}

/** 404: unknown operation, or a department outside the token's scope. */
export class NotFound extends RerunGateError {
  constructor(init: Init) {
    super({
      ...init,
      advice:
        "check the process_id (register it first) and that the token's department scope includes the operation's department",
    });
  }
}

/** 422: the content was refused; `errors` lists the fields. */
export class ValidationFailed extends RerunGateError {
  readonly errors: FieldError[];
  constructor(init: Init) {
    const fields = (init.errors ?? []).map((e) => `${e.field}: ${e.message}`).join("; ");
    super({
      ...init,
      detail: fields && !init.detail.includes(fields) ? `${init.detail} (${fields})` : init.detail,
      advice: "fix the fields named and send again; retrying the same content will be refused again",
    });
    this.errors = init.errors ?? [];
  }
}

/** 400: no Idempotency-Key, or a body that is not JSON (a bug in the caller or the kit). */
export class BadRequest extends RerunGateError {
  constructor(init: Init) {
    super({ ...init, advice: "this is a bug in the calling code; report it with the detail" });
  }
}

/** 429 after every retry: this client is over its rate. */
export class RateLimited extends RerunGateError {
  constructor(init: Init) {
    super({
      ...init,
      advice: `slow down: try again after ${init.retryAfterSeconds ?? "a few"} seconds, or raise \`retries\` on the Client`,
    });
  }
}

/** 502/503/504 after every retry: Rerun Gate (or a proxy in front of it) is not available. */
export class ServerUnavailable extends RerunGateError {
  constructor(init: Init) {
    super({ ...init, advice: "Rerun Gate is not available right now; try again later (the same call is safe to repeat)" });
  }
}

/** No usable answer after every retry (connection refused or reset, time-out, a broken answer). */
export class NetworkError extends RerunGateError {
  constructor(init: Init) {
    super({
      ...init,
      advice:
        "check that baseUrl is right and Rerun Gate is running; the same call is safe to repeat (same Idempotency-Key, same seq)",
    });
  }
}

/**
 * A step event was answered `applied: false` with a `last_seq` newer than the seq sent: the local seq store is
 * behind Rerun Gate (it was lost, restored from an old copy, or another process reports the same step).
 */
export class StaleSeq extends RerunGateError {
  readonly sentSeq: number;
  readonly lastSeq: number;
  constructor(init: Init & { sentSeq: number; lastSeq: number }) {
    super({
      ...init,
      advice: `the local seq store is behind Rerun Gate (sent seq ${init.sentSeq}, Rerun Gate has ${init.lastSeq}): make sure only one process reports this step and that its seq store (FileStore path) is kept across restarts; running the step again continues from seq ${init.lastSeq + 1}`,
    });
    this.sentSeq = init.sentSeq;
    this.lastSeq = init.lastSeq;
  }
}

/**
 * Throw this from a step callback to report the step `failed` with the class you choose: the outside call
 * certainly did not happen (e.g. a 4xx `validation` answer, a refused connection `unavailable`).
 */
export class StepFailed extends Error {
  readonly errorClass: ErrorClass;
  constructor(errorClass: ErrorClass, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StepFailed";
    this.errorClass = errorClass;
  }

  /**
   * The same as `outcomeOfStatus(status, message)`, kept for existing callers: a `StepFailed` for the statuses
   * where the outside system certainly did not act, but an `OutcomeUnknown` (class `timeout`) for 504.
   */
  static fromStatus(status: number, message?: string): StepFailed | OutcomeUnknown {
    return outcomeOfStatus(status, message);
  }
}

/**
 * Throw this from a step callback when the outside call went out but its result never came back: the step is
 * reported `unknown` (it may have happened) with class `result_unknown` unless you choose another
 * (`in_progress`, `cancel_requested`, `timeout`, `no_response`).
 */
export class OutcomeUnknown extends Error {
  readonly errorClass: ErrorClass;
  constructor(message: string, options?: { errorClass?: ErrorClass; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "OutcomeUnknown";
    this.errorClass = options?.errorClass ?? "result_unknown";
  }
}

/**
 * The error to throw from a step callback for an outside system's HTTP error status.
 *
 * - 504 (gateway timeout): the gateway gave up waiting, the system behind it may still have acted —
 *   `OutcomeUnknown` with class `timeout` (reported `unknown`; retry only with the same idempotency key).
 * - otherwise `StepFailed` (it certainly did not act): 401 `auth_expired`, 403 `unauthorized`,
 *   429 `rate_limited`, 502/503 `unavailable`, other 5xx `server_error`, other 4xx `validation`.
 */
export function outcomeOfStatus(status: number, message?: string): StepFailed | OutcomeUnknown {
  if (status === 504) {
    return new OutcomeUnknown(message ?? "the outside system answered 504 (gateway timeout): it may have acted", {
      errorClass: "timeout",
    });
  }
  let cls: ErrorClass;
  if (status === 401) cls = "auth_expired";
  else if (status === 403) cls = "unauthorized";
  else if (status === 429) cls = "rate_limited";
  else if (status === 502 || status === 503) cls = "unavailable";
  else if (status >= 500) cls = "server_error";
  else if (status >= 400) cls = "validation";
  else cls = "other";
  return new StepFailed(cls, message ?? `the outside system answered ${status}`);
}
