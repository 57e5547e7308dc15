// The examples' interface (as the project's suite drives them), against a loopback fake of Rerun Gate and its
// demo outside systems: environment variables in, the JSON lines out.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { FakeGate } from "./support/fake-gate.mjs";
import { SECRET, rerunCall, signed } from "./support/rerun-call.mjs";

const example = (name) => fileURLToPath(new URL(`../examples/order-intake/${name}`, import.meta.url));

let gate, server, stateDir, env;
before(async () => {
  gate = new FakeGate({ token: "rg_example" });
  server = await gate.listen();
  stateDir = await mkdtemp(join(tmpdir(), "rerun-gate-examples-"));
  env = {
    PATH: process.env.PATH,
    RERUN_GATE_URL: server.url,
    RERUN_GATE_TOKEN: "rg_example",
    OUTSIDE_URL: `${server.url}/demo`,
    RERUN_GATE_SIGNING_SECRET: SECRET,
    STATE_DIR: stateDir,
  };
});
after(async () => {
  await server.close();
  await rm(stateDir, { recursive: true, force: true });
});

function run(script, extraEnv) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [example(script)], { env: { ...env, ...extraEnv } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

describe("examples/order-intake", () => {
  test("intake.mjs: replayed registration, replayed order, refused correction, one JSON line last", async () => {
    const { code, stdout, stderr } = await run("intake.mjs", { PROCESS_ID: "ORD-5001" });
    assert.equal(code, 0, stderr);
    const lines = stdout.trim().split("\n");
    const last = JSON.parse(lines.at(-1));
    assert.equal(last.registered, true);
    assert.equal(last.registration_replayed, true);
    assert.equal(last.order_replayed, true);
    assert.equal(last.correction_refused, true);
    assert.match(last.order_id, /^orders_/);
    // what Rerun Gate saw: one registration (sent twice), register_order succeeded with the order's id
    const op = gate.ops.get("ORD-5001");
    assert.equal(op.business_key, "ORDER-ORD-5001");
    assert.equal(gate.requests.filter((r) => r.method === "POST" && r.path === "/api/v1/operations").length, 2);
    const [order, summary] = op.steps;
    assert.equal(order.state, "succeeded");
    assert.equal(order.result_id, last.order_id);
    assert.equal(summary.state, "not_started", "the story stops before ai_summary");
    // the order system holds one order of 4,000 JPY under the step's key
    const record = gate.outside.get("orders:ORD-5001:register_order");
    assert.deepEqual(record.content, { amount: 4000, currency: "JPY" });
    assert.equal(record.conflicts, 1);
    assert.deepEqual(gate.violations, []);
  });

  test("receiver.mjs: listening, done / duplicate / test lines, 401, other paths 404, SIGTERM exits 0", async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [example("receiver.mjs")], { env: { ...env, RECEIVER_PORT: String(port) } });
    const lines = [];
    let stderr = "";
    let buffer = "";
    let waiting;
    child.stderr.on("data", (d) => (stderr += d));
    child.stdout.on("data", (d) => {
      buffer += d;
      let i;
      while ((i = buffer.indexOf("\n")) >= 0) {
        lines.push(buffer.slice(0, i));
        buffer = buffer.slice(i + 1);
        waiting?.();
      }
    });
    const lineCount = (n) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`waited for ${n} lines, have ${JSON.stringify(lines)}; stderr: ${stderr}`)), 5000);
        const check = () => {
          if (lines.length >= n) {
            clearTimeout(timer);
            waiting = undefined;
            resolve();
          }
        };
        waiting = check;
        check();
      });
    const exited = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal })));
    try {
      await lineCount(1);
      assert.equal(lines[0], `listening ${port}`);
      const url = `http://127.0.0.1:${port}/rerun`;
      const post = (s, path = "/rerun") => fetch(`http://127.0.0.1:${port}${path}`, { method: "POST", headers: s.headers, body: s.body });

      // ORD-5001 was registered by the intake test (run before this one); its ai_summary is rerun
      const call = rerunCall({ rerun_id: "rr-100", process_id: "ORD-5001", steps: [{ name: "ai_summary", idempotency_key: "ORD-5001:ai_summary" }] });
      const first = await post(signed(call, { id: "rr-100" }));
      assert.equal(first.status, 200, stderr);
      assert.deepEqual(await first.json(), { outcome: "done" });
      await lineCount(2);
      assert.deepEqual(JSON.parse(lines[1]), { webhook_id: "rr-100", outcome: "done", steps: ["ai_summary"] });
      const summary = gate.ops.get("ORD-5001").steps[1];
      assert.equal(summary.state, "succeeded");
      assert.equal(summary.result_id, gate.outside.get("ai:ORD-5001:ai_summary").id, "reported with the AI system's id");

      const again = await post(signed(call, { id: "rr-100" }));
      assert.deepEqual(await again.json(), { outcome: "duplicate" });
      await lineCount(3);
      assert.deepEqual(JSON.parse(lines[2]), { webhook_id: "rr-100", outcome: "duplicate", steps: ["ai_summary"] });

      const testCall = rerunCall({ type: "rerun.test", rerun_id: "test-1", process_id: "ORD-5001", steps: [{ name: "ai_summary", idempotency_key: "test:ORD-5001:ai_summary" }] });
      const tested = await post(signed(testCall, { id: "test-1" }));
      assert.deepEqual(await tested.json(), { outcome: "test" });
      await lineCount(4);
      assert.deepEqual(JSON.parse(lines[3]), { webhook_id: "test-1", outcome: "test", steps: ["ai_summary"] });
      assert.equal(gate.outside.has("ai:test:ORD-5001:ai_summary"), false, "a test call runs nothing");

      const unsigned = signed(call, { id: "rr-101" });
      delete unsigned.headers["webhook-signature"];
      assert.equal((await post(unsigned)).status, 401);
      assert.equal((await post(signed(call, { id: "rr-102" }), "/other")).status, 404);
      assert.equal((await fetch(url)).status, 405);
      assert.equal(lines.length, 4, "refusals print no line");
    } finally {
      child.kill("SIGTERM");
    }
    const { code } = await exited;
    assert.equal(code, 0, `exit on SIGTERM; stderr: ${stderr}`);
    assert.deepEqual(gate.violations, []);
  });
});
