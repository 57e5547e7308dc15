// The schema check: what the kit sends and every canned answer the tests use, validated against the OpenAPI
// document the server serves ($RERUN_GATE_OPENAPI, else test/openapi.json), with ajv (draft 2020-12).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Client, MemoryStore, OutcomeUnknown, RerunReceiver, StepFailed } from "../dist/index.js";
import { FakeGate, problem, testOptions, validator } from "./support/fake-gate.mjs";
import { DOCUMENT_PATH, loadDocument } from "./support/openapi.mjs";
import { SECRET, rerunCall, signed } from "./support/rerun-call.mjs";

const doc = loadDocument();
const v = validator();

describe("the OpenAPI document", () => {
  test(`loads (${DOCUMENT_PATH}) and every component schema compiles with its refs`, (t) => {
    assert.equal(doc.openapi.slice(0, 3), "3.1");
    const names = Object.keys(doc.components.schemas);
    for (const name of ["RegisterOperation", "RegisterStep", "OperationView", "StepView", "StepEvent", "StepEventAnswer", "ProblemBody"]) {
      assert.ok(names.includes(name), `components.schemas.${name}`);
    }
    for (const name of names) v.schema(name, null); // compiles (or throws on an unresolved ref)
  });

  test("the validator bites (invalid bodies are rejected)", () => {
    assert.notDeepEqual(v.schema("RegisterOperation", { process_id: "P", workflow: "w", department: "sales", steps: [], extra: 1 }), []);
    assert.notDeepEqual(v.schema("RegisterOperation", { process_id: "bad id", workflow: "w", department: "sales", steps: [] }), []);
    assert.notDeepEqual(v.schema("StepEvent", { seq: -1, type: "started" }), []);
    assert.notDeepEqual(v.schema("StepEvent", { seq: 1, type: "finished" }), []);
    assert.notDeepEqual(v.schema("StepEvent", { seq: 1, type: "failed", error: { class: "typo", message: "x" } }), []);
    assert.notDeepEqual(v.request("POST", "http://x/api/v1/operations", {}, "{}"), [], "a missing Idempotency-Key is caught");
  });

  test(
    "its ErrorClass enum lists the values the server accepts on the wire",
    () => {
      assert.ok(doc.components.schemas.ErrorClass.enum.includes("timeout"));
    },
  );
});

