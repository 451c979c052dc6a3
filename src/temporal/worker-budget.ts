// --temporal-max-workers-total: one budget of live workers shared by every task queue's loop. The loops run
// on one event loop and claim synchronously before they invoke, so two loops can never both take the last
// slot. grantWorkers() is the pure rule; WorkerBudget only keeps each queue's latest numbers.

/** What one task queue's loop reported at its latest reading. */
export interface QueueDemand {
  /** Workers it counts as alive, plus claims still being invoked. */
  readonly alive: number;
  /** Workers it wants alive (its desired count, at most its own maximum). */
  readonly wanted: number;
}

/**
 * How many of `request` new workers `queue` may invoke while all queues together stay within `maxTotal`.
 * Queues that want more than they have share the total evenly: a queue at or above its even share only gets
 * what the others, below theirs, do not need. So a queue with a huge backlog cannot starve a small one.
 */
export function grantWorkers(maxTotal: number, demands: ReadonlyMap<string, QueueDemand>, queue: string, request: number): number {
  if (request <= 0) return 0;
  let alive = 0;
  for (const d of demands.values()) alive += d.alive;
  const free = maxTotal - alive;
  if (free <= 0) return 0;
  const own = demands.get(queue) ?? { alive: 0, wanted: request };
  const wanting = [...demands.entries()].filter(([name, d]) => name === queue || d.wanted > d.alive);
  const share = Math.ceil(maxTotal / Math.max(1, wanting.length));
  let reservedForOthers = 0;
  for (const [name, d] of wanting) {
    if (name !== queue) reservedForOthers += Math.max(0, Math.min(d.wanted, share) - d.alive);
  }
  const upToShare = Math.max(0, share - own.alive);
  return Math.max(0, Math.min(request, free, Math.max(upToShare, free - reservedForOthers)));
}

/** The shared budget; without a total cap every claim is granted in full. */
export class WorkerBudget {
  readonly maxTotal: number | undefined;
  readonly #demands = new Map<string, QueueDemand>();

  /**
   * `queues`: the task queues that will report. Until its first reading a queue counts as wanting its even
   * share, so the queue whose statistics happen to arrive first cannot take the whole budget at start-up.
   */
  constructor(maxTotal: number | undefined, queues: readonly string[] = []) {
    this.maxTotal = maxTotal;
    for (const queue of queues) this.#demands.set(queue, { alive: 0, wanted: maxTotal ?? 0 });
  }

  /** A queue's latest reading: its live workers and how many it wants. */
  report(queue: string, alive: number, wanted: number): void {
    this.#demands.set(queue, { alive, wanted: Math.max(alive, wanted) });
  }

  /** Takes up to `request` slots for workers about to be invoked; returns how many were granted. */
  claim(queue: string, request: number): number {
    const granted = this.maxTotal === undefined ? Math.max(0, request) : grantWorkers(this.maxTotal, this.#demands, queue, request);
    const own = this.#demands.get(queue) ?? { alive: 0, wanted: 0 };
    this.#demands.set(queue, { alive: own.alive + granted, wanted: Math.max(own.wanted, own.alive + granted) });
    return granted;
  }

  /** Gives back slots whose invocations failed. */
  release(queue: string, count: number): void {
    const own = this.#demands.get(queue);
    if (own === undefined || count <= 0) return;
    this.#demands.set(queue, { alive: Math.max(0, own.alive - count), wanted: own.wanted });
  }

  /** Live workers of all queues together (for metrics and logs). */
  totalAlive(): number {
    let alive = 0;
    for (const d of this.#demands.values()) alive += d.alive;
    return alive;
  }
}
