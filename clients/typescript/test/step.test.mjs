import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  Client,
  FileStore,
  MemoryStore,
  OutcomeUnknown,
  StaleSeq,
  StepFailed,
  ValidationFailed,
  classifyError,
  outcomeOfStatus,
  stepReportOf,
} from "../dist/index.js";
import { FakeGate, refusedError, socketError, testOptions } from "./support/fake-gate.mjs";

const PID = "ORD-2001";
const isEvent = (type) => (r) => r.path.endsWith("/events") && r.body?.type === type;

let dir;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "rerun-gate-step-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function setup({ store = new MemoryStore(), gate = new FakeGate(), ...extra } = {}) {
  const t = testOptions(gate, { seqStore: store, ...extra });
  const client = new Client(t.options);
  if (!gate.ops.has(PID)) {
    await client.register({ processId: PID, workflow: "order-intake", department: "sales", steps: [{ name: "register_order" }, { name: "ai_summary" }] });
  }
  return { gate, client, store, ...t };
}

const types = (events) => events.map((e) => `${e.type}:${e.seq}`);

describe("withStep", () => {
  test("reports started then succeeded with the returned result id; the callback gets the step's key", async () => {
    const { gate, client, store } = await setup();
    let seen;
    const id = await client.withStep(PID, "register_order", async (step) => {
      seen = { key: step.idempotencyKey, seq: step.seq, state: step.view.state };
      return "order-77";
    });
    assert.equal(id, "order-77");
    assert.deepEqual(seen, { key: `${PID}:register_order`, seq: 1, state: "not_started" });
    const events = gate.eventsOf("register_order");
    assert.deepEqual(types(events), ["started:1", "succeeded:2"]);
    assert.equal(events[1].result_id, "order-77");
    assert.equal(await store.getSeq(PID, "register_order"), 2);
    assert.equal(gate.ops.get(PID).steps[0].completed_at !== null, true);
    assert.deepEqual(gate.violations, []);
  });

  test("seq continues across a restart: a new Client with the same FileStore", async () => {
    const path = join(dir, "restart.json");
    const gate = new FakeGate();
    const first = await setup({ gate, store: new FileStore(path) });
    await assert.rejects(
      first.client.withStep(PID, "ai_summary", async () => {
        throw new OutcomeUnknown("the summary call went out, its answer never came");
      }),
      OutcomeUnknown,
    );
    // "restart": everything new but the file
    const second = await setup({ gate, store: new FileStore(path) });
    const id = await second.client.withStep(PID, "ai_summary", async () => "sum-1");
    assert.equal(id, "sum-1");
    assert.deepEqual(types(gate.eventsOf("ai_summary")), ["started:1", "unknown:2", "started:3", "succeeded:4"]);
    assert.equal(gate.eventsOf("ai_summary")[1].error.class, "result_unknown");
    assert.equal(await new FileStore(path).getSeq(PID, "ai_summary"), 4);
    assert.deepEqual(gate.violations, []);
  });

  test("seq is written to the store BEFORE the event is sent", async () => {
    const store = new MemoryStore();
    const gate = new FakeGate();
    const { client } = await setup({ gate, store });
    const storedWhenSent = [];
    const originalFetch = gate.fetch;
    gate.fetch = async (url, init) => {
      if (url.endsWith("/events")) storedWhenSent.push([JSON.parse(init.body).seq, await store.getSeq(PID, "register_order")]);
      return originalFetch(url, init);
    };
    const c2 = new Client({ ...testOptions(gate).options, seqStore: store, fetch: gate.fetch });
    await c2.withStep(PID, "register_order", async () => "x");
    assert.deepEqual(storedWhenSent, [[1, 1], [2, 2]]);
    void client;
  });

  test("a lost store continues from Rerun Gate's last_seq; a store behind it is warned about", async () => {
    const gate = new FakeGate();
    const a = await setup({ gate });
    await assert.rejects(a.client.withStep(PID, "ai_summary", async () => { throw new Error("boom"); }));
    // a new process without any stored seq
    const b = await setup({ gate });
    await assert.rejects(b.client.withStep(PID, "ai_summary", async () => { throw new Error("boom"); }));
    assert.deepEqual(types(gate.eventsOf("ai_summary")), ["started:1", "failed:2", "started:3", "failed:4"]);
    // a store that is behind (restored from an old copy)
    const old = new MemoryStore();
    await old.nextSeq(PID, "ai_summary", 0);
    const c = await setup({ gate, store: old });
    await c.client.withStep(PID, "ai_summary", async () => "ok");
    assert.deepEqual(types(gate.eventsOf("ai_summary")).slice(4), ["started:5", "succeeded:6"]);
    assert.ok(c.logs.some(([level, m]) => level === "warn" && /local seq store had seq 1 .* Rerun Gate has 4/.test(m)));
  });

  test("a completed step is not run again: its stored result id is returned", async () => {
    const { client, gate, logs } = await setup();
    await client.withStep(PID, "register_order", async () => "order-1");
    let ran = false;
    const id = await client.withStep(PID, "register_order", async () => {
      ran = true;
      return "order-2";
    });
    assert.equal(ran, false);
    assert.equal(id, "order-1");
    assert.equal(gate.eventsOf("register_order").length, 2);
    assert.ok(logs.some(([, m]) => /already completed/.test(m)));
  });

  test("an unknown step name is refused before anything is sent", async () => {
    const { client, gate } = await setup();
    await assert.rejects(client.withStep(PID, "nope", async () => "x"), (e) => e instanceof ValidationFailed && /its steps are register_order, ai_summary/.test(e.message));
    assert.equal(gate.events.length, 0);
  });
});

