import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { FileStore, MemoryStore } from "../dist/index.js";

let dir;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "rerun-gate-stores-"));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

for (const [name, make] of [
  ["MemoryStore", () => new MemoryStore()],
  ["FileStore", () => new FileStore(join(dir, `contract-${Math.random()}.json`))],
]) {
  describe(name, () => {
    test("nextSeq = max(stored, server's last_seq) + 1, stored", async () => {
      const s = make();
      assert.equal(await s.getSeq("P", "a"), undefined);
      assert.equal(await s.nextSeq("P", "a", null), 1);
      assert.equal(await s.nextSeq("P", "a", null), 2);
      assert.equal(await s.nextSeq("P", "a", 1), 3, "the stored seq wins when it is newer");
      assert.equal(await s.nextSeq("P", "a", 9), 10, "the server's wins when it is newer");
      assert.equal(await s.getSeq("P", "a"), 10);
      assert.equal(await s.nextSeq("P", "b", 4), 5, "nothing stored: the server's last_seq + 1");
      assert.equal(await s.getSeq("Q", "a"), undefined);
    });

    test("receipts: claim, running, done, release", async () => {
      const s = make();
      assert.equal(await s.claimReceipt("w1"), "claimed");
      assert.equal(await s.claimReceipt("w1"), "running");
      await s.completeReceipt("w1", "done");
      assert.equal(await s.claimReceipt("w1"), "done");
      assert.equal(await s.claimReceipt("w2"), "claimed");
      await s.releaseReceipt("w2");
      assert.equal(await s.claimReceipt("w2"), "claimed");
    });

    test("concurrent nextSeq calls get distinct numbers", async () => {
      const s = make();
      const got = await Promise.all(Array.from({ length: 25 }, () => s.nextSeq("P", "c", null)));
      assert.deepEqual([...got].sort((a, b) => a - b), Array.from({ length: 25 }, (_, i) => i + 1));
    });
  });
}

