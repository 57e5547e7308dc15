import {
  BadRequest,
  IdempotencyKeyInFlight,
  IdempotencyKeyMismatch,
  IdempotencyKeyTaken,
  InvalidToken,
  NetworkError,
  NotFound,
  ProcessIdExists,
  RateLimited,
  RerunGateError,
  ServerUnavailable,
  StaleSeq,
  TokenMissing,
  ValidationFailed,
  type FieldError,
} from "./errors.js";
import { classifyError } from "./outcome.js";
import { markReported } from "./reported.js";
import { MemoryStore, type SeqStore } from "./stores.js";
import type {
  JsonObject,
  OperationView,
  RegisterOperationBody,
  Registration,
  RegistrationWarning,
  StepEventAnswer,
  StepEventBody,
  StepView,
  Usage,
} from "./types.js";

/** Where the kit writes what you should know: `warn` for things to act on, `error` for failures. */
export interface Logger {
  warn(message: string): void;
  error(message: string): void;
}

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface ClientOptions {
  /** Rerun Gate's base URL, e.g. `https://rerun-gate.example.co.jp` (a trailing slash is dropped). */
  baseUrl: string;
  /** The API token (`rg_…`) from `server token create`. */
  token: string;
  /** The fetch to use (default: the platform's `fetch`); wrap it to add a proxy agent, tracing, or faults. */
  fetch?: FetchLike;
  /** How many times a call is retried after a network error or a 429/502/503/504 answer (default 5). */
  retries?: number;
  /** The first retry's delay; each next one doubles it, with jitter, at most 30 s (default 500). */
  backoffMs?: number;
  /** How long one HTTP exchange may take before it is abandoned and retried (default 10 000). */
  timeoutMs?: number;
  /** Where the step helper keeps seqs (default: a MemoryStore; use a FileStore to survive restarts). */
  seqStore?: SeqStore;
  /** How to wait between retries (tests inject a fake). */
  sleep?: (ms: number) => Promise<void>;
  /** Where log lines go (default: `console`). */
  logger?: Logger;
}

export interface RegisterStepInput {
  name: string;
  /** The idempotency key the outside system sees (default `${processId}:${name}`). */
  idempotencyKey?: string;
  /** The fields the outside system compares (e.g. `{ amount: 4000, currency: "JPY" }`). */
  content?: JsonObject;
}

export interface RegisterInput {
  processId: string;
  workflow: string;
  department: string;
  /** Every step of the workflow, in order. */
  steps: RegisterStepInput[];
  businessKey?: string;
  content?: JsonObject;
  /** The registration's own Idempotency-Key (default `register:${workflow}:${processId}`). */
  idempotencyKey?: string;
}

/** What the step callback gets. */
export interface StepContext {
  readonly processId: string;
  readonly name: string;
  /** The step's idempotency key as registered: send it to the outside system (the same on every run). */
  readonly idempotencyKey: string;
  /** The step's current seq (the `started` event's). */
  readonly seq: number;
  /** The step as Rerun Gate had it before this run. */
  readonly view: StepView;
  /** Tokens used so far (AI steps): sent with heartbeats and the final event. */
  usage: Usage | undefined;
  /** Send a heartbeat now (with the current seq) besides the timer's. */
  heartbeat(): Promise<void>;
}

export interface WithStepOptions {
  /** Heartbeat period while the callback runs (default 30 000; 0 disables). */
  heartbeatEveryMs?: number;
}

const RETRY_STATUSES = new Set([429, 502, 503, 504]);
const MAX_BACKOFF_MS = 30_000;

interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

interface RequestSpec {
  method: "GET" | "POST";
  path: string;
  body?: unknown;
  idempotencyKey?: string;
  /** Override of the client's retries (heartbeats do not retry: the next tick does). */
  retries?: number;
}

/** The payload's JSON a 2xx answer must carry; a broken one is retried like a lost answer. */
class BrokenAnswer extends Error {
  override readonly name = "BrokenAnswer";
}

function parseRetryAfter(value: string | null): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  if (!Number.isNaN(date)) return Math.max(0, (date - Date.now()) / 1000);
  return undefined;
}

