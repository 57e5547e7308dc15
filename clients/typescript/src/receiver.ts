import type { IncomingMessage, ServerResponse } from "node:http";
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import type { Logger } from "./client.js";
import { stepReportOf } from "./reported.js";
import type { ReceiptStore } from "./stores.js";
import type { Rerun, RerunStep } from "./types.js";

/** What the receiver answered, and why. */
export type ReceiveOutcome =
  /**
   * The handler ran (200); also when it threw an error that `withStep` had reported to Rerun Gate (`detail`
   * says which step and how): the delivery ends, nothing is resent.
   */
  | "done"
  /** This webhook-id was received before; nothing was done (200). */
  | "duplicate"
  /** A verified `rerun.test` call; the handler was not called (200). */
  | "test"
  /** Unsigned, wrongly signed or stale (401), or not a rerun call (422), or not a POST (405). */
  | "refused"
  /**
   * The handler threw an error NOT reported by `withStep` (its own code failed outside a step, or the step's
   * report could not be sent) (500): the claim was released, Rerun Gate retries the same webhook-id.
   */
  | "failed"
  /** The first call with this webhook-id is still running (503 with Retry-After). */
  | "in_progress";

/** A framework-neutral HTTP answer. */
export interface ReceiverAnswer {
  status: number;
  headers: Record<string, string>;
  /** JSON text, e.g. `{"outcome":"done"}`. */
  body: string;
}

/** What happened to one call: passed to `onResult`. */
export interface ReceiveResult {
  status: number;
  outcome: ReceiveOutcome;
  /** The `webhook-id` header ("" when missing). */
  webhookId: string;
  /** The parsed call, when it was verified and well-formed. */
  rerun?: Rerun;
  detail?: string;
}

export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

export interface RerunReceiverOptions {
  /** The workflow's rerun signing secret, `whsec_<base64>` (Standard Webhooks). */
  secret: string;
  /**
   * Runs the rerun: `rerun.steps` lists ONLY the steps to run again, each with its ORIGINAL idempotency key.
   * Answer within a few seconds (Rerun Gate waits 10 s, then counts the outcome as unknown): hand long work to
   * a queue. An error thrown after `withStep` reported the step `failed`/`unknown` ends the delivery (200
   * `done`, with a `detail`): Rerun Gate shows the stall and nothing is resent. Any other error makes the
   * receiver answer 500 so Rerun Gate retries the same webhook-id.
   */
  handler: (rerun: Rerun, context: { webhookId: string }) => unknown;
  /** Where webhook-ids are claimed and remembered (a FileStore, or a store of your own). */
  store: ReceiptStore;
  logger?: Logger;
  /** Retry-After of the 503 answered while the first call with the same webhook-id runs (default 5). */
  retryAfterSeconds?: number;
  /** Largest body read by `nodeHandler` (default 1 MiB; larger: 413). */
  maxBodyBytes?: number;
  /** Called after each call with what happened (e.g. to print or count it). */
  onResult?: (result: ReceiveResult) => void;
}

const TYPES = new Set(["rerun.approved", "rerun.test"]);

function headerValue(headers: HeadersLike, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function" && typeof (headers as Headers).has === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  for (const key of Object.keys(record)) {
    if (key.toLowerCase() === name) {
      const v = record[key];
      return Array.isArray(v) ? v[0] : v;
    }
  }
  return undefined;
}

/** Checks that a verified body is a RerunCall; answers what is wrong, or undefined. */
function problemWithCall(call: unknown): string | undefined {
  if (typeof call !== "object" || call === null || Array.isArray(call)) return "the body is not a JSON object";
  const c = call as Record<string, unknown>;
  if (typeof c["type"] !== "string") return "the body has no `type`";
  if (!TYPES.has(c["type"])) return `unknown type '${c["type"]}' (this kit knows rerun.approved and rerun.test)`;
  for (const f of ["rerun_id", "process_id", "workflow"]) {
    if (typeof c[f] !== "string" || c[f] === "") return `\`${f}\` must be a non-empty string`;
  }
  if (!Array.isArray(c["steps"])) return "`steps` must be an array";
  for (const [i, s] of (c["steps"] as unknown[]).entries()) {
    const step = s as Partial<RerunStep> | null;
    if (typeof step !== "object" || step === null || typeof step.name !== "string" || typeof step.idempotency_key !== "string") {
      return `steps[${i}] must be {name, idempotency_key}`;
    }
  }
  return undefined;
}

/**
 * Receives rerun calls (Standard Webhooks) from Rerun Gate: verifies the signature and timestamp, deduplicates
 * on `webhook-id`, calls your handler once per rerun, and answers what Rerun Gate expects.
 */
