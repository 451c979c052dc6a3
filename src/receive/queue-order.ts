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
 * Parses the `--queues` value. Returns the list, or the problems found (every one of them).
 * A full queue URL contains ':' (https://...), so a weight is only split off when what follows the last ':'
 * looks like a number and what precedes it is not a bare URL scheme.
 */
export function parseQueueList(value: string, option = '--queues'): { list?: QueueList; problems: string[] } {
  const problems: string[] = [];
  const entries = value.split(',').map((s) => s.trim());
  const specs: QueueSpec[] = [];
  let weighted = 0;
  let unweighted = 0;
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    if (entry === '') {
      problems.push(`${option} has an empty queue name at position ${i + 1}, got "${value}"`);
      return;
    }
    const { ref, weightText } = splitWeight(entry);
    if (ref === '') {
      problems.push(`${option} has an empty queue name in "${entry}"`);
      return;
    }
    let weight = 1;
    if (weightText !== undefined) {
      weighted++;
      if (!/^\d+$/.test(weightText) || Number(weightText) < 1 || Number(weightText) > 1000) {
        problems.push(`${option} weight for "${ref}" must be an integer from 1 to 1000, got "${weightText}"`);
      } else {
        weight = Number(weightText);
      }
    } else {
      unweighted++;
    }
    if (seen.has(ref)) problems.push(`${option} lists "${ref}" more than once`);
    seen.add(ref);
    specs.push({ ref, weight });
  });
  if (weighted > 0 && unweighted > 0) {
    problems.push(`${option} mixes weighted and unweighted queues (give every queue a weight, or none), got "${value}"`);
  }
  if (problems.length > 0) return { problems };
  let mode: OrderMode = 'strict';
  if (weighted > 0) mode = specs.every((s) => s.weight === specs[0]?.weight) ? 'random' : 'weighted';
  return { list: { mode, queues: specs }, problems };
}

function splitWeight(entry: string): { ref: string; weightText?: string } {
  const at = entry.lastIndexOf(':');
  if (at < 0) return { ref: entry };
  const after = entry.slice(at + 1);
  const before = entry.slice(0, at);
  // "https://sqs..." : the only ':' belongs to the scheme, not a weight.
  if (/^[a-z][a-z0-9+.-]*$/i.test(before) && after.startsWith('//')) return { ref: entry };
  // A URL with a port and no weight: "http://localhost:4566/000000000000/q" has ':' before a path.
  if (after.includes('/')) return { ref: entry };
  return { ref: before.trim(), weightText: after.trim() };
}

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
