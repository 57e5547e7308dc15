// A small, stateful stand-in for Rerun Gate's ingestion API (and the demo outside systems), usable as an
// injected `fetch` (no sockets) or as a loopback HTTP server. Every request it receives and every answer it
// gives is validated against the OpenAPI document; `violations` collects what did not match.
import { createServer } from "node:http";
import { makeValidator } from "./openapi.mjs";

let sharedValidator;
export const validator = () => (sharedValidator ??= makeValidator());

const WORKFLOWS = { "order-intake": { department: "sales", steps: ["register_order", "ai_summary"] } };
const now = () => new Date().toISOString();

export function problem(status, slug, detail, extra = {}) {
  const titles = { 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 409: "Conflict", 422: "Unprocessable Entity", 429: "Too Many Requests" };
  return {
    status,
    headers: { "content-type": "application/problem+json", ...(extra.headers ?? {}) },
    body: { type: `/problems/${slug}`, title: titles[status] ?? "Error", status, detail, ...(extra.errors ? { errors: extra.errors } : {}) },
  };
}

const json = (status, body, headers = {}) => ({ status, headers: { "content-type": "application/json", ...headers }, body });

/** An error like the one undici throws when the connection broke after the request went out. */
export function socketError() {
  const cause = Object.assign(new Error("other side closed"), { name: "SocketError", code: "UND_ERR_SOCKET" });
  return new TypeError("fetch failed", { cause });
}

/** An error like the one undici throws when nothing listens: nothing was sent. */
export function refusedError() {
  const cause = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED", errno: -111, syscall: "connect" });
  return new TypeError("fetch failed", { cause });
}

export class FakeGate {
  constructor({ token = "rg_test", validate = true } = {}) {
    this.token = token;
    this.validate = validate;
    this.ops = new Map();
    this.registrations = new Map(); // Idempotency-Key -> { body, answer }
    this.stepKeys = new Map(); // step idempotency key -> process_id
    this.requests = []; // { method, path, headers, body }
    this.events = []; // { processId, step, body, applied }
    this.violations = [];
    this.intercepts = [];
    this.outside = new Map(); // `${service}:${key}` -> record
    this.fetch = this.fetch.bind(this);
  }

  /** One-shot: the next request for which `match(req)` is true gets `action` instead of / besides the usual. */
  once(match, action) {
    this.intercepts.push({ match, action });
    return this;
  }

  eventsOf(step) {
    return this.events.filter((e) => e.step === step).map((e) => e.body);
  }

  /** The injected `fetch`: no sockets. */
  async fetch(url, init = {}) {
    const headers = {};
    new Headers(init.headers ?? {}).forEach((v, k) => (headers[k] = v));
    const method = (init.method ?? "GET").toUpperCase();
    const bodyText = typeof init.body === "string" ? init.body : init.body === undefined ? undefined : String(init.body);
    const result = await this.dispatch(method, url, headers, bodyText);
    if (result.error) throw result.error;
    const text = typeof result.body === "string" ? result.body : result.body === undefined ? "" : JSON.stringify(result.body);
    return new Response(text === "" ? null : text, { status: result.status, headers: result.headers });
  }

  async dispatch(method, url, headers, bodyText) {
    const { pathname } = new URL(url);
    const req = { method, url, path: pathname, headers, bodyText, body: safeJson(bodyText) };
    if (!pathname.startsWith("/demo/")) {
      this.requests.push(req);
      if (this.validate) this.check(validator().request(method, url, headers, bodyText), `request ${method} ${pathname}`);
    }
    const i = this.intercepts.findIndex((x) => x.match(req));
    const action = i >= 0 ? this.intercepts.splice(i, 1)[0].action : {};
    if (action.refuse) return { error: refusedError() };
    if (action.timeout) return { error: new DOMException("The operation was aborted due to timeout", "TimeoutError") };
    let answer = action.respond ?? (pathname.startsWith("/demo/") ? this.demo(req) : this.handle(req));
    answer = typeof answer === "function" ? answer(req) : answer;
    if (this.validate && !pathname.startsWith("/demo/") && typeof answer.body !== "string") {
      this.check(
        validator().response(method, url, answer.status, answer.headers?.["content-type"], JSON.stringify(answer.body)),
        `answer ${answer.status} to ${method} ${pathname}`,
      );
    }
    if (action.dropAnswer || (pathname.startsWith("/demo/") && headers["demo-fault"] === "drop-answer")) {
      return { error: socketError(), dropped: true, answer };
    }
    return answer;
  }