export class RerunReceiver {
  private readonly webhook: Webhook;
  private readonly handler: RerunReceiverOptions["handler"];
  private readonly store: ReceiptStore;
  private readonly logger: Logger;
  private readonly retryAfterSeconds: number;
  private readonly maxBodyBytes: number;
  private readonly onResult: ((r: ReceiveResult) => void) | undefined;

  constructor(options: RerunReceiverOptions) {
    if (!options.secret) {
      throw new TypeError("rerun-gate: RerunReceiver needs `secret`: the workflow's rerun signing secret (whsec_…)");
    }
    try {
      this.webhook = new Webhook(options.secret);
    } catch (e) {
      throw new TypeError(
        `rerun-gate: the rerun signing secret is not a Standard Webhooks secret (whsec_<base64>): ${(e as Error).message}`,
      );
    }
    if (typeof options.handler !== "function") throw new TypeError("rerun-gate: RerunReceiver needs `handler`");
    if (!options.store) throw new TypeError("rerun-gate: RerunReceiver needs `store` (e.g. new FileStore(path))");
    this.handler = options.handler;
    this.store = options.store;
    this.logger = options.logger ?? console;
    this.retryAfterSeconds = options.retryAfterSeconds ?? 5;
    this.maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
    this.onResult = options.onResult;
  }

  /**
   * Handles one call: `body` is the raw body exactly as received (the signature covers its bytes), `headers`
   * the request's headers. Answers `{status, headers, body}` to send back.
   */
  async receive(body: string | Uint8Array, headers: HeadersLike): Promise<ReceiverAnswer> {
    const webhookId = headerValue(headers, "webhook-id") ?? "";
    const answer = (status: number, outcome: ReceiveOutcome, extra: { detail?: string; rerun?: Rerun; retryAfter?: number } = {}) => {
      const result: ReceiveResult = { status, outcome, webhookId };
      if (extra.rerun) result.rerun = extra.rerun;
      if (extra.detail !== undefined) result.detail = extra.detail;
      try {
        this.onResult?.(result);
      } catch (e) {
        this.logger.error(`rerun-gate receiver: onResult threw: ${(e as Error).message}`);
      }
      const h: Record<string, string> = { "content-type": "application/json" };
      if (extra.retryAfter !== undefined) h["retry-after"] = String(extra.retryAfter);
      const payload: Record<string, string> = { outcome };
      if (extra.detail !== undefined) payload["detail"] = extra.detail;
      return { status, headers: h, body: JSON.stringify(payload) };
    };

    // 1. The signature (and its timestamp): nothing else is looked at before.
    try {
      this.webhook.verify(body, {
        "webhook-id": webhookId,
        "webhook-timestamp": headerValue(headers, "webhook-timestamp") ?? "",
        "webhook-signature": headerValue(headers, "webhook-signature") ?? "",
      }, { jsonParse: false });
    } catch (e) {
      if (!(e instanceof WebhookVerificationError)) throw e;
      const why = e.message;
      let detail: string;
      if (why === "Missing required headers") detail = "unsigned: webhook-id, webhook-timestamp and webhook-signature are required";
      else if (why.startsWith("Message timestamp")) detail = `stale: ${why.toLowerCase()} (tolerance 5 minutes)`;
      else detail = "the signature does not match";
      this.logger.warn(
        `rerun-gate receiver: refused a call (401, webhook-id '${webhookId}'): ${detail} — ${
          why.startsWith("Message timestamp")
            ? "check this machine's clock (NTP)"
            : "check that the receiver's secret is the workflow's rerun signing secret configured in Rerun Gate"
        }`,
      );
      return answer(401, "refused", { detail });
    }

    // 2. A RerunCall?
    let call: unknown;
    try {
      call = JSON.parse(typeof body === "string" ? body : new TextDecoder().decode(body));
    } catch {
      call = undefined;
    }
    const wrong = call === undefined ? "the body is not JSON" : problemWithCall(call);
    if (wrong !== undefined) {
      this.logger.warn(
        `rerun-gate receiver: refused call ${webhookId} (422): ${wrong} — if Rerun Gate sends a newer kind of call, update the kit`,
      );
      return answer(422, "refused", { detail: wrong });
    }
    const rerun = call as Rerun;

    // 3. Once per webhook-id: claim it before anything runs.
    const claim = await this.store.claimReceipt(webhookId);
    if (claim === "done") return answer(200, "duplicate", { rerun });
    if (claim === "running") {
      return answer(503, "in_progress", {
        rerun,
        detail: `the first call with webhook-id ${webhookId} is still running`,
        retryAfter: this.retryAfterSeconds,
      });
    }

    // 4. A conformance test: verified and deduplicated, never handled.
    if (rerun.type === "rerun.test") {
      await this.store.completeReceipt(webhookId, "test");
      return answer(200, "test", { rerun });
    }

    // 5. The handler, with only the listed steps and their original keys.
    const started = Date.now();
    try {
      await this.handler(rerun, { webhookId });
    } catch (e) {
      const report = stepReportOf(e);
      if (report) {
        // A step outcome Rerun Gate already has: sending the rerun again would run that step again without
        // reconciliation (`unknown`: it may have happened) or fail the same way (`failed`). The delivery ends.
        await this.store.completeReceipt(webhookId, "done");
        const message = report.message.length > 500 ? `${report.message.slice(0, 500)}…` : report.message;
        const detail = `${report.step}: reported ${report.type} (${report.errorClass}): ${message}; Rerun Gate shows the stall, nothing is resent`;
        this.logger.warn(
          `rerun-gate receiver: rerun ${rerun.rerun_id} of ${rerun.process_id}: ${detail} — answered 200 and finished webhook-id ${webhookId}; a person decides in Rerun Gate (reconcile, then approve another rerun)`,
        );
        return answer(200, "done", { rerun, detail });
      }
      const message = e instanceof Error ? e.message : String(e);
      try {
        await this.store.releaseReceipt(webhookId);
      } catch (releaseErr) {
        this.logger.error(
          `rerun-gate receiver: could not release the claim on ${webhookId}: ${(releaseErr as Error).message} — its retries will be answered 503 until this process restarts`,
        );
      }
      this.logger.error(
        `rerun-gate receiver: the handler failed (not a step outcome reported to Rerun Gate) for rerun ${rerun.rerun_id} of ${rerun.process_id} (${rerun.steps.map((s) => s.name).join(", ")}): ${message} — answered 500 and released the claim: Rerun Gate retries the same webhook-id (same step keys) with backoff; fix the cause, or the rerun ends failed after its attempts`,
      );
      return answer(500, "failed", { rerun, detail: message });
    }
    await this.store.completeReceipt(webhookId, "done");
    const took = Date.now() - started;
    if (took > 5000) {
      this.logger.warn(
        `rerun-gate receiver: the handler of rerun ${rerun.rerun_id} took ${took} ms; Rerun Gate waits 10 s, then counts the outcome as unknown — hand long work to a queue and answer at once`,
      );
    }
    return answer(200, "done", { rerun });
  }

