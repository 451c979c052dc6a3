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
 * Draws the order in which one iteration checks the queues, as indices into `list.queues`, in O(n log n): the
 * weighted order of queues found by tag holds thousands.
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
  // Weighted sampling without replacement, as one sort (Efraimidis and Spirakis, 2006): each queue draws the key
  // u^(1/weight), u uniform in (0, 1], and the queues go in decreasing key order. The first is then queue i with
  // probability weight_i / total, the next in proportion to the remaining weights, and so on: the same order as
  // drawing one queue at a time, which cost O(n^2). Compared as log(u) / weight; a weight of 0 goes last.
  const keys = list.queues.map((q) => (q.weight > 0 ? Math.log(1 - random()) / q.weight : -Infinity));
  return order.sort((a, b) => (keys[b] === keys[a] ? a - b : keys[b]! > keys[a]! ? 1 : -1));
}
