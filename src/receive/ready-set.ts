/**
 * The ready set: batches that an idle poll returned while no loop was free, waiting (under their visibility lease)
 * for the next loop that frees up. It decides which waiting batch a free loop takes, and when the set is full.
 *
 * - Priority is decided when a loop is free, not when a poll answers: of the batches waiting, a loop takes the
 *   first in the order drawn now among their queues (strict: the first queue; weighted: drawn in proportion to
 *   the weights; random: uniformly), as its pass would read them.
 * - One batch per queue at most: a queue whose batch waits gets no poll (src/receive/idle-polls.ts), so a hot
 *   queue cannot fill the set and the set never holds more batches than there are queues.
 * - Bounded: once `bound` batches wait (the route's loops: as many as one round of free loops takes), no new
 *   poll is sent, so nothing more is received that no loop will take soon. Polls already in flight may still
 *   answer, so the set holds at most `bound - 1` plus the polls in flight at that moment.
 *
 * Pure state keyed by queue index (a Map, so queues may come and go); randomness is an argument.
 */
import { drawOrder, type QueueList, type Random } from './queue-order.ts';

export class ReadySet<T> {
  readonly #bound: number;
  readonly #waiting = new Map<number, T>();

  constructor(bound: number) {
    if (!(bound >= 1)) throw new Error(`ReadySet needs a bound >= 1, got ${bound}`);
    this.#bound = bound;
  }

  /** Batches waiting now. */
  get size(): number {
    return this.#waiting.size;
  }

  /** Whether no new poll may be sent: `bound` batches wait. */
  get full(): boolean {
    return this.#waiting.size >= this.#bound;
  }

  /** Whether a batch of queue `i` waits. */
  has(i: number): boolean {
    return this.#waiting.has(i);
  }

  /** The queues whose batches wait. */
  queues(): number[] {
    return [...this.#waiting.keys()];
  }

  /** A poll of queue `i` returned `batch` while no loop was free. */
  add(i: number, batch: T): void {
    if (this.#waiting.has(i)) throw new Error(`a batch of queue ${i} already waits`);
    this.#waiting.set(i, batch);
  }

  /** Takes queue `i`'s batch (a loop's pass reached the queue), or undefined. */
  takeQueue(i: number): T | undefined {
    const batch = this.#waiting.get(i);
    if (batch !== undefined) this.#waiting.delete(i);
    return batch;
  }

  /**
   * The queues whose batches wait, in the order a free loop would take them now: `list`'s order mode drawn
   * over just those queues (their weights), then `prioritise` (queues below their reserved minimum first).
   */
  order(list: QueueList, random: Random, prioritise: (order: number[]) => number[] = (o) => o): number[] {
    const queues = [...this.#waiting.keys()];
    if (list.mode === 'strict') queues.sort((a, b) => a - b);
    const drawn = drawOrder({ mode: list.mode, queues: queues.map((i) => list.queues[i]!) }, random).map((k) => queues[k]!);
    return prioritise(drawn);
  }

  /**
   * The batch a free loop takes: the first in order() that `take(i)` admits (and takes the queue's slot for).
   * Undefined when none waits or none is admitted now.
   */
  take(
    list: QueueList,
    random: Random,
    take: (i: number) => boolean,
    prioritise?: (order: number[]) => number[],
  ): { queue: number; batch: T } | undefined {
    if (this.#waiting.size === 0) return undefined;
    for (const i of this.order(list, random, prioritise)) {
      if (!take(i)) continue;
      return { queue: i, batch: this.takeQueue(i)! };
    }
    return undefined;
  }

  /** Every batch waiting, leaving the set empty (a stop releases them). */
  drain(): T[] {
    const all = [...this.#waiting.values()];
    this.#waiting.clear();
    return all;
  }
}