describe("every request body the kit sends", () => {
  test("register, operation and every step event type validate against the document", async () => {
    const gate = new FakeGate();
    const { options } = testOptions(gate, { seqStore: new MemoryStore() });
    const client = new Client(options);
    // register: with every optional field, and with none
    await client.register({
      processId: "ORD-9001",
      workflow: "order-intake",
      department: "sales",
      businessKey: "ORDER-9001",
      content: { order_id: "ORDER-9001", amount: 4000 },
      steps: [
        { name: "register_order", content: { amount: 4000, currency: "JPY" } },
        { name: "ai_summary", idempotencyKey: "ORD-9001/ai:summary", content: { order: "ORD-9001" } },
      ],
    });
    await client.register({ processId: "ORD-9002", workflow: "order-intake", department: "sales", steps: [{ name: "register_order" }, { name: "ai_summary" }] });
    await client.operation("ORD-9001");
    // started, heartbeat (with usage), succeeded
    await client.withStep("ORD-9001", "ai_summary", async (step) => {
      step.usage = { input_tokens: 120, output_tokens: 40 };
      await step.heartbeat();
      return "resp_1";
    });
    // failed and unknown, with every class the kit derives
    const failures = [
      new StepFailed("validation", "amount must be positive"),
      new OutcomeUnknown("no id came back"),
      new DOMException("timed out", "TimeoutError"),
      new TypeError("fetch failed", { cause: Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" }) }),
      new TypeError("fetch failed", { cause: Object.assign(new Error("refused"), { code: "ECONNREFUSED" }) }),
      new Error("anything else"),
    ];
    for (const err of failures) {
      await assert.rejects(client.withStep("ORD-9001", "register_order", async () => { throw err; }));
    }
    const sentTypes = new Set(gate.events.map((e) => e.body.type));
    assert.deepEqual([...sentTypes].sort(), ["failed", "heartbeat", "started", "succeeded", "unknown"]);
    const classes = new Set(gate.events.filter((e) => e.body.error).map((e) => e.body.error.class));
    assert.deepEqual([...classes].sort(), ["no_response", "other", "result_unknown", "timeout", "unavailable", "validation"]);
    // every request, its headers and its body (the fake validated each as it came; once more, explicitly)
    for (const r of gate.requests) {
      assert.deepEqual(v.request(r.method, r.url, r.headers, r.bodyText), [], `${r.method} ${r.path} ${r.bodyText ?? ""}`);
    }
    assert.deepEqual(gate.violations, []);
  });
});

describe("every canned answer the tests use", () => {
  const op = "http://x/api/v1/operations";
  const one = "http://x/api/v1/operations/ORD-1";
  const events = "http://x/api/v1/operations/ORD-1/steps/register_order/events";
  const canned = [
    ["POST", op, problem(400, "bad-request", "the Idempotency-Key header is required")],
    ["POST", op, problem(401, "token-missing", "send the API token")],
    ["POST", op, problem(401, "invalid-token", "the API token is not valid")],
    ["POST", op, problem(404, "not-found", "not found")],
    ...["idempotency-key-mismatch", "idempotency-key-in-flight", "process-id-exists", "idempotency-key-taken"].map((slug) => ["POST", op, problem(409, slug, `words about ${slug}`)]),
    ["POST", op, problem(422, "validation", "unknown workflow 'nope'", { errors: [{ field: "workflow", message: "unknown workflow" }] })],
    ["POST", op, problem(429, "rate-limited", "over the rate", { headers: { "retry-after": "2" } })],
    ["GET", one, problem(404, "not-found", "not found")],
    ["POST", events, problem(422, "validation", "operation ORD-1 has no step 'x'", { errors: [{ field: "step", message: "unknown" }] })],
  ];
  for (const [method, url, answer] of canned) {
    test(`${answer.status} ${answer.body.type} to ${method} ${new URL(url).pathname}`, () => {
      assert.deepEqual(v.response(method, url, answer.status, answer.headers["content-type"], JSON.stringify(answer.body)), []);
    });
  }

  test("the fake's OperationView (with warnings), StepEventAnswer and a StaleSeq answer", async () => {
    const gate = new FakeGate();
    const reg = gate.handle({ method: "POST", path: "/api/v1/operations", headers: { authorization: "Bearer rg_test", "idempotency-key": "k" }, body: { process_id: "ORD-1", workflow: "order-intake", department: "sales", steps: [] } });
    assert.deepEqual(v.response("POST", op, 201, "application/json", JSON.stringify(reg.body)), []);
    const withWarnings = { ...reg.body, warnings: [{ kind: "step_content_missing", step: "register_order", message: "no content" }] };
    assert.deepEqual(v.response("POST", op, 201, "application/json", JSON.stringify(withWarnings)), []);
    const ev = gate.handle({ method: "POST", path: "/api/v1/operations/ORD-1/steps/register_order/events", headers: { authorization: "Bearer rg_test" }, body: { seq: 1, type: "succeeded", result_id: "o-1" } });
    assert.deepEqual(v.response("POST", events, 200, "application/json", JSON.stringify(ev.body)), []);
    const stale = { applied: false, step: { ...ev.body.step, last_seq: 6 } };
    assert.deepEqual(v.response("POST", events, 200, "application/json", JSON.stringify(stale)), []);
    assert.deepEqual(v.response("GET", one, 200, "application/json", JSON.stringify(gate.ops.get("ORD-1"))), []);
  });
});

describe("the rerun call (webhooks)", () => {
  const hook = doc.webhooks?.rerunApproved;
  const method = hook && ["post", "put"].find((m) => hook[m]);

  test("a RerunCall (approved and test) and its headers validate against webhooks → rerunApproved", () => {
    assert.ok(hook, "the document's webhooks section has no `rerunApproved`");
    assert.ok(method, "webhooks.rerunApproved has no post operation");
    const pointer = `/webhooks/rerunApproved/${method}/requestBody/content/application~1json/schema`;
    const approved = rerunCall();
    const testCall = rerunCall({ type: "rerun.test", steps: [{ name: "ai_summary", idempotency_key: "test:ORD-1107:ai_summary" }] });
    assert.deepEqual(v.at(pointer, approved), []);
    assert.deepEqual(v.at(pointer, testCall), []);
    assert.deepEqual(v.at(pointer, { ...approved, approved_at: null }), [], "approved_at may be null");
    assert.notDeepEqual(v.at(pointer, { ...approved, steps: "all" }), [], "the schema bites");
    const { headers } = signed(approved);
    for (const [i, p] of (hook[method].parameters ?? []).entries()) {
      if (p.in !== "header") continue;
      const value = headers[p.name.toLowerCase()];
      if (p.required) assert.ok(value !== undefined, `the call carries the ${p.name} header`);
      if (value !== undefined && p.schema) assert.deepEqual(v.at(`/webhooks/rerunApproved/${method}/parameters/${i}/schema`, value), [], p.name);
    }
  });

  test("the receiver's answers validate against the webhook's documented answers", async (t) => {
    let fail = false;
    let stepFails = false;
    const gate = new FakeGate();
    const client = new Client(testOptions(gate).options);
    await client.register({ processId: "ORD-1107", workflow: "order-intake", department: "sales", steps: [{ name: "register_order" }, { name: "ai_summary" }] });
    const receiver = new RerunReceiver({
      secret: SECRET,
      store: new MemoryStore(),
      handler: async () => {
        if (fail) throw new Error("down");
        if (stepFails) {
          await client.withStep("ORD-1107", "ai_summary", async () => {
            throw new OutcomeUnknown("no answer", { errorClass: "timeout" });
          });
        }
      },
      logger: { warn() {}, error() {} },
    });
    const answers = [];
    const s = signed(rerunCall());
    answers.push(await receiver.receive(s.body, s.headers)); // done
    answers.push(await receiver.receive(s.body, s.headers)); // duplicate
    const tc = signed(rerunCall({ type: "rerun.test", rerun_id: "t-1" }), { id: "t-1" });
    answers.push(await receiver.receive(tc.body, tc.headers)); // test
    answers.push(await receiver.receive(s.body, { ...s.headers, "webhook-signature": "v1,AAAA" })); // 401
    const bad = signed(undefined, { id: "b-1", body: JSON.stringify(rerunCall({ type: "x" })) });
    answers.push(await receiver.receive(bad.body, bad.headers)); // 422
    fail = true;
    const f = signed(rerunCall({ rerun_id: "f-1" }), { id: "f-1" });
    answers.push(await receiver.receive(f.body, f.headers)); // 500
    fail = false;
    stepFails = true;
    const r = signed(rerunCall({ rerun_id: "r-1" }), { id: "r-1" });
    answers.push(await receiver.receive(r.body, r.headers)); // 200 done, with the step's report as detail
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 401, 422, 500, 200]);
    assert.match(JSON.parse(answers.at(-1).body).detail, /^ai_summary: reported unknown \(timeout\)/);
    const responses = hook?.[method]?.responses ?? {};
    const hasAnswerSchema = Boolean(doc.components?.schemas?.RerunAnswer);
    for (const a of answers) {
      const documented = responses[String(a.status)];
      const body = JSON.parse(a.body);
      if (documented?.content?.["application/json"]?.schema) {
        const pointer = `/webhooks/rerunApproved/${method}/responses/${a.status}/content/application~1json/schema`;
        assert.deepEqual(v.at(pointer, body), [], `${a.status} ${a.body}`);
      } else if (hasAnswerSchema) {
        if (!documented) t.diagnostic(`the document's webhook lists no ${a.status} answer; validated against RerunAnswer`);
        assert.deepEqual(v.schema("RerunAnswer", body), [], `${a.status} ${a.body}`);
      } else {
        assert.fail(`no schema for the receiver's ${a.status} answer in the document`);
      }
    }
  });
});
