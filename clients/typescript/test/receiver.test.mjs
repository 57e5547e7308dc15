import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client, FileStore, MemoryStore, OutcomeUnknown, RerunReceiver, StepFailed, outcomeOfStatus } from "../dist/index.js";
import { FakeGate, testOptions } from "./support/fake-gate.mjs";
import { SECRET, rerunCall, signed } from "./support/rerun-call.mjs";

let dir;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "rerun-gate-receiver-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function setup({ handler, store = new MemoryStore() } = {}) {
  const calls = [];
  const logs = [];
  const results = [];
  const receiver = new RerunReceiver({
    secret: SECRET,
    store,
    handler: handler ?? (async (rerun) => void calls.push(rerun)),
    logger: { warn: (m) => logs.push(["warn", m]), error: (m) => logs.push(["error", m]) },
    onResult: (r) => results.push(r),
  });
  return { receiver, calls, logs, results, store };
}

const parse = (answer) => ({ status: answer.status, ...JSON.parse(answer.body) });

describe("RerunReceiver.receive", () => {
  test("a verified call runs the handler once with the listed steps and their original keys", async () => {
    const { receiver, calls, results } = setup();
    const call = rerunCall({
      steps: [
        { name: "register_order", idempotency_key: "ORD-1107:register_order" },
        { name: "ai_summary", idempotency_key: "ORD-1107:ai_summary" },
      ],
    });
    const { body, headers } = signed(call);
    const answer = await receiver.receive(body, headers);
    assert.deepEqual(parse(answer), { status: 200, outcome: "done" });
    assert.equal(answer.headers["content-type"], "application/json");
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].steps, call.steps);
    assert.equal(calls[0].process_id, "ORD-1107");
    assert.deepEqual(results.map((r) => [r.webhookId, r.outcome, r.rerun.steps.length]), [["rr-01", "done", 2]]);
  });

  test("a repeat of the same webhook-id is answered 2xx duplicate, nothing done again", async () => {
    const { receiver, calls } = setup();
    const { body, headers } = signed(rerunCall());
    await receiver.receive(body, headers);
    const again = signed(rerunCall()); // a new attempt: new timestamp and signature, same webhook-id
    assert.deepEqual(parse(await receiver.receive(again.body, again.headers)), { status: 200, outcome: "duplicate" });
    assert.deepEqual(parse(await receiver.receive(Buffer.from(body), headers)), { status: 200, outcome: "duplicate" });
    assert.equal(calls.length, 1);
  });

  test("rerun.test is verified and deduplicated but never handled", async () => {
    const { receiver, calls } = setup();
    const call = rerunCall({ type: "rerun.test", rerun_id: "test-1", steps: [{ name: "ai_summary", idempotency_key: "test:ORD-1107:ai_summary" }] });
    const { body, headers } = signed(call);
    assert.deepEqual(parse(await receiver.receive(body, headers)), { status: 200, outcome: "test" });
    assert.deepEqual(parse(await receiver.receive(body, headers)), { status: 200, outcome: "duplicate" });
    assert.equal(calls.length, 0);
    const unsigned = await receiver.receive(body, { ...headers, "webhook-signature": "v1,AAAA" });
    assert.equal(unsigned.status, 401);
  });

  const refusals = [
    ["unsigned", (s) => { delete s.headers["webhook-signature"]; }, /unsigned/],
    ["no webhook-id", (s) => { delete s.headers["webhook-id"]; }, /unsigned/],
    ["wrongly signed (another secret)", (s) => Object.assign(s, signed(rerunCall(), { secret: "whsec_b3RoZXItc2VjcmV0LW9mLTMyLWJ5dGVzLWxvbmctLS0=" })), /does not match/],
    ["a changed body", (s) => { s.body = s.body.replace("ai_summary", "register_order"); }, /does not match/],
    ["another webhook-id than signed", (s) => { s.headers["webhook-id"] = "rr-99"; }, /does not match/],
    ["stale (6 minutes old)", (s) => Object.assign(s, signed(rerunCall(), { at: new Date(Date.now() - 6 * 60_000) })), /stale: message timestamp too old/],
    ["from the future (6 minutes ahead)", (s) => Object.assign(s, signed(rerunCall(), { at: new Date(Date.now() + 6 * 60_000) })), /stale: message timestamp too new/],
  ];
  for (const [name, spoil, detail] of refusals) {
    test(`401 for ${name}; the handler is not called and nothing is claimed`, async () => {
      const { receiver, calls, logs, store } = setup();
      const s = signed(rerunCall());
      spoil(s);
      const answer = await receiver.receive(s.body, s.headers);
      const parsed = parse(answer);
      assert.equal(parsed.status, 401);
      assert.equal(parsed.outcome, "refused");
      assert.match(parsed.detail, detail);
      assert.equal(calls.length, 0);
      assert.equal(await store.claimReceipt("rr-01"), "claimed", "a refused call claims nothing");
      assert.ok(logs.some(([level, m]) => level === "warn" && /refused a call \(401/.test(m) && /(secret|clock)/.test(m)));
    });
  }

  test("a call 4 minutes old is still inside the tolerance", async () => {
    const { receiver } = setup();
    const { body, headers } = signed(rerunCall(), { at: new Date(Date.now() - 4 * 60_000) });
    assert.equal((await receiver.receive(body, headers)).status, 200);
  });

  const malformed = [
    ["an unknown type", JSON.stringify(rerunCall({ type: "rerun.cancelled" })), /unknown type 'rerun.cancelled'/],
    ["a body that is not JSON", "not json", /not JSON/],
    ["no steps", JSON.stringify({ ...rerunCall(), steps: undefined }), /`steps` must be an array/],
    ["a step without its key", JSON.stringify(rerunCall({ steps: [{ name: "ai_summary" }] })), /steps\[0\]/],
    ["no process_id", JSON.stringify({ ...rerunCall(), process_id: undefined }), /process_id/],
  ];
  for (const [name, text, detail] of malformed) {
    test(`422 for ${name} (signed)`, async () => {
      const { receiver, calls } = setup();
      const s = signed(undefined, { id: "rr-422", body: text });
      const parsed = parse(await receiver.receive(s.body, s.headers));
      assert.equal(parsed.status, 422);
      assert.equal(parsed.outcome, "refused");
      assert.match(parsed.detail, detail);
      assert.equal(calls.length, 0);
    });
  }

  test("a handler that throws: 500, claim released, the retry runs it again", async () => {
    let attempts = 0;
    const { receiver, logs, store } = setup({
      handler: async () => {
        attempts += 1;
        if (attempts === 1) throw new Error("the AI service is down");
      },
    });
    const first = signed(rerunCall());
    const failed = parse(await receiver.receive(first.body, first.headers));
    assert.deepEqual(failed, { status: 500, outcome: "failed", detail: "the AI service is down" });
    assert.ok(logs.some(([level, m]) => level === "error" && /released the claim/.test(m)));
    const retry = signed(rerunCall());
    assert.deepEqual(parse(await receiver.receive(retry.body, retry.headers)), { status: 200, outcome: "done" });
    assert.equal(attempts, 2);
    assert.equal(await store.claimReceipt("rr-01"), "done");
  });

  test("a handler that throws outside any step (not reported): 500, the claim released", async () => {
    const { receiver, logs, results } = setup({
      handler: async (rerun) => {
        throw new Error(`this integration does not know the step '${rerun.steps[0].name}'`);
      },
    });
    const s = signed(rerunCall());
    const failed = parse(await receiver.receive(s.body, s.headers));
    assert.equal(failed.status, 500);
    assert.equal(failed.outcome, "failed");
    assert.match(failed.detail, /does not know the step 'ai_summary'/);
    assert.deepEqual(results.map((r) => r.outcome), ["failed"]);
    assert.ok(logs.some(([level, m]) => level === "error" && /not a step outcome reported to Rerun Gate/.test(m)));
  });

  test("a repeat while the first still runs: 503 with Retry-After: 5", async () => {
    let release;
    const gate = new Promise((r) => (release = r));
    let runs = 0;
    const { receiver } = setup({
      handler: async () => {
        runs += 1;
        await gate;
      },
    });
    const s = signed(rerunCall());
    const first = receiver.receive(s.body, s.headers);
    await new Promise((r) => setImmediate(r));
    const busy = await receiver.receive(s.body, s.headers);
    assert.equal(busy.status, 503);
    assert.equal(busy.headers["retry-after"], "5");
    assert.equal(JSON.parse(busy.body).outcome, "in_progress");
    release();
    assert.equal((await first).status, 200);
    assert.equal(JSON.parse((await receiver.receive(s.body, s.headers)).body).outcome, "duplicate");
    assert.equal(runs, 1);
  });

  test("a FileStore remembers webhook-ids across a restart", async () => {
    const path = join(dir, "receipts.json");
    const a = setup({ store: new FileStore(path) });
    const s = signed(rerunCall());
    assert.equal(JSON.parse((await a.receiver.receive(s.body, s.headers)).body).outcome, "done");
    const b = setup({ store: new FileStore(path) });
    assert.equal(JSON.parse((await b.receiver.receive(s.body, s.headers)).body).outcome, "duplicate");
    assert.equal(b.calls.length, 0);
  });

  test("a Headers object and array-valued headers are accepted", async () => {
    const { receiver } = setup();
    const s = signed(rerunCall());
    assert.equal((await receiver.receive(s.body, new Headers(s.headers))).status, 200);
    const s2 = signed(rerunCall({ rerun_id: "rr-02" }), { id: "rr-02" });
    const arrays = Object.fromEntries(Object.entries(s2.headers).map(([k, v]) => [k.toUpperCase(), [v]]));
    assert.equal((await receiver.receive(s2.body, arrays)).status, 200);
  });

  test("a bad secret is refused at construction with what to do", () => {
    assert.throws(() => new RerunReceiver({ secret: "", handler() {}, store: new MemoryStore() }), /rerun signing secret/);
    assert.throws(() => new RerunReceiver({ secret: "whsec_", handler() {}, store: new MemoryStore() }), /whsec_<base64>/);
  });
});

