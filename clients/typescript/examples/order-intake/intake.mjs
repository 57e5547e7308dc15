// The order-intake story, first half: register the operation, run register_order, refuse a "correction",
// then stop before ai_summary (the crash). Configured only by environment variables:
//   RERUN_GATE_URL, RERUN_GATE_TOKEN, OUTSIDE_URL, STATE_DIR, PROCESS_ID
// Run (after `npm ci`, which builds dist/):  node examples/order-intake/intake.mjs
// The last line on stdout is one JSON object; the kit's and this script's notes go to stderr.
import { join } from "node:path";
import { Client, FileStore, classifyError, outcomeOfStatus } from "../../dist/index.js";

const env = (name) => {
  const value = process.env[name];
  if (!value) {
    console.error(`intake: set ${name} (see examples/order-intake in the kit's README)`);
    process.exit(2);
  }
  return value;
};
const RERUN_GATE_URL = env("RERUN_GATE_URL");
const RERUN_GATE_TOKEN = env("RERUN_GATE_TOKEN");
const OUTSIDE_URL = env("OUTSIDE_URL").replace(/\/+$/, "");
const STATE_DIR = env("STATE_DIR");
const PROCESS_ID = env("PROCESS_ID");

// The story's first network fault: the registration is sent and done, but its answer never arrives (the
// connection broke). The kit retries with the same Idempotency-Key and gets the stored answer, replayed.
let breakNextRegistration = true;
const unreliableFetch = async (url, init) => {
  const res = await fetch(url, init);
  if (breakNextRegistration && init.method === "POST" && new URL(url).pathname === "/api/v1/operations") {
    breakNextRegistration = false;
    await res.arrayBuffer(); // the server finished; only the answer is lost
    const socketError = Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" });
    console.error("intake: (fault injected) the registration's answer was lost on the way back");
    throw new TypeError("fetch failed", { cause: socketError });
  }
  return res;
};

const store = new FileStore(join(STATE_DIR, "rerun-gate-state.json"));
const client = new Client({ baseUrl: RERUN_GATE_URL, token: RERUN_GATE_TOKEN, fetch: unreliableFetch, seqStore: store });

const ORDER = { amount: 4000, currency: "JPY" };

/** POST one order to the order system with the step's idempotency key; answers {res, body}. */
async function postOrder(key, content, extraHeaders = {}) {
  const res = await fetch(`${OUTSIDE_URL}/orders/requests`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key, "process-id": PROCESS_ID, ...extraHeaders },
    body: JSON.stringify(content),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text(); // a connection broken mid-answer throws here
  return { res, body: text ? JSON.parse(text) : null };
}

try {
  // (1) Register, every step with the key the kit derives (`<process_id>:<step>`).
  const registration = await client.register({
    processId: PROCESS_ID,
    workflow: "order-intake",
    department: "sales",
    businessKey: `ORDER-${PROCESS_ID}`,
    steps: [
      { name: "register_order", content: ORDER },
      { name: "ai_summary", content: { order: PROCESS_ID } },
    ],
  });
  console.error(`intake: registered ${registration.process_id} (replayed: ${registration.replayed})`);

  // (2) register_order through the step helper: its first call loses the answer; the retry with the SAME key
  // gets the same order back (replayed), never a second order.
  let orderReplayed = false;
  const orderId = await client.withStep(PROCESS_ID, "register_order", async (step) => {
    for (let attempt = 1; ; attempt++) {
      try {
        const fault = attempt === 1 ? { "demo-fault": "drop-answer" } : {};
        const { res, body } = await postOrder(step.idempotencyKey, ORDER, fault);
        // 4xx/502/503: it certainly did not happen (failed); 504: it may have (unknown, retried below).
        if (!res.ok) throw outcomeOfStatus(res.status, `the order system answered ${res.status}: ${body?.detail ?? ""}`);
        orderReplayed = res.headers.get("idempotency-replayed") === "true";
        return body.id;
      } catch (err) {
        const outcome = classifyError(err);
        // Lost answer: it may have happened. Retrying with the same key is safe: the order system deduplicates.
        if (outcome.type === "unknown" && attempt < 3) {
          console.error(`intake: the order call lost its answer (${outcome.errorClass}); retrying with the same Idempotency-Key`);
          continue;
        }
        throw err;
      }
    }
  });
  console.error(`intake: register_order succeeded: order ${orderId} (replayed: ${orderReplayed})`);

  // (3) The 5,000 yen "correction" under the same key: the order system refuses it (409) and nothing changes.
  const orderKey = registration.steps.find((s) => s.name === "register_order").idempotency_key;
  const correction = await postOrder(orderKey, { amount: 5000, currency: "JPY" });
  const correctionRefused = correction.res.status === 409;
  if (correctionRefused) {
    console.error(
      `intake: the order system refused the correction (409 ${correction.body?.type ?? ""}): order ${orderId} stays at 4,000 JPY; a correction is a new order, decided by a person`,
    );
  } else {
    console.error(`intake: unexpected: the correction was answered ${correction.res.status}`);
  }

  // (4) The crash of the story: stop before ai_summary. Rerun Gate sees the step stall; a person approves a
  // rerun, and receiver.mjs runs ai_summary with its original key.
  console.log(
    JSON.stringify({
      registered: true,
      registration_replayed: registration.replayed,
      order_id: orderId,
      order_replayed: orderReplayed,
      correction_refused: correctionRefused,
    }),
  );
  process.exitCode = 0;
} catch (err) {
  console.error(`intake: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
}
