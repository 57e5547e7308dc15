import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
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

  test("a running claim of a process that died is taken over; one of a live process is not", async () => {
    const path = join(dir, "claims.json");
    const at = new Date().toISOString();
    await writeFile(
      path,
      JSON.stringify({
        version: 1,
        seqs: {},
        receipts: { dead: { state: "running", at, pid: 2 ** 22 + 12345 }, live: { state: "running", at, pid: process.pid } },
      }),
    );
    const s = new FileStore(path);
    assert.equal(await s.claimReceipt("dead"), "claimed");
    assert.equal(await s.claimReceipt("live"), "running");
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

  test("a corrupt file is reported with what to do", async () => {
    const path = join(dir, "corrupt.json");
    await writeFile(path, "{ not json");
    await assert.rejects(new FileStore(path).nextSeq("P", "s", null), /not valid JSON .* restore it from a copy/);
  });
});