function isNetworkError(e: unknown): boolean {
  if (e instanceof BrokenAnswer) return true;
  if (e instanceof TypeError) return true; // fetch failed, terminated (body cut), ...
  const name = (e as { name?: unknown } | null)?.name;
  return name === "AbortError" || name === "TimeoutError";
}

function problemError(status: number, body: unknown, text: string, retryAfterSeconds: number | undefined): RerunGateError {
  const p = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  const type = typeof p["type"] === "string" ? p["type"] : "";
  const problem = type.startsWith("/problems/") ? type.slice("/problems/".length) : type.split("/").pop() ?? "";
  const detail =
    typeof p["detail"] === "string" && p["detail"] !== ""
      ? p["detail"]
      : typeof p["title"] === "string"
        ? p["title"]
        : text.slice(0, 300) || `HTTP ${status}`;
  const errors = Array.isArray(p["errors"]) ? (p["errors"] as FieldError[]) : undefined;
  const init = { status, problem, detail, errors, retryAfterSeconds };
  switch (problem) {
    case "idempotency-key-mismatch":
      return new IdempotencyKeyMismatch(init);
    case "idempotency-key-in-flight":
      return new IdempotencyKeyInFlight(init);
    case "process-id-exists":
      return new ProcessIdExists(init);
    case "idempotency-key-taken":
      return new IdempotencyKeyTaken(init);
    case "invalid-token":
      return new InvalidToken(init);
    case "token-missing":
      return new TokenMissing(init);
  }
  if (status === 401) return new InvalidToken(init);
  if (status === 404) return new NotFound(init);
  if (status === 422) return new ValidationFailed(init);
  if (status === 400) return new BadRequest(init);
  if (status === 429) return new RateLimited(init);
  if (status === 502 || status === 503 || status === 504) return new ServerUnavailable(init);
  return new RerunGateError({ ...init, advice: "unexpected answer; see Rerun Gate's log (x-request-id) for why" });
}

const blank = (v: unknown): boolean => typeof v !== "string" || v.trim() === "";

/** Refuses what Rerun Gate would refuse anyway, or what would silently give a step a useless key. */
function checkRegisterInput(input: RegisterInput): void {
  const what = `rerun-gate: register(${JSON.stringify(input.processId)})`;
  if (!Array.isArray(input.steps)) throw new TypeError(`${what}: \`steps\` must be an array of { name, idempotencyKey?, content? }`);
  input.steps.forEach((s, i) => {
    if (blank(s?.name)) {
      throw new TypeError(`${what}: steps[${i}] has an empty \`name\`; give every step the name it has in the workflow`);
    }
    if (s.idempotencyKey !== undefined && blank(s.idempotencyKey)) {
      throw new TypeError(
        `${what}: step '${s.name}' has an empty \`idempotencyKey\`; pass the key its outside system sees, or leave it out to use \`<processId>:<name>\``,
      );
    }
  });
  if (input.idempotencyKey !== undefined && blank(input.idempotencyKey)) {
    throw new TypeError(
      `${what}: the registration's \`idempotencyKey\` is empty; leave it out to use \`register:<workflow>:<processId>\``,
    );
  }
}

const ADVICE: Record<string, string> = {
  step_content_missing:
    "pass the step's `content` (the fields its outside system compares, e.g. amount and currency) in register() so reconciliation can tell a correct execution from a wrong one",
  step_content_not_read:
    "name the step content's fields as the connector reads them (the warning lists them): a field it does not read is not compared",
  connector_reads_no_field:
    "ask the Rerun Gate administrator to give the step's connector a `fields` mapping: until then nothing of what ran is compared with the step",
};

/**
 * The Rerun Gate client: registers operations, reports step events through the step helper, and reads
 * operations back. Every call is retried on network errors and 429/502/503/504 (honouring Retry-After) with
 * the same Idempotency-Key or seq, so a retry never does anything twice.
 */
export class Client {
  readonly baseUrl: string;
  private readonly token: string;
  private readonly fetchFn: FetchLike;
  private readonly retries: number;
  private readonly backoffMs: number;
  private readonly timeoutMs: number;
  private readonly seqStore: SeqStore;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly logger: Logger;