  check(problems, what) {
    for (const p of problems) this.violations.push(`${what}: ${p}`);
  }

  handle(req) {
    if (req.headers.authorization === undefined) return problem(401, "token-missing", "send the API token in the header `Authorization: Bearer <token>`");
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      return problem(401, "invalid-token", "the API token is not valid", { headers: { "www-authenticate": 'Bearer error="invalid_token"' } });
    }
    const parts = req.path.split("/").slice(1).map(decodeURIComponent); // api v1 operations [pid [steps step events]]
    if (req.method === "POST" && parts.length === 3) return this.register(req);
    const op = this.ops.get(parts[3]);
    if (!op) return problem(404, "not-found", "not found");
    if (req.method === "GET" && parts.length === 4) return json(200, op);
    if (req.method === "POST" && parts.length === 7 && parts[4] === "steps" && parts[6] === "events") return this.event(req, op, parts[5]);
    return problem(404, "not-found", "not found");
  }

  register(req) {
    const key = req.headers["idempotency-key"];
    if (!key) return problem(400, "bad-request", "the Idempotency-Key header is required");
    const body = req.body;
    if (!body) return problem(400, "bad-request", "the body is not JSON");
    const canonical = JSON.stringify(body);
    const seen = this.registrations.get(key);
    if (seen) {
      if (seen.canonical !== canonical) return problem(409, "idempotency-key-mismatch", "this Idempotency-Key was used with a different request body; nothing was changed");
      return { ...seen.answer, headers: { ...seen.answer.headers, "idempotency-replayed": "true" } };
    }
    const wf = WORKFLOWS[body.workflow];
    if (!wf) return problem(422, "validation", `unknown workflow '${body.workflow}'`, { errors: [{ field: "workflow", message: "unknown workflow" }] });
    if (this.ops.has(body.process_id)) return problem(409, "process-id-exists", `process_id '${body.process_id}' is already registered under another Idempotency-Key`);
    for (const s of body.steps) {
      const owner = this.stepKeys.get(s.idempotency_key);
      if (owner && owner !== body.process_id) return problem(409, "idempotency-key-taken", `idempotency key '${s.idempotency_key}' is already used by another step`);
    }
    const t = now();
    const op = {
      process_id: body.process_id,
      workflow: body.workflow,
      department: body.department,
      business_key: body.business_key ?? null,
      status: "running",
      event: null,
      failure_class: null,
      possible_duplicate_of: null,
      created_at: t,
      updated_at: t,
      steps: wf.steps.map((name, i) => ({
        position: i + 1,
        name,
        state: "not_started",
        idempotency_key: body.steps.find((s) => s.name === name)?.idempotency_key ?? `${body.process_id}:${name}`,
        result_id: null,
        attempts: 0,
        last_seq: null,
        completed_at: null,
        error: null,
        latest_verdict: null,
      })),
    };
    this.ops.set(op.process_id, op);
    for (const s of op.steps) this.stepKeys.set(s.idempotency_key, op.process_id);
    const answer = json(201, structuredClone(op));
    this.registrations.set(key, { canonical, answer });
    return answer;
  }

  event(req, op, stepName) {
    const step = op.steps.find((s) => s.name === stepName);
    if (!step) {
      const detail = `operation ${op.process_id} has no step '${stepName}': its steps are ${op.steps.map((s) => s.name).join(", ")}`;
      return problem(422, "validation", detail, { errors: [{ field: "step", message: detail }] });
    }
    const e = req.body;
    if ((e.type === "failed" || e.type === "unknown") && !e.error) {
      return problem(422, "validation", `a ${e.type} event needs an error with class and message`, { errors: [{ field: "error", message: "required" }] });
    }
    const last = step.last_seq ?? -1;
    let applied;
    if (step.completed_at) applied = false;
    else if (e.type === "heartbeat") applied = e.seq >= last;
    else applied = e.seq > last;
    if (applied && e.type !== "heartbeat") {
      step.last_seq = e.seq;
      step.state = e.type;
      if (e.type === "started") step.attempts += 1;
      if (e.type === "succeeded") {
        step.result_id = e.result_id ?? null;
        step.completed_at = e.at ?? now();
        step.error = null;
      }
      if (e.type === "failed" || e.type === "unknown") step.error = { class: e.error.class, message: e.error.message };
      op.updated_at = now();
    }
    this.events.push({ processId: op.process_id, step: stepName, body: e, applied });
    return json(200, { applied, step: structuredClone(step) });
  }

  /** The demo outside systems: POST /demo/{service}/requests with Idempotency-Key. */
  demo(req) {
    const [, , service, what] = req.path.split("/");
    if (what !== "requests") return json(404, { detail: "not found" });
    const url = new URL(req.url);
    if (req.method === "GET") {
      const r = this.outside.get(`${service}:${url.searchParams.get("idempotency_key")}`);
      return r ? json(200, r) : json(404, { detail: "not found" });
    }
    const key = req.headers["idempotency-key"];
    const id = `${service}:${key}`;
    const found = this.outside.get(id);
    if (found) {
      if (JSON.stringify(found.content) !== JSON.stringify(req.body)) {
        found.conflicts += 1;
        return {
          status: 409,
          headers: { "content-type": "application/problem+json" },
          body: { type: "/problems/idempotency-key-mismatch", title: "Conflict", status: 409, detail: `the ${service} service already did other content under this Idempotency-Key` },
        };
      }
      found.replays += 1;
      return json(200, found, { "idempotency-replayed": "true" });
    }
    const record = { id: `${service}_${this.outside.size + 1}`, idempotency_key: key, status: "completed", content: req.body, process_id: req.headers["process-id"] ?? null, created_at: now(), replays: 0, conflicts: 0 };
    this.outside.set(id, record);
    return json(201, record);
  }

  /** Serves this fake on a loopback port; answers `{ url, close }`. */
  async listen() {
    const server = createServer(async (req, res) => {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const bodyText = chunks.length ? Buffer.concat(chunks).toString("utf8") : undefined;
      const headers = {};
      for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v[0] : v;
      const result = await this.dispatch(req.method, `http://${req.headers.host}${req.url}`, headers, bodyText);
      if (result.error) {
        req.socket.destroy();
        return;
      }
      const text = typeof result.body === "string" ? result.body : JSON.stringify(result.body);
      res.writeHead(result.status, { ...result.headers, "content-length": Buffer.byteLength(text) });
      res.end(text);
    });
    await new Promise((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${server.address().port}`;
    return {
      url,
      close: () =>
        new Promise((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
    };
  }
}

function safeJson(text) {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A Client option set for tests: no waiting, logs collected. */
export function testOptions(gate, extra = {}) {
  const sleeps = [];
  const logs = [];
  const logger = { warn: (m) => logs.push(["warn", m]), error: (m) => logs.push(["error", m]) };
  return {
    sleeps,
    logs,
    options: { baseUrl: "http://gate.test", token: gate.token, fetch: gate.fetch, sleep: async (ms) => void sleeps.push(ms), logger, ...extra },
  };
}