describe("unknown vs failed", () => {
  const cases = [
    ["AbortError (the caller's abort)", () => new DOMException("This operation was aborted", "AbortError"), "unknown", "timeout"],
    ["TimeoutError (AbortSignal.timeout)", () => new DOMException("The operation was aborted due to timeout", "TimeoutError"), "unknown", "timeout"],
    ["UND_ERR_SOCKET (connection broke mid-answer)", socketError, "unknown", "no_response"],
    ["'terminated' (body cut)", () => new TypeError("terminated", { cause: Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" }) }), "unknown", "no_response"],
    ["ECONNRESET", () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }), "unknown", "no_response"],
    ["ECONNREFUSED (nothing was sent)", refusedError, "failed", "unavailable"],
    ["AggregateError of ECONNREFUSED (localhost v4+v6)", () => new TypeError("fetch failed", { cause: new AggregateError([Object.assign(new Error("a"), { code: "ECONNREFUSED" }), Object.assign(new Error("b"), { code: "ECONNREFUSED" })]) }), "failed", "unavailable"],
    ["StepFailed chooses", () => new StepFailed("validation", "amount must be positive"), "failed", "validation"],
    ["StepFailed.fromStatus(503)", () => StepFailed.fromStatus(503), "failed", "unavailable"],
    ["outcomeOfStatus(504): a gateway timeout may have acted upstream", () => outcomeOfStatus(504), "unknown", "timeout"],
    ["StepFailed.fromStatus(504) (existing callers): unknown too", () => StepFailed.fromStatus(504), "unknown", "timeout"],
    ["outcomeOfStatus(422)", () => outcomeOfStatus(422, "amount must be positive"), "failed", "validation"],
    ["OutcomeUnknown", () => new OutcomeUnknown("no id came back"), "unknown", "result_unknown"],
    ["OutcomeUnknown with a class", () => new OutcomeUnknown("still generating", { errorClass: "in_progress" }), "unknown", "in_progress"],
    ["an ordinary error", () => new RangeError("bad input"), "failed", "other"],
  ];
  for (const [name, make, type, cls] of cases) {
    test(`${name} -> ${type} ${cls}, rethrown`, async () => {
      const { client, gate } = await setup();
      const err = make();
      await assert.rejects(client.withStep(PID, "register_order", async () => { throw err; }), (e) => e === err);
      const events = gate.eventsOf("register_order");
      assert.deepEqual(types(events), ["started:1", `${type}:2`]);
      assert.equal(events[1].error.class, cls);
      assert.ok(events[1].error.message.length > 0);
      assert.deepEqual(gate.violations, []);
    });
  }

  test("outcomeOfStatus: only a 504 is unknown; the statuses that certainly did not act are StepFailed", () => {
    const table = [
      [400, "StepFailed", "validation"],
      [401, "StepFailed", "auth_expired"],
      [403, "StepFailed", "unauthorized"],
      [404, "StepFailed", "validation"],
      [409, "StepFailed", "validation"],
      [429, "StepFailed", "rate_limited"],
      [500, "StepFailed", "server_error"],
      [502, "StepFailed", "unavailable"],
      [503, "StepFailed", "unavailable"],
      [504, "OutcomeUnknown", "timeout"],
      [599, "StepFailed", "server_error"],
      [302, "StepFailed", "other"],
    ];
    for (const [status, type, cls] of table) {
      for (const make of [outcomeOfStatus, (st, m) => StepFailed.fromStatus(st, m)]) {
        const e = make(status);
        assert.equal(e.name, type, `${status}`);
        assert.ok(type === "StepFailed" ? e instanceof StepFailed : e instanceof OutcomeUnknown);
        assert.equal(e.errorClass, cls, `${status}`);
        assert.match(e.message, new RegExp(String(status)));
      }
    }
    assert.match(outcomeOfStatus(504).message, /504 \(gateway timeout\): it may have acted/);
    assert.equal(outcomeOfStatus(504, "ai answered 504").message, "ai answered 504");
  });

  test("real errors from fetch: refused, cut mid-answer, timed out", async () => {
    // nothing listens
    const closed = createServer();
    await new Promise((r) => closed.listen(0, "127.0.0.1", r));
    const closedPort = closed.address().port;
    await new Promise((r) => closed.close(r));
    // answers headers, then breaks the connection mid-body
    const breaker = createServer((s) => s.once("data", () => {
      s.write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"id\":");
      setTimeout(() => s.destroy(), 10);
    }));
    // never answers
    const sockets = new Set();
    const silent = createServer((s) => sockets.add(s));
    await Promise.all([breaker, silent].map((s) => new Promise((r) => s.listen(0, "127.0.0.1", r))));
    try {
      const attempt = async (url, init = {}) => {
        try {
          const res = await fetch(url, { method: "POST", body: "{}", ...init });
          await res.text();
        } catch (e) {
          return classifyError(e);
        }
        throw new Error("expected an error");
      };
      assert.deepEqual(
        [
          (await attempt(`http://127.0.0.1:${closedPort}/`)).errorClass,
          (await attempt(`http://127.0.0.1:${breaker.address().port}/`)).errorClass,
          (await attempt(`http://127.0.0.1:${silent.address().port}/`, { signal: AbortSignal.timeout(50) })).errorClass,
        ],
        ["unavailable", "no_response", "timeout"],
      );
      assert.equal((await attempt(`http://127.0.0.1:${closedPort}/`)).type, "failed");
      assert.equal((await attempt(`http://127.0.0.1:${breaker.address().port}/`)).type, "unknown");
    } finally {
      for (const s of sockets) s.destroy();
      await Promise.all([breaker, silent].map((s) => new Promise((r) => { s.close(() => r()); })));
    }
  });
});