describe("FileStore on disk", () => {
  test("survives a restart; the file is JSON; no temporary file is left", async () => {
    const path = join(dir, "sub", "state.json");
    const a = new FileStore(path);
    await a.nextSeq("ORD-1", "register_order", null);
    await a.completeReceipt("rr-1", "done");
    const b = new FileStore(path);
    assert.equal(await b.getSeq("ORD-1", "register_order"), 1);
    assert.equal(await b.claimReceipt("rr-1"), "done");
    const data = JSON.parse(await readFile(path, "utf8"));
    assert.deepEqual(data.seqs, { "ORD-1": { register_order: 1 } });
    assert.equal(data.receipts["rr-1"].state, "done");
    assert.deepEqual((await readdir(join(dir, "sub"))).sort(), ["state.json"]);
  });

  test("two instances on one path in one process are serialised", async () => {
    const path = join(dir, "shared.json");
    const a = new FileStore(path);
    const b = new FileStore(path);
    const got = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).nextSeq("P", "s", null)));
    assert.deepEqual([...got].sort((x, y) => x - y), Array.from({ length: 20 }, (_, i) => i + 1));
  });

  test("two processes on one path are serialised by the lock file", async () => {
    const path = join(dir, "processes.json");
    const url = new URL("../dist/index.js", import.meta.url).href;
    const script = `import { FileStore } from ${JSON.stringify(url)};
      const s = new FileStore(${JSON.stringify(path)});
      const got = [];
      for (let i = 0; i < 15; i++) got.push(await s.nextSeq("P", "s", null));
      console.log(JSON.stringify(got));`;
    const run = () =>
      new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ["--input-type=module", "-e", script]);
        let out = "";
        child.stdout.on("data", (d) => (out += d));
        child.stderr.on("data", (d) => (out += d));
        child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(out))));
      });
    const [x, y] = await Promise.all([run(), run()]);
    assert.deepEqual([...x, ...y].sort((a, b) => a - b), Array.from({ length: 30 }, (_, i) => i + 1));
  });

  /** A state file holding running claims claimed `ageMs` ago (with the PID fields an older kit wrote). */
  const claimsFile = async (name, claims) => {
    const path = join(dir, name);
    const receipts = Object.fromEntries(
      Object.entries(claims).map(([id, { ageMs, pid, at }]) => [id, { state: "running", at: at ?? new Date(Date.now() - ageMs).toISOString(), pid }]),
    );
    await writeFile(path, JSON.stringify({ version: 1, seqs: {}, receipts }));
    return path;
  };

  test("a running claim is a lease: taken over after claimTimeoutMs (default 60 s), not before", async () => {
    const path = await claimsFile("lease-default.json", {
      old: { ageMs: 61_000 },
      young: { ageMs: 59_000 },
      broken: { at: "yesterday-ish" },
    });
    const s = new FileStore(path);
    assert.equal(await s.claimReceipt("old"), "claimed", "older than the lease: its holder is taken to have died");
    assert.equal(await s.claimReceipt("young"), "running", "inside the lease: 503, whoever holds it");
    assert.equal(await s.claimReceipt("broken"), "claimed", "an unreadable claim time is not a live lease");
    assert.equal(await s.claimReceipt("old"), "running", "the new claim is a fresh lease");
    const data = JSON.parse(await readFile(path, "utf8"));
    assert.equal(data.receipts.old.pid, undefined, "no PID is written");
  });

  test("PIDs do not count: pid 1 restarted (own PID, old claim) is taken over; a dead PID inside the lease is not", async () => {
    const path = await claimsFile("lease-pids.json", {
      restarted: { ageMs: 120_000, pid: process.pid }, // a container restarted as the same PID
      otherContainer: { ageMs: 1_000, pid: 2 ** 22 + 12345 }, // a PID this container cannot see, still at work
    });
    const s = new FileStore(path);
    assert.equal(await s.claimReceipt("restarted"), "claimed");
    assert.equal(await s.claimReceipt("otherContainer"), "running");
  });

  test("a claim left by a process that died is taken over after the lease; one of a live process is not before it", async () => {
    const path = join(dir, "lease-processes.json");
    const url = new URL("../dist/index.js", import.meta.url).href;
    // a receiver that claims a webhook-id and dies in its handler (never completes nor releases)
    const crashed = `import { FileStore } from ${JSON.stringify(url)};
      console.log(await new FileStore(${JSON.stringify(path)}).claimReceipt("rr-crash"));
      process.exit(1);`;
    const child = spawn(process.execPath, ["--input-type=module", "-e", crashed]);
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    await new Promise((r) => child.on("exit", r));
    assert.equal(out.trim(), "claimed");
    const lease = 300;
    const s = new FileStore(path, { claimTimeoutMs: lease });
    assert.equal(await s.claimReceipt("rr-crash"), "running", "inside the lease the dead holder is not known dead: 503");
    await new Promise((r) => setTimeout(r, lease + 50));
    assert.equal(await s.claimReceipt("rr-crash"), "claimed", "after the lease it is taken over");
    // a live holder (this process, at work in its handler) keeps its claim for the lease
    const other = new FileStore(path, { claimTimeoutMs: lease });
    assert.equal(await other.claimReceipt("rr-crash"), "running");
    await s.completeReceipt("rr-crash", "done");
    await new Promise((r) => setTimeout(r, lease + 50));
    assert.equal(await other.claimReceipt("rr-crash"), "done", "a finished webhook-id has no lease to run out");
  });

  test("old done receipts are dropped after the retention", async () => {
    const path = join(dir, "retention.json");
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
    await writeFile(path, JSON.stringify({ version: 1, seqs: {}, receipts: { old: { state: "done", at: old, outcome: "done" } } }));
    const s = new FileStore(path, { receiptRetentionDays: 30 });
    await s.completeReceipt("new", "done");
    const data = JSON.parse(await readFile(path, "utf8"));
    assert.deepEqual(Object.keys(data.receipts), ["new"]);
  });

  test("a stale lock file (a holder that died) is broken; a fresh one is waited for, then reported", async () => {
    const path = join(dir, "locks", "state.json");
    await new FileStore(path).nextSeq("P", "s", null);
    const lockPath = `${path}.lock`;
    // fresh: held by someone at work (whatever its PID says)
    await writeFile(lockPath, "1:someone-at-work");
    await assert.rejects(new FileStore(path, { lockTimeoutMs: 150 }).nextSeq("P", "s", null), /stayed locked by another process for 150 ms/);
    // stale: older than staleLockMs
    const old = new Date(Date.now() - 31_000);
    await utimes(lockPath, old, old);
    assert.equal(await new FileStore(path, { lockTimeoutMs: 150 }).nextSeq("P", "s", null), 2);
    await writeFile(lockPath, "1:someone-gone");
    await new Promise((r) => setTimeout(r, 120));
    assert.equal(await new FileStore(path, { staleLockMs: 100 }).nextSeq("P", "s", null), 3, "staleLockMs is an option");
    assert.deepEqual((await readdir(join(dir, "locks"))).sort(), ["state.json"], "no lock or broken lock left");
  });

  test("several processes racing to break one stale lock: one breaks it, every update still serialised", async () => {
    const path = join(dir, "race.json");
    const lockPath = `${path}.lock`;
    const url = new URL("../dist/index.js", import.meta.url).href;
    const rounds = 4;
    const perProcess = 8;
    const processes = 4;
    const results = [];
    for (let round = 0; round < rounds; round++) {
      await writeFile(lockPath, "1:died-holding-the-lock");
      const old = new Date(Date.now() - 60_000);
      await utimes(lockPath, old, old);
      const startAt = Date.now() + 400; // all start together, once node is up
      const script = `import { FileStore } from ${JSON.stringify(url)};
        const s = new FileStore(${JSON.stringify(path)});
        while (Date.now() < ${startAt}) {}
        const got = [];
        for (let i = 0; i < ${perProcess}; i++) got.push(await s.nextSeq("P", "s", null));
        console.log(JSON.stringify(got));`;
      const run = () =>
        new Promise((resolve, reject) => {
          const child = spawn(process.execPath, ["--input-type=module", "-e", script]);
          let out = "";
          child.stdout.on("data", (d) => (out += d));
          child.stderr.on("data", (d) => (out += d));
          child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(out))));
        });
      results.push(...(await Promise.all(Array.from({ length: processes }, run))).flat());
    }
    const n = rounds * perProcess * processes;
    assert.deepEqual([...results].sort((a, b) => a - b), Array.from({ length: n }, (_, i) => i + 1), "no seq given twice");
    assert.deepEqual((await readdir(dir)).filter((f) => f.startsWith("race.json")), ["race.json"]);
  });

  test("a corrupt file is reported with what to do", async () => {
    const path = join(dir, "corrupt.json");
    await writeFile(path, "{ not json");
    await assert.rejects(new FileStore(path).nextSeq("P", "s", null), /not valid JSON .* restore it from a copy/);
  });
});
