import { randomUUID } from "node:crypto";
import { link, mkdir, open, readFile, rename, rm, stat, unlink } from "node:fs/promises";
import { dirname, resolve } from "node:path";

/**
 * Where the step helper keeps each step's last seq, so that a restarted process never sends an older seq.
 * `nextSeq` must be atomic: it returns max(stored, serverLastSeq) + 1 and has stored it before it returns.
 */
export interface SeqStore {
  /** The last seq used for this step, or undefined when none is stored. */
  getSeq(processId: string, step: string): Promise<number | undefined>;
  /** Reserve and store the next seq: max(stored ?? 0, serverLastSeq ?? 0) + 1. */
  nextSeq(processId: string, step: string, serverLastSeq?: number | null): Promise<number>;
}

/** What a claim on a webhook-id found. */
export type ClaimResult =
  /** Nobody had it: it is yours now; call `completeReceipt` or `releaseReceipt`. */
  | "claimed"
  /** It was received (and handled) before. */
  | "done"
  /** Another call with the same webhook-id is being handled right now (its claim's lease has not run out). */
  | "running";

/**
 * Where the rerun receiver deduplicates calls on their `webhook-id`. A store shared by several processes should
 * make a running claim a lease (a claim older than a time-out is taken over, as `FileStore` does), so that a
 * claim left by a process that died does not block the webhook-id for ever.
 */
export interface ReceiptStore {
  claimReceipt(webhookId: string): Promise<ClaimResult>;
  /** Mark the claim done (outcome `done` or `test`): a repeat is answered `duplicate`. */
  completeReceipt(webhookId: string, outcome: string): Promise<void>;
  /** Give the claim up (the handler failed): the retry of the same webhook-id runs again. */
  releaseReceipt(webhookId: string): Promise<void>;
}

function next(stored: number | undefined, server: number | null | undefined): number {
  return Math.max(stored ?? 0, server ?? 0) + 1;
}

/**
 * Keeps everything in memory: for tests, and for processes whose restart does not matter. Its claims live as
 * long as the process (they die with it), so they need no lease.
 */
export class MemoryStore implements SeqStore, ReceiptStore {
  private readonly seqs = new Map<string, number>();
  private readonly receipts = new Map<string, { state: "running" | "done"; outcome?: string }>();

  async getSeq(processId: string, step: string): Promise<number | undefined> {
    return this.seqs.get(JSON.stringify([processId, step]));
  }

  async nextSeq(processId: string, step: string, serverLastSeq?: number | null): Promise<number> {
    const key = JSON.stringify([processId, step]);
    const seq = next(this.seqs.get(key), serverLastSeq);
    this.seqs.set(key, seq);
    return seq;
  }

  async claimReceipt(webhookId: string): Promise<ClaimResult> {
    const found = this.receipts.get(webhookId);
    if (found) return found.state;
    this.receipts.set(webhookId, { state: "running" });
    return "claimed";
  }

  async completeReceipt(webhookId: string, outcome: string): Promise<void> {
    this.receipts.set(webhookId, { state: "done", outcome });
  }

  async releaseReceipt(webhookId: string): Promise<void> {
    this.receipts.delete(webhookId);
  }
}

interface Receipt {
  state: "running" | "done";
  /** When it was claimed (running) or finished (done): a running claim is a lease from this instant. */
  at: string;
  outcome?: string;
}

interface FileData {
  version: 1;
  seqs: Record<string, Record<string, number>>;
  receipts: Record<string, Receipt>;
}

export interface FileStoreOptions {
  /** Receipts of handled webhook-ids are kept this many days (default 30), then dropped. */
  receiptRetentionDays?: number;
  /** How long to wait for the file's lock held by another process (default 10 000 ms). */
  lockTimeoutMs?: number;
  /**
   * The lease of a running claim on a webhook-id (default 60 000 ms): a repeat of the webhook-id within it is
   * answered 503 (still running); after it the claim is taken over (its holder is taken to have died). Keep
   * your handler well under it (Rerun Gate waits 10 s for the answer anyway).
   */
  claimTimeoutMs?: number;
  /** A lock file older than this is taken to be left by a process that died, and broken (default 30 000 ms). */
  staleLockMs?: number;
}

