import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  BadRequest,
  Client,
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
  TokenMissing,
  ValidationFailed,
} from "../dist/index.js";
import { FakeGate, problem, testOptions } from "./support/fake-gate.mjs";

const ORDER = {
  processId: "ORD-1107",
  workflow: "order-intake",
  department: "sales",
  businessKey: "ORDER-1107",
  steps: [
    { name: "register_order", content: { amount: 4000, currency: "JPY" } },
    { name: "ai_summary", content: { order: "ORD-1107" } },
  ],
};

const isRegister = (r) => r.method === "POST" && r.path === "/api/v1/operations";

function setup(extra) {
  const gate = new FakeGate();
  const t = testOptions(gate, extra);
  return { gate, ...t, client: new Client(t.options) };
}

describe("register", () => {
  test("sends the body with derived step keys and a derived Idempotency-Key; returns the view", async () => {
    const { gate, client } = setup();
    const reg = await client.register(ORDER);
    assert.equal(gate.requests.length, 1);
    const sent = gate.requests[0];
    assert.equal(sent.headers["idempotency-key"], "register:order-intake:ORD-1107");
    assert.equal(sent.headers.authorization, "Bearer rg_test");
    assert.deepEqual(sent.body, {
      process_id: "ORD-1107",
      workflow: "order-intake",
      department: "sales",
      business_key: "ORDER-1107",
      steps: [
        { name: "register_order", idempotency_key: "ORD-1107:register_order", content: { amount: 4000, currency: "JPY" } },
        { name: "ai_summary", idempotency_key: "ORD-1107:ai_summary", content: { order: "ORD-1107" } },
      ],
    });
    assert.equal(reg.process_id, "ORD-1107");
    assert.equal(reg.status, "running");
    assert.equal(reg.replayed, false);
    assert.deepEqual(reg.warnings, []);
    assert.deepEqual(reg.steps.map((s) => s.idempotency_key), ["ORD-1107:register_order", "ORD-1107:ai_summary"]);
    assert.deepEqual(gate.violations, []);
  });

  test("explicit keys are used as given", async () => {
    const { gate, client } = setup();
    await client.register({ ...ORDER, idempotencyKey: "my-key", steps: [{ name: "register_order", idempotencyKey: "K-1" }, { name: "ai_summary" }] });
    assert.equal(gate.requests[0].headers["idempotency-key"], "my-key");
    assert.deepEqual(gate.requests[0].body.steps, [
      { name: "register_order", idempotency_key: "K-1" },
      { name: "ai_summary", idempotency_key: "ORD-1107:ai_summary" },
    ]);
  });

  test("the same registration again is a replay, not an error", async () => {
    const { gate, client } = setup();
    const first = await client.register(ORDER);
    const again = await client.register(ORDER);
    assert.equal(first.replayed, false);
    assert.equal(again.replayed, true);
    assert.equal(again.created_at, first.created_at);
    assert.deepEqual(gate.violations, []);
  });

  test("a lost answer is retried with the SAME Idempotency-Key and gets the replayed answer", async () => {
    const { gate, client, sleeps, logs } = setup();
    gate.once(isRegister, { dropAnswer: true });
    const reg = await client.register(ORDER);
    assert.equal(reg.replayed, true);
    assert.equal(gate.requests.length, 2);
    assert.equal(gate.requests[0].headers["idempotency-key"], gate.requests[1].headers["idempotency-key"]);
    assert.equal(gate.requests[0].bodyText, gate.requests[1].bodyText);
    assert.equal(sleeps.length, 1);
    assert.ok(sleeps[0] >= 250 && sleeps[0] <= 500, `first backoff ${sleeps[0]} in [250, 500]`);
    assert.match(logs[0][1], /retrying/);
    assert.equal(gate.ops.size, 1);
  });

  test("429 with Retry-After waits that long, then succeeds", async () => {
    const { gate, client, sleeps } = setup();
    gate.once(isRegister, { respond: problem(429, "rate-limited", "over the rate", { headers: { "retry-after": "2" } }) });
    gate.once(isRegister, { respond: problem(429, "rate-limited", "over the rate", { headers: { "retry-after": "7" } }) });
    const reg = await client.register(ORDER);
    assert.equal(reg.replayed, false);
    assert.deepEqual(sleeps, [2000, 7000]);
    assert.deepEqual(gate.violations, []);
  });

  test("502/503/504 are retried with growing, jittered backoff", async () => {
    const { gate, client, sleeps } = setup({ backoffMs: 100 });
    for (const status of [502, 503, 504]) {
      gate.once(isRegister, { respond: { status, headers: { "content-type": "text/plain" }, body: "Bad Gateway" } });
    }
    await client.register(ORDER);
    assert.equal(sleeps.length, 3);
    sleeps.forEach((ms, i) => assert.ok(ms >= (100 * 2 ** i) / 2 && ms <= 100 * 2 ** i, `backoff ${i}: ${ms}`));
  });

  test("429 on every attempt ends in RateLimited after `retries` retries", async () => {
    const { gate, client, sleeps } = setup({ retries: 2 });
    for (let i = 0; i < 3; i++) gate.once(isRegister, { respond: problem(429, "rate-limited", "over the rate", { headers: { "retry-after": "1" } }) });
    await assert.rejects(client.register(ORDER), (e) => {
      assert.ok(e instanceof RateLimited && e instanceof RerunGateError);
      assert.equal(e.status, 429);
      assert.equal(e.retryAfterSeconds, 1);
      assert.match(e.message, /try again after 1 seconds/);
      return true;
    });
    assert.equal(gate.requests.length, 3);
    assert.deepEqual(sleeps, [1000, 1000]);
  });

  test("network errors on every attempt end in NetworkError", async () => {
    const { gate, client } = setup({ retries: 1 });
    gate.once(isRegister, { refuse: true }).once(isRegister, { timeout: true });
    await assert.rejects(client.register(ORDER), (e) => e instanceof NetworkError && /2 attempt/.test(e.message) && e.status === 0);
  });

  test("a 2xx answer without its JSON is a broken answer: retried", async () => {
    const { gate, client } = setup();
    gate.once(isRegister, { respond: { status: 201, headers: { "content-type": "application/json" }, body: '{"process_id": "ORD-' } });
    const reg = await client.register(ORDER);
    assert.equal(reg.process_id, "ORD-1107");
    assert.equal(gate.requests.length, 2);
  });

  const CONFLICTS = [
    ["idempotency-key-mismatch", IdempotencyKeyMismatch, /register a new process_id/],
    ["idempotency-key-in-flight", IdempotencyKeyInFlight, /call register\(\) again with the SAME key/],
    ["process-id-exists", ProcessIdExists, /reuse the key of the first registration/],
    ["idempotency-key-taken", IdempotencyKeyTaken, /unique at its outside system/],
  ];
  for (const [slug, Type, advice] of CONFLICTS) {
    test(`409 ${slug} is ${Type.name}, never retried`, async () => {
      const { gate, client, sleeps } = setup();
      gate.once(isRegister, { respond: problem(409, slug, `the server's words about ${slug}`) });
      await assert.rejects(client.register(ORDER), (e) => {
        assert.ok(e instanceof Type, `${e.name} is ${Type.name}`);
        assert.ok(e instanceof RerunGateError);
        assert.equal(e.name, Type.name);
        assert.equal(e.status, 409);
        assert.equal(e.problem, slug);
        assert.equal(e.detail, `the server's words about ${slug}`);
        assert.match(e.message, advice);
        return true;
      });
      assert.equal(gate.requests.length, 1);
      assert.deepEqual(sleeps, []);
      assert.deepEqual(gate.violations, []);
    });
  }

  test("the real conflicts of the fake: a correction, another key for the same process, a taken step key", async () => {
    const { client } = setup();
    await client.register(ORDER);
    await assert.rejects(client.register({ ...ORDER, steps: [{ name: "register_order", content: { amount: 5000, currency: "JPY" } }, { name: "ai_summary" }] }), IdempotencyKeyMismatch);
    await assert.rejects(client.register({ ...ORDER, idempotencyKey: "other" }), ProcessIdExists);
    await assert.rejects(
      client.register({ ...ORDER, processId: "ORD-2", steps: [{ name: "register_order", idempotencyKey: "ORD-1107:register_order" }, { name: "ai_summary" }] }),
      IdempotencyKeyTaken,
    );
  });

  test("401s, 404, 422 and 400 are typed and not retried", async () => {
    const { gate, client } = setup();
    await assert.rejects(new Client({ ...testOptions(gate).options, token: "rg_wrong" }).register(ORDER), (e) => e instanceof InvalidToken && e.problem === "invalid-token" && /server token create/.test(e.message));
    gate.once(isRegister, { respond: problem(401, "token-missing", "send the API token") });
    await assert.rejects(client.register(ORDER), (e) => e instanceof TokenMissing && /pass `token`/.test(e.message));
    gate.once(isRegister, { respond: problem(404, "not-found", "not found") });
    await assert.rejects(client.register(ORDER), NotFound);
    gate.once(isRegister, { respond: problem(400, "bad-request", "the Idempotency-Key header is required") });
    await assert.rejects(client.register(ORDER), BadRequest);
    await assert.rejects(client.register({ ...ORDER, workflow: "nope" }), (e) => {
      assert.ok(e instanceof ValidationFailed);
      assert.deepEqual(e.errors, [{ field: "workflow", message: "unknown workflow" }]);
      assert.match(e.message, /workflow: unknown workflow/);
      return true;
    });
    assert.equal(gate.requests.length, 5);
    assert.deepEqual(gate.violations, []);
  });

  test("warnings are returned and each is logged with what to do", async () => {
    const { gate, client, logs } = setup();
    gate.once(isRegister, {
      respond: (req) => {
        const answer = gate.handle(req);
        answer.body.warnings = [{ kind: "step_content_missing", step: "register_order", message: "register_order has no content" }];
        return answer;
      },
    });
    const reg = await client.register({ ...ORDER, steps: [{ name: "register_order" }, { name: "ai_summary" }] });
    assert.equal(reg.warnings.length, 1);
    const warned = logs.filter(([level]) => level === "warn").map(([, m]) => m);
    assert.equal(warned.length, 1);
    assert.match(warned[0], /step_content_missing, step register_order/);
    assert.match(warned[0], /pass the step's `content`/);
    assert.deepEqual(gate.violations, []);
  });
});

describe("register refuses empty names and keys before sending anything", () => {
  const cases = [
    ["an empty step name", { steps: [{ name: "" }, { name: "ai_summary" }] }, /steps\[0\] has an empty `name`/],
    ["a blank step name", { steps: [{ name: "register_order" }, { name: "  " }] }, /steps\[1\] has an empty `name`/],
    ["a missing step name", { steps: [{ content: { amount: 1 } }] }, /steps\[0\] has an empty `name`/],
    ["an empty step idempotencyKey", { steps: [{ name: "register_order", idempotencyKey: "" }, { name: "ai_summary" }] }, /step 'register_order' has an empty `idempotencyKey`; .* leave it out to use `<processId>:<name>`/],
    ["a blank step idempotencyKey", { steps: [{ name: "register_order" }, { name: "ai_summary", idempotencyKey: " " }] }, /step 'ai_summary' has an empty `idempotencyKey`/],
    ["an empty registration idempotencyKey", { idempotencyKey: "" }, /registration's `idempotencyKey` is empty/],
  ];
  for (const [name, change, message] of cases) {
    test(name, async () => {
      const { gate, client } = setup();
      await assert.rejects(client.register({ ...ORDER, ...change }), (e) => {
        assert.ok(e instanceof TypeError, e.name);
        assert.match(e.message, /^rerun-gate: register\("ORD-1107"\): /);
        assert.match(e.message, message);
        return true;
      });
      assert.equal(gate.requests.length, 0);
    });
  }
});

describe("per-request timeout", () => {
  const timeouts = async (extra) => {
    const seen = [];
    const original = AbortSignal.timeout;
    AbortSignal.timeout = (ms) => {
      seen.push(ms);
      return original.call(AbortSignal, ms);
    };
    try {
      const { client } = setup(extra);
      await client.register(ORDER);
      await client.operation("ORD-1107");
    } finally {
      AbortSignal.timeout = original;
    }
    return seen;
  };

  test("10 s by default, on every HTTP exchange", async () => {
    assert.deepEqual(await timeouts(), [10_000, 10_000]);
  });

  test("timeoutMs sets it", async () => {
    assert.deepEqual(await timeouts({ timeoutMs: 2_500 }), [2_500, 2_500]);
  });
});

describe("operation", () => {
  test("reads the view back; process ids with '/' and ':' are encoded", async () => {
    const { gate, client } = setup();
    await client.register({ ...ORDER, processId: "A/B:1" });
    const view = await client.operation("A/B:1");
    assert.equal(view.process_id, "A/B:1");
    assert.equal(gate.requests[1].path, "/api/v1/operations/A%2FB%3A1");
    await assert.rejects(client.operation("missing"), (e) => e instanceof NotFound && e.status === 404);
    assert.deepEqual(gate.violations, []);
  });

  test("503 while reading is retried; the base URL's trailing slash is dropped", async () => {
    const gate = new FakeGate();
    const { options, sleeps } = testOptions(gate);
    const client = new Client({ ...options, baseUrl: "http://gate.test/" });
    await client.register(ORDER);
    gate.once((r) => r.method === "GET", { respond: { status: 503, headers: { "retry-after": "3", "content-type": "text/plain" }, body: "busy" } });
    const view = await client.operation("ORD-1107");
    assert.equal(view.workflow, "order-intake");
    assert.deepEqual(sleeps, [3000]);
    assert.ok(gate.requests.every((r) => !r.path.startsWith("//")));
  });

  test("the last retry's 503 becomes ServerUnavailable", async () => {
    const { gate, client } = setup({ retries: 0 });
    gate.once(() => true, { respond: { status: 503, headers: { "content-type": "text/plain" }, body: "busy" } });
    await assert.rejects(client.operation("ORD-1107"), ServerUnavailable);
  });
});
