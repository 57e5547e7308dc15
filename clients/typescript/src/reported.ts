import type { ErrorClass } from "./types.js";

/** What `withStep` reported to Rerun Gate about a step whose callback threw. */
export interface StepReport {
  processId: string;
  step: string;
  type: "failed" | "unknown";
  errorClass: ErrorClass;
  message: string;
}

/**
 * The errors `withStep` rethrew after Rerun Gate ACCEPTED their `failed`/`unknown` event. An error whose
 * report could not be sent is not in here. A WeakMap: any object can be marked (frozen ones too), nothing
 * is kept alive by it, and nothing is added to the error itself.
 */
const reports = new WeakMap<object, StepReport>();

/** Marks `err` as reported (called by `withStep` once Rerun Gate has the event). */
export function markReported(err: object, report: StepReport): void {
  reports.set(err, report);
}

/**
 * The step report an error carries, if `withStep` reported it to Rerun Gate: the error itself, or one in its
 * `cause` chain or among an AggregateError's `errors` (a handler that wraps or collects step errors).
 * `undefined` when no step outcome was reported for it.
 */
export function stepReportOf(err: unknown): StepReport | undefined {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0 && seen.size < 32) {
    const cur = queue.shift();
    if (typeof cur !== "object" || cur === null || seen.has(cur)) continue;
    seen.add(cur);
    const found = reports.get(cur);
    if (found) return found;
    if (cur instanceof AggregateError) queue.push(...cur.errors);
    queue.push((cur as { cause?: unknown }).cause);
  }
  return undefined;
}
