/**
 * Queue priority: which queue a worker looks at first on each iteration.
 *
 * - strict   `a,b,c`        always a, then b, then c (b is only read when a is empty).
 * - weighted `a:3,b:2,c:1`  a comes first with probability 3/6, then the next is drawn among the rest
 *                           in proportion to their weights, and so on (weighted sampling without replacement).
 * - random   `a:1,b:1`      equal weights: a uniformly random order.
 */
export type OrderMode = 'strict' | 'weighted' | 'random';

export interface QueueSpec {
  /** A queue name or a full queue URL, exactly as given. */
  readonly ref: string;
  /** 1 for strict lists. */
  readonly weight: number;
}

export interface QueueList {
  readonly mode: OrderMode;
  readonly queues: readonly QueueSpec[];
}

/** Returns a number in [0, 1), like Math.random. Injected so tests can be deterministic. */
export type Random = () => number;

/**
 * Draws the order in which one iteration checks the queues, as indices into `list.queues`.
 * Allocates one small array per call; the lists are short (a handful of queues).
 */
export function drawOrder(list: QueueList, random: Random = Math.random): number[] {
  const n = list.queues.length;
  const order = Array.from({ length: n }, (_, i) => i);
  if (list.mode === 'strict' || n < 2) return order;
  if (list.mode === 'random') {
    // Fisher-Yates.
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    return order;
  }
  // Weighted sampling without replacement: pick the next queue in proportion to the remaining weights.
  const remaining = order.slice();
  const result: number[] = [];
  let total = list.queues.reduce((sum, q) => sum + q.weight, 0);
  while (remaining.length > 0) {
    let r = random() * total;
    let k = 0;
    for (; k < remaining.length - 1; k++) {
      r -= list.queues[remaining[k]!]!.weight;
      if (r < 0) break;
    }
    const picked = remaining.splice(k, 1)[0]!;
    total -= list.queues[picked]!.weight;
    result.push(picked);
  }
  return result;
}