/** Serialises the updates of one file inside this process (across FileStore instances of the same path). */
const queues = new Map<string, Promise<unknown>>();

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const errno = (e: unknown): string | undefined => (e as NodeJS.ErrnoException | null)?.code;

/**
 * Keeps seqs and webhook receipts in one JSON file. Every change is written atomically (a temporary file in the
 * same folder, flushed, then renamed over the file), changes are serialised inside the process, and a lock file
 * (`<path>.lock`) serialises them with other processes using the same file.
 *
 * Nothing is judged by process IDs (a restarted container is pid 1 again, and containers sharing the file do
 * not see each other's processes): a running claim on a webhook-id is a lease of `claimTimeoutMs`, and a lock
 * file older than `staleLockMs` is broken — renamed away under a unique name, so that of several processes
 * that find it stale only one breaks it.
 */
export class FileStore implements SeqStore, ReceiptStore {
  readonly path: string;
  private readonly retentionMs: number;
  private readonly lockTimeoutMs: number;
  private readonly claimTimeoutMs: number;
  private readonly staleLockMs: number;

  constructor(path: string, options: FileStoreOptions = {}) {
    this.path = resolve(path);
    this.retentionMs = (options.receiptRetentionDays ?? 30) * 86_400_000;
    this.lockTimeoutMs = options.lockTimeoutMs ?? 10_000;
    this.claimTimeoutMs = options.claimTimeoutMs ?? 60_000;
    this.staleLockMs = options.staleLockMs ?? 30_000;
  }

  async getSeq(processId: string, step: string): Promise<number | undefined> {
    const data = await this.read();
    return data.seqs[processId]?.[step];
  }

  async nextSeq(processId: string, step: string, serverLastSeq?: number | null): Promise<number> {
    return this.update((data) => {
      const steps = (data.seqs[processId] ??= {});
      const seq = next(steps[step], serverLastSeq);
      steps[step] = seq;
      return { result: seq, changed: true };
    });
  }

  async claimReceipt(webhookId: string): Promise<ClaimResult> {
    return this.update((data) => {
      const found = data.receipts[webhookId];
      if (found?.state === "done") return { result: "done" as const, changed: false };
      // A lease: younger than claimTimeoutMs, its holder is taken to be at work (an unreadable `at` is not).
      if (found?.state === "running" && Date.now() - Date.parse(found.at) < this.claimTimeoutMs) {
        return { result: "running" as const, changed: false };
      }
      data.receipts[webhookId] = { state: "running", at: new Date().toISOString() };
      return { result: "claimed" as const, changed: true };
    });
  }

  async completeReceipt(webhookId: string, outcome: string): Promise<void> {
    await this.update((data) => {
      data.receipts[webhookId] = { state: "done", at: new Date().toISOString(), outcome };
      return { result: undefined, changed: true };
    });
  }

  async releaseReceipt(webhookId: string): Promise<void> {
    await this.update((data) => {
      const had = webhookId in data.receipts;
      delete data.receipts[webhookId];
      return { result: undefined, changed: had };
    });
  }