  /**
   * A `(req, res)` handler for `http.createServer` and Express (`app.post("/rerun", receiver.nodeHandler())`).
   * It reads the raw body itself unless `req.body` already is a Buffer or string (`express.raw()`). Mount it
   * BEFORE any JSON body parser (`express.json()`): the signature covers the exact bytes, which a parsed and
   * re-serialised body no longer has.
   */
  nodeHandler(): (req: IncomingMessage & { body?: unknown }, res: ServerResponse, next?: (err?: unknown) => void) => void {
    return (req, res) => {
      void this.handleNode(req, res).catch((e: unknown) => {
        this.logger.error(`rerun-gate receiver: ${(e as Error).message}`);
        if (!res.headersSent) send(res, { status: 500, headers: { "content-type": "application/json" }, body: JSON.stringify({ outcome: "failed", detail: "internal error" }) });
        else res.end();
      });
    };
  }

  private async handleNode(req: IncomingMessage & { body?: unknown }, res: ServerResponse): Promise<void> {
    if (req.method !== "POST") {
      send(res, { status: 405, headers: { "content-type": "application/json", allow: "POST" }, body: JSON.stringify({ outcome: "refused", detail: "POST only" }) });
      return;
    }
    let raw: string | Uint8Array;
    if (typeof req.body === "string" || req.body instanceof Uint8Array) {
      raw = req.body;
    } else if (req.readableEnded) {
      this.logger.error(
        "rerun-gate receiver: the body was already read and parsed by another middleware, so its signature cannot be checked — mount receiver.nodeHandler() before express.json() (or use express.raw({ type: '*/*' }) on its route)",
      );
      send(res, { status: 500, headers: { "content-type": "application/json" }, body: JSON.stringify({ outcome: "failed", detail: "the raw body is not available" }) });
      return;
    } else {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of req) {
        const buf = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
        size += buf.length;
        if (size > this.maxBodyBytes) {
          send(res, { status: 413, headers: { "content-type": "application/json", connection: "close" }, body: JSON.stringify({ outcome: "refused", detail: `the body is larger than ${this.maxBodyBytes} bytes` }) });
          req.destroy();
          return;
        }
        chunks.push(buf);
      }
      raw = Buffer.concat(chunks);
    }
    send(res, await this.receive(raw, req.headers));
  }
}

function send(res: ServerResponse, answer: ReceiverAnswer): void {
  res.writeHead(answer.status, { ...answer.headers, "content-length": String(Buffer.byteLength(answer.body)) });
  res.end(answer.body);
}
