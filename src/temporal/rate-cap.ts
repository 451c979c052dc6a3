// The rate cap: how many workers a task queue's rate limit can keep busy. A rate limit (set with `temporal
// task-queue config set --queue-rps-limit`, by workers' maxTaskQueueActivitiesPerSecond, or the server's own
// default) bounds how many tasks the server hands out per second, whatever the number of workers polling, so
// workers beyond what that rate feeds add cost and no throughput. Pure: scaling.ts applies it.

/** One task type's share of a reading (workflow or activity), with the rate limit the server reports for it. */
export interface TypeLoad {
  readonly backlog: number;
  readonly addRatePerSec: number;
  readonly dispatchRatePerSec: number;
  /** effective_rate_limit.requests_per_second; undefined when the server reports none. */
  readonly rateLimitPerSec: number | undefined;
}

/**
 * Workers the rate limits can keep busy over the next `horizonMs`, or undefined when no type reports a limit.
 *
 * Spillover sizes the fleet as one worker per `tasksPerWorker` tasks projected over the horizon (scaling.ts);
 * under a limit of R tasks/s at most R x horizon of a type's tasks can be dispatched in that time, so only
 * that many count: cap = ceil(sum over types of min(projected tasks, R x horizon) / tasksPerWorker).
 * This is Little's law with the throughput the sizing already assumes of one worker (tasksPerWorker per
 * horizon): workers = rate / per-worker throughput. A type without a limit counts in full, so workflow tasks
 * (whose rate Temporal does not let the API set) are never starved by an activity limit. The long-lived
 * fleet's share of the rate is not subtracted: the cap is an upper bound on what spillover may add.
 */
export function rateCapWorkers(types: readonly TypeLoad[], horizonMs: number, tasksPerWorker: number): number | undefined {
  if (!types.some((t) => t.rateLimitPerSec !== undefined)) return undefined;
  const horizonSec = horizonMs / 1000;
  let dispatchable = 0;
  for (const t of types) {
    const growth = Math.max(0, nonNegative(t.addRatePerSec) - nonNegative(t.dispatchRatePerSec));
    const projected = nonNegative(t.backlog) + growth * horizonSec;
    dispatchable += t.rateLimitPerSec === undefined ? projected : Math.min(projected, nonNegative(t.rateLimitPerSec) * horizonSec);
  }
  return Math.ceil(dispatchable / tasksPerWorker);
}

function nonNegative(value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0;
}
