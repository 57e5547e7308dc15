// The order-intake story, second half: receive approved reruns at http://127.0.0.1:RECEIVER_PORT/rerun and run
// the listed steps with their ORIGINAL idempotency keys. Configured only by environment variables:
//   RERUN_GATE_URL, RERUN_GATE_TOKEN, OUTSIDE_URL, RERUN_GATE_SIGNING_SECRET, STATE_DIR, RECEIVER_PORT
// Run (after `npm ci`, which builds dist/):  node examples/order-intake/receiver.mjs
// Prints `listening <port>` once ready, then one JSON line per handled call; notes go to stderr.
import { createServer } from "node:http";
import { join } from "node:path";
import { Client, FileStore, RerunReceiver, outcomeOfStatus } from "../../dist/index.js";

const env = (name) => {
  const value = process.env[name];
  if (!value) {
    console.error(`receiver: set ${name} (see examples/order-intake in the kit's README)`);
    process.exit(2);
  }
  return value;
};
const RERUN_GATE_URL = env("RERUN_GATE_URL");
const RERUN_GATE_TOKEN = env("RERUN_GATE_TOKEN");
const OUTSIDE_URL = env("OUTSIDE_URL").replace(/\/+$/, "");
const SECRET = env("RERUN_GATE_SIGNING_SECRET");
const STATE_DIR = env("STATE_DIR");
const PORT = Number(env("RECEIVER_PORT"));

// One file for the seqs and the received webhook-ids (the intake uses the same one).
const store = new FileStore(join(STATE_DIR, "rerun-gate-state.json"));
const client = new Client({ baseUrl: RERUN_GATE_URL, token: RERUN_GATE_TOKEN, seqStore: store });

/** What each step calls, with the content it was registered with. */
const STEPS = {
  register_order: { service: "orders", content: () => ({ amount: 4000, currency: "JPY" }) },
  ai_summary: { service: "ai", content: (processId) => ({ order: processId }) },
};

async function callOutside(service, key, processId, content) {
  const res = await fetch(`${OUTSIDE_URL}/${service}/requests`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key, "process-id": processId },
    body: JSON.stringify(content),
    signal: AbortSignal.timeout(5_000), // Rerun Gate waits 10 s for our answer
  });
  const text = await res.text();
  const body = text ? JSON.parse(text) : null;
  // failed for a 4xx/502/503 (it did not happen), unknown/timeout for a 504 (it may have)
  if (!res.ok) throw outcomeOfStatus(res.status, `${service} answered ${res.status}: ${body?.detail ?? text}`);
  return body.id;
}

const receiver = new RerunReceiver({
  secret: SECRET,
  store,
  // Runs ONLY the listed steps, each with its original key: the outside system deduplicates. A step that
  // fails is reported by withStep and ends the delivery (200, with a detail); an error outside a step (an
  // unknown step name) answers 500 and the rerun is sent again.
  handler: async (rerun) => {
    for (const listed of rerun.steps) {
      const step = STEPS[listed.name];
      if (!step) throw new Error(`this integration does not know the step '${listed.name}'`);
      await client.withStep(rerun.process_id, listed.name, () =>
        callOutside(step.service, listed.idempotency_key, rerun.process_id, step.content(rerun.process_id)),
      );
    }
  },
  onResult: ({ webhookId, outcome, rerun }) => {
    if (outcome === "done" || outcome === "duplicate" || outcome === "test") {
      const steps = rerun ? rerun.steps.map((s) => s.name) : [];
      process.stdout.write(`${JSON.stringify({ webhook_id: webhookId, outcome, steps })}\n`);
    }
  },
});
const handle = receiver.nodeHandler();

const server = createServer((req, res) => {
  const path = new URL(req.url ?? "/", "http://localhost").pathname;
  if (path !== "/rerun") {
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ outcome: "refused", detail: "not found: the receiver is at /rerun" }));
    return;
  }
  handle(req, res);
});

server.listen(PORT, "127.0.0.1", () => {
  process.stdout.write(`listening ${PORT}\n`);
});

const stop = () => {
  server.close();
  server.closeAllConnections?.();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