describe("the report mark (what the rerun receiver reads)", () => {
  test("an error whose failed/unknown event Rerun Gate accepted carries its report; a step that succeeded has none", async () => {
    const { client } = await setup();
    const err = new OutcomeUnknown("the summary call timed out", { errorClass: "timeout" });
    assert.equal(stepReportOf(err), undefined, "not before it was reported");
    await assert.rejects(client.withStep(PID, "ai_summary", async () => { throw err; }), (e) => e === err);
    assert.deepEqual(stepReportOf(err), { processId: PID, step: "ai_summary", type: "unknown", errorClass: "timeout", message: "the summary call timed out" });
    assert.deepEqual(stepReportOf(new Error("wrapped", { cause: err }))?.step, "ai_summary");
    assert.equal(stepReportOf(new Error("another")), undefined);
    assert.equal(stepReportOf("a string"), undefined);
    assert.equal(stepReportOf(undefined), undefined);
  });

  test("an error whose report could not be sent carries none", async () => {
    const { client, gate } = await setup({ retries: 0 });
    gate.once(isEvent("failed"), { refuse: true });
    const err = new StepFailed("validation", "amount must be positive");
    await assert.rejects(client.withStep(PID, "register_order", async () => { throw err; }), (e) => e === err);
    assert.equal(stepReportOf(err), undefined);
  });

  test("a thrown non-object is rethrown inside an Error (its cause), reported and marked", async () => {
    const { client, gate } = await setup();
    await assert.rejects(client.withStep(PID, "register_order", async () => { throw "boom"; }), (e) => {
      assert.ok(e instanceof Error);
      assert.equal(e.message, "boom");
      assert.equal(e.cause, "boom");
      assert.deepEqual(stepReportOf(e), { processId: PID, step: "register_order", type: "failed", errorClass: "other", message: "boom" });
      return true;
    });
    assert.deepEqual(types(gate.eventsOf("register_order")), ["started:1", "failed:2"]);
  });
});