  constructor(options: ClientOptions) {
    if (!options.baseUrl) throw new TypeError("rerun-gate: new Client needs baseUrl (e.g. http://127.0.0.1:3000)");
    if (!options.token) throw new TypeError("rerun-gate: new Client needs token (rg_…, from `server token create`)");
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
    this.retries = options.retries ?? 5;
    this.backoffMs = options.backoffMs ?? 500;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.seqStore = options.seqStore ?? new MemoryStore();
    this.sleep = options.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.logger = options.logger ?? console;
  }

  /**
   * Registers one run of a workflow with every step's idempotency key. Sending the same registration again
   * (same key, same content) answers the stored result with `replayed: true`: call it freely on restarts.
   * An empty step `name` or `idempotencyKey` (or registration `idempotencyKey`) is refused with a TypeError
   * before anything is sent.
   */
  async register(input: RegisterInput): Promise<Registration> {
    checkRegisterInput(input);
    const body: RegisterOperationBody = {
      process_id: input.processId,
      workflow: input.workflow,
      department: input.department,
      steps: input.steps.map((s) => ({
        name: s.name,
        idempotency_key: s.idempotencyKey ?? `${input.processId}:${s.name}`,
        ...(s.content !== undefined ? { content: s.content } : {}),
      })),
      ...(input.businessKey !== undefined ? { business_key: input.businessKey } : {}),
      ...(input.content !== undefined ? { content: input.content } : {}),
    };
    const key = input.idempotencyKey ?? `register:${input.workflow}:${input.processId}`;
    const answer = await this.request({ method: "POST", path: "/api/v1/operations", body, idempotencyKey: key });
    const view = answer.body as OperationView;
    const warnings: RegistrationWarning[] = Array.isArray(view.warnings) ? view.warnings : [];
    for (const w of warnings) {
      const advice = ADVICE[w.kind] ?? "see the Rerun Gate documentation for this warning";
      this.logger.warn(
        `rerun-gate: registration of ${input.processId} warns (${w.kind}${w.step ? `, step ${w.step}` : ""}): ${w.message} — ${advice}`,
      );
    }
    const replayed = (answer.headers.get("idempotency-replayed") ?? "").toLowerCase() === "true";
    return { ...view, replayed, warnings };
  }

  /** One operation with its steps (state, `last_seq`, `completed_at`, latest verdict…). */
  async operation(processId: string): Promise<OperationView> {
    const answer = await this.request({ method: "GET", path: `/api/v1/operations/${encodeURIComponent(processId)}` });
    return answer.body as OperationView;
  }

  /**
   * Sends one step event as it is (the step helper does this for you). `applied: false` with
   * `step.last_seq == seq` means an earlier attempt of this same event was applied (its answer was lost) and is
   * returned as success; with `last_seq > seq` it throws `StaleSeq`.
   */
  async reportEvent(processId: string, step: string, event: StepEventBody, retries?: number): Promise<StepEventAnswer> {
    const answer = await this.request({
      method: "POST",
      path: `/api/v1/operations/${encodeURIComponent(processId)}/steps/${encodeURIComponent(step)}/events`,
      body: event,
      ...(retries !== undefined ? { retries } : {}),
    });
    const result = answer.body as StepEventAnswer;
    if (!result.applied) {
      const last = result.step?.last_seq ?? null;
      if (last !== null && last > event.seq) {
        const err = new StaleSeq({
          status: answer.status,
          problem: "",
          detail: `the ${event.type} event of ${processId}/${step} with seq ${event.seq} was not applied`,
          sentSeq: event.seq,
          lastSeq: last,
        });
        this.logger.error(`rerun-gate: ${err.message}`);
        throw err;
      }
      if (last !== event.seq && result.step?.completed_at == null) {
        this.logger.warn(
          `rerun-gate: the ${event.type} event of ${processId}/${step} (seq ${event.seq}) was not applied (Rerun Gate's last_seq is ${last}); check the step's state in Rerun Gate`,
        );
      }
    }
    return result;
  }