  private async read(): Promise<FileData> {
    let text: string;
    try {
      text = await readFile(this.path, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return { version: 1, seqs: {}, receipts: {} };
      throw e;
    }
    try {
      const parsed = JSON.parse(text) as Partial<FileData>;
      if (typeof parsed !== "object" || parsed === null) throw new Error("not an object");
      return { version: 1, seqs: parsed.seqs ?? {}, receipts: parsed.receipts ?? {} };
    } catch (e) {
      throw new Error(
        `rerun-gate: the state file ${this.path} is not valid JSON (${(e as Error).message}): restore it from a copy, or move it away to start afresh (seqs then continue from Rerun Gate's last_seq; webhook-ids received before may be handled again)`,
      );
    }
  }

  private async write(data: FileData): Promise<void> {
    const now = Date.now();
    for (const [id, r] of Object.entries(data.receipts)) {
      if (r.state === "done" && now - Date.parse(r.at) > this.retentionMs) delete data.receipts[id];
    }
    const tmp = `${this.path}.${process.pid}.${randomUUID()}.tmp`;
    const fh = await open(tmp, "w", 0o600);
    try {
      await fh.writeFile(`${JSON.stringify(data, null, 1)}\n`, "utf8");
      await fh.sync();
    } finally {
      await fh.close();
    }
    try {
      await rename(tmp, this.path);
    } catch (e) {
      await rm(tmp, { force: true });
      throw e;
    }
  }

  private update<T>(fn: (data: FileData) => { result: T; changed: boolean }): Promise<T> {
    const prev = queues.get(this.path) ?? Promise.resolve();
    const run = prev.then(async () => {
      await mkdir(dirname(this.path), { recursive: true });
      // `fn` only changes the data it is given, so an update whose lock was broken meanwhile is run again.
      for (let attempt = 1; ; attempt++) {
        const lock = await this.lock();
        try {
          const data = await this.read();
          const { result, changed } = fn(data);
          if (changed) {
            if (!(await lock.held())) {
              if (attempt < 3) continue;
              throw new Error(
                `rerun-gate: the lock ${this.path}.lock was broken by another process while this one held it, ${attempt} times; nothing was written — is staleLockMs (${this.staleLockMs} ms) shorter than a write on this disk?`,
              );
            }
            await this.write(data);
          }
          return result;
        } finally {
          await lock.release();
        }
      }
    });
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    queues.set(this.path, settled);
    void settled.then(() => {
      if (queues.get(this.path) === settled) queues.delete(this.path);
    });
    return run;
  }

  /**
   * Takes the lock file `<path>.lock` (created exclusively, holding a token of its own). A lock older than
   * `staleLockMs` is broken by renaming it to a unique name: of several waiters that find it stale only one
   * rename succeeds, and that one checks that what it moved is the lock it judged stale (not a fresh lock
   * taken meanwhile, which it puts back); then the exclusive create is tried again.
   */
  private async lock(): Promise<{ held: () => Promise<boolean>; release: () => Promise<void> }> {
    const lockPath = `${this.path}.lock`;
    const token = `${process.pid}:${randomUUID()}`;
    const deadline = Date.now() + this.lockTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const fh = await open(lockPath, "wx", 0o600);
        try {
          await fh.writeFile(token);
        } finally {
          await fh.close();
        }
        return {
          held: async () => (await readFile(lockPath, "utf8").catch(() => "")) === token,
          release: async () => {
            // Only our own lock: if it was broken and taken by another process, that one's stays.
            if ((await readFile(lockPath, "utf8").catch(() => "")) === token) await unlink(lockPath).catch(() => undefined);
          },
        };
      } catch (e) {
        if (errno(e) !== "EEXIST") throw e;
      }
      // Held: by a process that died (break it), or by one still working (wait).
      try {
        const held = await readFile(lockPath, "utf8");
        const age = Date.now() - (await stat(lockPath)).mtimeMs;
        if (age > this.staleLockMs) {
          await this.breakStaleLock(lockPath, held);
          continue;
        }
      } catch (e) {
        if (errno(e) !== "ENOENT") throw e;
        continue; // it went away meanwhile
      }
      if (Date.now() > deadline) {
        throw new Error(
          `rerun-gate: the state file ${this.path} stayed locked by another process for ${this.lockTimeoutMs} ms (${lockPath}); if no other process uses it, remove the lock file`,
        );
      }
      await sleep(Math.min(5 + attempt * 5, 50));
    }
  }

  private async breakStaleLock(lockPath: string, staleToken: string): Promise<void> {
    const moved = `${lockPath}.${randomUUID()}.broken`;
    try {
      await rename(lockPath, moved);
    } catch (e) {
      if (errno(e) === "ENOENT") return; // another waiter broke it (or its holder released it) first
      throw e;
    }
    let movedToken: string;
    try {
      movedToken = await readFile(moved, "utf8");
    } catch {
      movedToken = staleToken; // unreadable: nothing to put back
    }
    if (movedToken === staleToken) {
      await unlink(moved).catch(() => undefined);
      return;
    }
    // What we moved is a fresh lock another process took after the stale one was broken: put it back (link
    // fails if yet another lock was taken meanwhile: the holder of the one we moved then finds its lock gone and
    // does its update again).
    await link(moved, lockPath).catch(() => undefined);
    await unlink(moved).catch(() => undefined);
  }
}