describe("heartbeats", () => {
  test("sent on a timer with the step's CURRENT seq, stopped when the step ends", async () => {
    const { client, gate } = await setup();
    await client.withStep(PID, "ai_summary", async () => {
      await new Promise((r) => setTimeout(r, 120));
      return "sum";
    }, { heartbeatEveryMs: 25 });
    const events = gate.eventsOf("ai_summary");
    const beats = events.filter((e) => e.type === "heartbeat");
    assert.ok(beats.length >= 2, `${beats.length} heartbeats`);
    assert.ok(beats.every((e) => e.seq === 1), "heartbeats carry the started event's seq");
    assert.equal(events.at(-1).type, "succeeded");
    assert.equal(events.at(-1).seq, 2, "heartbeats used no seq of their own");
    const count = gate.events.length;
    await new Promise((r) => setTimeout(r, 80));
    assert.equal(gate.events.length, count, "no heartbeat after the step ended");
    assert.deepEqual(gate.violations, []);
  });

  test("stopped on failure too; usage set by the callback is sent", async () => {
    const { client, gate } = await setup();
    await assert.rejects(client.withStep(PID, "ai_summary", async (step) => {
      step.usage = { input_tokens: 10, output_tokens: 5 };
      await new Promise((r) => setTimeout(r, 60));
      throw new DOMException("timed out", "TimeoutError");
    }, { heartbeatEveryMs: 20 }));
    const count = gate.events.length;
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(gate.events.length, count);
    const last = gate.eventsOf("ai_summary").at(-1);
    assert.equal(last.type, "unknown");
    assert.deepEqual(last.usage, { input_tokens: 10, output_tokens: 5 });
    assert.deepEqual(gate.violations, []);
  });

  test("the timer never keeps the process alive", async () => {
    const script = `
      import { Client } from ${JSON.stringify(new URL("../dist/index.js", import.meta.url).href)};
      import { FakeGate } from ${JSON.stringify(new URL("./support/fake-gate.mjs", import.meta.url).href)};
      const gate = new FakeGate({ validate: false });
      const client = new Client({ baseUrl: "http://gate.test", token: gate.token, fetch: gate.fetch, logger: { warn() {}, error() {} } });
      await client.register({ processId: "P", workflow: "order-intake", department: "sales", steps: [{ name: "ai_summary" }] });
      // a callback that never settles: only the heartbeat timer is left
      client.withStep("P", "ai_summary", () => new Promise(() => {}), { heartbeatEveryMs: 10 });
      setTimeout(() => console.log("beats", gate.eventsOf("ai_summary").filter((e) => e.type === "heartbeat").length), 60);
    `;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: fileURLToPath(new URL("..", import.meta.url)) });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    let timer;
    const code = await Promise.race([
      new Promise((r) => child.on("exit", r)),
      new Promise((r) => (timer = setTimeout(() => r("still running"), 5000))),
    ]);
    clearTimeout(timer);
    if (code === "still running") child.kill();
    assert.equal(code, 0, out);
    assert.match(out, /beats [1-9]/);
  });
});

describe("seq answers", () => {
  test("applied:false with last_seq == seq after a lost answer is success (the first attempt was applied)", async () => {
    const { client, gate, logs } = await setup();
    gate.once(isEvent("started"), { dropAnswer: true });
    const id = await client.withStep(PID, "register_order", async () => "order-9");
    assert.equal(id, "order-9");
    const sent = gate.events.filter((e) => e.step === "register_order");
    assert.deepEqual(sent.map((e) => [e.body.type, e.body.seq, e.applied]), [
      ["started", 1, true],
      ["started", 1, false],
      ["succeeded", 2, true],
    ]);
    assert.ok(!logs.some(([level]) => level === "error"));
  });

  test("applied:false with last_seq > seq throws StaleSeq saying the local store is behind", async () => {
    const { client, gate, logs } = await setup();
    gate.once(isEvent("started"), {
      respond: (req) => ({
        status: 200,
        headers: { "content-type": "application/json" },
        body: { applied: false, step: { ...gate.ops.get(PID).steps[0], state: "started", last_seq: req.body.seq + 5 } },
      }),
    });
    let ran = false;
    await assert.rejects(client.withStep(PID, "register_order", async () => { ran = true; return "x"; }), (e) => {
      assert.ok(e instanceof StaleSeq);
      assert.equal(e.sentSeq, 1);
      assert.equal(e.lastSeq, 6);
      assert.match(e.message, /local seq store is behind/);
      return true;
    });
    assert.equal(ran, false, "the step is not run on a stale seq");
    assert.ok(logs.some(([level, m]) => level === "error" && /local seq store is behind/.test(m)));
    assert.deepEqual(gate.violations, []);
  });
});