describe("RerunReceiver.nodeHandler", () => {
  async function serve(handler) {
    const server = createServer(handler);
    await new Promise((r) => server.listen(0, "127.0.0.1", r));
    return {
      url: `http://127.0.0.1:${server.address().port}/rerun`,
      close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
    };
  }

  test("with http.createServer: reads the raw body itself", async () => {
    const { receiver, calls } = setup();
    const srv = await serve(receiver.nodeHandler());
    try {
      const s = signed(rerunCall());
      const res = await fetch(srv.url, { method: "POST", headers: s.headers, body: s.body });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { outcome: "done" });
      assert.equal(calls.length, 1);
      const bad = await fetch(srv.url, { method: "POST", headers: { ...s.headers, "webhook-signature": "v1,AAAA" }, body: s.body });
      assert.equal(bad.status, 401);
      const get = await fetch(srv.url);
      assert.equal(get.status, 405);
      assert.equal(get.headers.get("allow"), "POST");
    } finally {
      await srv.close();
    }
  });

  test("as Express-style middleware: uses req.body when it is a Buffer (express.raw)", async () => {
    const { receiver, calls } = setup();
    const handle = receiver.nodeHandler();
    const srv = await serve(async (req, res) => {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      req.body = Buffer.concat(chunks); // what express.raw() leaves
      handle(req, res, () => assert.fail("next() must not be called"));
    });
    try {
      const s = signed(rerunCall());
      const res = await fetch(srv.url, { method: "POST", headers: s.headers, body: s.body });
      assert.equal(res.status, 200);
      assert.equal(calls.length, 1);
    } finally {
      await srv.close();
    }
  });

  test("a body already parsed by a JSON body parser: 500 with what to do", async () => {
    const { receiver, logs, calls } = setup();
    const handle = receiver.nodeHandler();
    const srv = await serve(async (req, res) => {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      req.body = JSON.parse(Buffer.concat(chunks).toString()); // what express.json() leaves
      handle(req, res);
    });
    try {
      const s = signed(rerunCall());
      const res = await fetch(srv.url, { method: "POST", headers: s.headers, body: s.body });
      assert.equal(res.status, 500);
      assert.equal(calls.length, 0);
      assert.ok(logs.some(([, m]) => /before express\.json\(\)/.test(m)));
    } finally {
      await srv.close();
    }
  });

  test("a body over the limit: 413", async () => {
    const receiver = new RerunReceiver({ secret: SECRET, store: new MemoryStore(), handler() {}, maxBodyBytes: 100, logger: { warn() {}, error() {} } });
    const srv = await serve(receiver.nodeHandler());
    try {
      const res = await fetch(srv.url, { method: "POST", body: "x".repeat(1000) }).catch((e) => e);
      if (res instanceof Error) assert.match(String(res.cause?.code ?? res.message), /ECONNRESET|UND_ERR_SOCKET|EPIPE|fetch failed/);
      else assert.equal(res.status, 413);
    } finally {
      await srv.close();
    }
  });
});