  /**
   * Runs one step of an operation and reports it: `started` (with the next seq, stored before it is sent),
   * heartbeats with that same seq while `fn` runs, then `succeeded` with the result id `fn` returns, or — when
   * `fn` throws — `failed` or `unknown` with an error class (see `classifyError`), and rethrows. An error whose
   * report Rerun Gate accepted is marked (`stepReportOf(err)` tells), so that the rerun receiver ends the
   * delivery instead of having it sent again; a thrown non-object is rethrown wrapped in an Error (its cause).
   *
   * A step that Rerun Gate already has as completed is not run again: its stored result id is returned (a
   * warning says so).
   */
  async withStep(
    processId: string,
    stepName: string,
    fn: (step: StepContext) => Promise<string | number | null | undefined>,
    options: WithStepOptions = {},
  ): Promise<string | null> {
    const heartbeatEveryMs = options.heartbeatEveryMs ?? 30_000;
    const operation = await this.operation(processId);
    const view = operation.steps.find((s) => s.name === stepName);
    if (!view) {
      throw new ValidationFailed({
        status: 0,
        problem: "",
        detail: `operation ${processId} has no step '${stepName}': its steps are ${operation.steps.map((s) => s.name).join(", ")}`,
      });
    }
    const before: StepView = { ...view };
    if (view.completed_at) {
      this.logger.warn(
        `rerun-gate: step ${processId}/${stepName} is already completed (result ${view.result_id ?? "none"}, at ${view.completed_at}); not running it again`,
      );
      return view.result_id ?? null;
    }

    const next = async (): Promise<number> => {
      const stored = await this.seqStore.getSeq(processId, stepName);
      const server = view.last_seq ?? null;
      if (stored !== undefined && server !== null && server > stored) {
        this.logger.warn(
          `rerun-gate: the local seq store had seq ${stored} for ${processId}/${stepName} but Rerun Gate has ${server}: the store was lost or is shared; continuing from ${server + 1} (keep one FileStore per integration, kept across restarts)`,
        );
      }
      const seq = await this.seqStore.nextSeq(processId, stepName, server);
      view.last_seq = Math.max(view.last_seq ?? 0, seq);
      return seq;
    };

    let usage: Usage | undefined;
    const seq = await next();
    // No `at` on any event: Rerun Gate stamps each on arrival, so this machine's clock cannot move deadlines.
    const startAnswer = await this.reportEvent(processId, stepName, { seq, type: "started" });
    if (!startAnswer.applied && startAnswer.step.completed_at) {
      this.logger.warn(`rerun-gate: step ${processId}/${stepName} was completed meanwhile; not running it again`);
      return startAnswer.step.result_id ?? null;
    }

    let inFlight: Promise<void> | undefined;
    let stopped = false;
    const beat = (): Promise<void> => {
      if (inFlight) return inFlight;
      const body: StepEventBody = { seq, type: "heartbeat", ...(usage ? { usage } : {}) };
      inFlight = this.reportEvent(processId, stepName, body, 0)
        .then(() => undefined)
        .catch((e: unknown) => {
          if (!stopped) this.logger.warn(`rerun-gate: heartbeat of ${processId}/${stepName} not sent: ${(e as Error).message}`);
        })
        .finally(() => {
          inFlight = undefined;
        });
      return inFlight;
    };
    const timer = heartbeatEveryMs > 0 ? setInterval(() => void beat(), heartbeatEveryMs) : undefined;
    timer?.unref();
    const stop = async () => {
      stopped = true;
      if (timer) clearInterval(timer);
      await inFlight;
    };

    const ctx: StepContext = {
      processId,
      name: stepName,
      idempotencyKey: view.idempotency_key,
      seq,
      view: before,
      get usage() {
        return usage;
      },
      set usage(u: Usage | undefined) {
        usage = u;
      },
      heartbeat: beat,
    };

    let resultId: string | number | null | undefined;
    try {
      resultId = await fn(ctx);
    } catch (caught) {
      await stop();
      // Only objects can be marked as reported: a thrown string or number travels on inside an Error.
      const err = typeof caught === "object" && caught !== null ? caught : new Error(String(caught), { cause: caught });
      const outcome = classifyError(caught);
      try {
        const endSeq = await next();
        await this.reportEvent(processId, stepName, {
          seq: endSeq,
          type: outcome.type,
          error: { class: outcome.errorClass, message: outcome.message.slice(0, 2000) },
          ...(usage ? { usage } : {}),
        });
        markReported(err, { processId, step: stepName, type: outcome.type, errorClass: outcome.errorClass, message: outcome.message });
        this.logger.warn(
          `rerun-gate: step ${processId}/${stepName} reported ${outcome.type} (${outcome.errorClass}): ${outcome.message}${
            outcome.type === "unknown"
              ? " — it may have happened: Rerun Gate asks the outside system before anyone reruns it"
              : ""
          }`,
        );
      } catch (reportErr) {
        this.logger.error(
          `rerun-gate: step ${processId}/${stepName} ended with ${outcome.type} (${outcome.errorClass}) but that could not be reported: ${(reportErr as Error).message} — Rerun Gate will see the step stall and ask the outside system`,
        );
      }
      throw err;
    }
    await stop();
    const id = resultId === undefined || resultId === null ? null : String(resultId);
    if (id === null || id === "") {
      this.logger.warn(
        `rerun-gate: step ${processId}/${stepName} succeeded without a result id; return the outside system's ID from the callback so reconciliation can find the record`,
      );
    }
    const endSeq = await next();
    await this.reportEvent(processId, stepName, {
      seq: endSeq,
      type: "succeeded",
      ...(id ? { result_id: id } : {}),
      ...(usage ? { usage } : {}),
    });
    return id || null;
  }

  private backoff(attempt: number): number {
    const base = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2 ** attempt);
    return Math.round(base / 2 + Math.random() * (base / 2));
  }

  /** One HTTP call with retries on network errors, broken answers and 429/502/503/504. */
  private async request(spec: RequestSpec): Promise<Answer> {
    const retries = spec.retries ?? this.retries;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.token}`,
      accept: "application/json, application/problem+json",
    };
    if (spec.body !== undefined) headers["content-type"] = "application/json";
    if (spec.idempotencyKey !== undefined) headers["idempotency-key"] = spec.idempotencyKey;
    const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    const url = this.baseUrl + spec.path;

    for (let attempt = 0; ; attempt++) {
      let status: number;
      let resHeaders: Headers;
      let text: string;
      try {
        const init: RequestInit = { method: spec.method, headers, signal: AbortSignal.timeout(this.timeoutMs) };
        if (payload !== undefined) init.body = payload;
        const res = await this.fetchFn(url, init);
        status = res.status;
        resHeaders = res.headers;
        text = await res.text();
      } catch (e) {
        if (!isNetworkError(e)) throw e;
        const what = classifyError(e);
        if (attempt >= retries) {
          throw new NetworkError({
            status: 0,
            problem: "",
            detail: `${spec.method} ${spec.path} got no usable answer after ${attempt + 1} attempt(s): ${what.message}`,
            cause: e,
          });
        }
        const delay = this.backoff(attempt);
        this.logger.warn(
          `rerun-gate: ${spec.method} ${spec.path}: ${what.message}; retrying in ${delay} ms (attempt ${attempt + 2} of ${retries + 1}, same ${spec.idempotencyKey ? "Idempotency-Key" : "request"})`,
        );
        await this.sleep(delay);
        continue;
      }

      let body: unknown = undefined;
      let parsed = false;
      if (text !== "") {
        try {
          body = JSON.parse(text);
          parsed = true;
        } catch {
          parsed = false;
        }
      }
      if (status >= 200 && status < 300) {
        if (parsed && typeof body === "object" && body !== null) return { status, headers: resHeaders, body };
        // A 2xx without its JSON: the answer broke on the way. The same call is safe to repeat.
        const e = new BrokenAnswer(`a ${status} answer without its JSON body`);
        if (attempt >= retries) {
          throw new NetworkError({ status: 0, problem: "", detail: `${spec.method} ${spec.path}: ${e.message}`, cause: e });
        }
        const delay = this.backoff(attempt);
        this.logger.warn(`rerun-gate: ${spec.method} ${spec.path}: ${e.message}; retrying in ${delay} ms`);
        await this.sleep(delay);
        continue;
      }

      const retryAfter = parseRetryAfter(resHeaders.get("retry-after"));
      if (RETRY_STATUSES.has(status) && attempt < retries) {
        const delay = retryAfter !== undefined ? Math.ceil(retryAfter * 1000) : this.backoff(attempt);
        this.logger.warn(
          `rerun-gate: ${spec.method} ${spec.path} answered ${status}; retrying in ${delay} ms (attempt ${attempt + 2} of ${retries + 1})`,
        );
        await this.sleep(delay);
        continue;
      }
      throw problemError(status, parsed ? body : undefined, text, retryAfter);
    }
  }
}