describe("RerunReceiver with withStep: a reported step outcome ends the delivery", () => {
  const PID = "ORD-1107";
  async function withGate({ handlerFor, store = new MemoryStore(), gateOptions = {} } = {}) {
    const gate = new FakeGate();
    const t = testOptions(gate, gateOptions);
    // looked up on every call, so that a test can put a fault in front of the gate
    const client = new Client({ ...t.options, fetch: (url, init) => gate.fetch(url, init) });
    await client.register({ processId: PID, workflow: "order-intake", department: "sales", steps: [{ name: "register_order" }, { name: "ai_summary" }] });
    let runs = 0;
    const outside = [];
    const { receiver, logs, results } = setup({
      store,
      handler: async (rerun) => {
        runs += 1;
        for (const step of rerun.steps) {
          await client.withStep(rerun.process_id, step.name, async (ctx) => {
            outside.push(ctx.idempotencyKey);
            return handlerFor(step.name, runs);
          });
        }
      },
    });
    return { gate, client, receiver, logs, clientLogs: t.logs, results, store, runs: () => runs, outside };
  }

  const reported = [
    [
      "unknown (OutcomeUnknown timeout: it may have happened)",
      () => new OutcomeUnknown("the summary call timed out", { errorClass: "timeout" }),
      "ai_summary: reported unknown (timeout): the summary call timed out; Rerun Gate shows the stall, nothing is resent",
    ],
    [
      "unknown (a 504 from the outside system)",
      () => outcomeOfStatus(504, "ai answered 504"),
      "ai_summary: reported unknown (timeout): ai answered 504; Rerun Gate shows the stall, nothing is resent",
    ],
    [
      "failed (validation: retrying would fail the same way)",
      () => new StepFailed("validation", "amount must be positive"),
      "ai_summary: reported failed (validation): amount must be positive; Rerun Gate shows the stall, nothing is resent",
    ],
  ];
  for (const [name, make, detail] of reported) {
    test(`${name}: 200 done with the step's report, the claim finished, a repeat is a duplicate`, async () => {
      const { gate, receiver, logs, results, store, runs, outside } = await withGate({
        handlerFor: () => {
          throw make();
        },
      });
      const s = signed(rerunCall());
      const answer = parse(await receiver.receive(s.body, s.headers));
      assert.deepEqual(answer, { status: 200, outcome: "done", detail });
      const types = gate.eventsOf("ai_summary").map((e) => e.type);
      assert.deepEqual(types, ["started", types[1]]);
      assert.ok(["failed", "unknown"].includes(types[1]));
      assert.deepEqual(results.map((r) => [r.outcome, r.detail]), [["done", detail]]);
      assert.ok(logs.some(([level, m]) => level === "warn" && m.includes(detail) && /finished webhook-id rr-01/.test(m)));
      // the webhook-id counts as handled: the dispatcher's next attempt (if any) runs nothing
      const again = signed(rerunCall());
      assert.deepEqual(parse(await receiver.receive(again.body, again.headers)), { status: 200, outcome: "duplicate" });
      assert.equal(await store.claimReceipt("rr-01"), "done");
      assert.equal(runs(), 1);
      assert.deepEqual(outside, ["ORD-1107:ai_summary"], "the outside system was called once");
      assert.deepEqual(gate.violations, []);
    });
  }

  test("a reported error wrapped by the handler (cause, AggregateError) still ends the delivery", async () => {
    for (const wrap of [(e) => new Error("step failed", { cause: e }), (e) => new AggregateError([new Error("other"), e], "some steps failed")]) {
      const gate = new FakeGate();
      const client = new Client(testOptions(gate).options);
      await client.register({ processId: PID, workflow: "order-intake", department: "sales", steps: [{ name: "register_order" }, { name: "ai_summary" }] });
      const { receiver } = setup({
        handler: async (rerun) => {
          try {
            await client.withStep(rerun.process_id, "ai_summary", async () => {
              throw new OutcomeUnknown("no answer");
            });
          } catch (e) {
            throw wrap(e);
          }
        },
      });
      const s = signed(rerunCall());
      const answer = parse(await receiver.receive(s.body, s.headers));
      assert.equal(answer.status, 200);
      assert.equal(answer.detail, "ai_summary: reported unknown (result_unknown): no answer; Rerun Gate shows the stall, nothing is resent");
    }
  });

  test("a step outcome that could NOT be reported: 500, claim released, the retry runs the step again", async () => {
    let gateDown = true;
    const { gate, receiver, logs, clientLogs, runs, outside } = await withGate({
      gateOptions: { retries: 0 },
      handlerFor: (_name, run) => {
        if (run === 1) throw new OutcomeUnknown("the summary call timed out", { errorClass: "timeout" });
        return "sum-1";
      },
    });
    // Rerun Gate accepts `started` but the failure report never gets through
    const originalFetch = gate.fetch;
    gate.fetch = async (url, init) => {
      const body = init.body ? JSON.parse(init.body) : undefined;
      if (gateDown && body?.type === "unknown") throw new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
      return originalFetch(url, init);
    };
    const s = signed(rerunCall());
    const first = parse(await receiver.receive(s.body, s.headers));
    assert.equal(first.status, 500);
    assert.equal(first.outcome, "failed");
    assert.equal(first.detail, "the summary call timed out");
    assert.ok(clientLogs.some(([level, m]) => level === "error" && /could not be reported/.test(m)));
    assert.ok(logs.some(([level, m]) => level === "error" && /released the claim/.test(m)));
    gateDown = false;
    const retry = signed(rerunCall());
    assert.deepEqual(parse(await receiver.receive(retry.body, retry.headers)), { status: 200, outcome: "done" });
    assert.equal(runs(), 2);
    assert.deepEqual(outside, ["ORD-1107:ai_summary", "ORD-1107:ai_summary"], "the same original key both times");
    assert.equal(gate.ops.get(PID).steps[1].result_id, "sum-1");
  });
});
