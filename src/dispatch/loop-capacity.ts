import type { ConcurrencyGate } from '../invoke/concurrency-gate.ts';
import type { Receiver } from '../receive/receiver.ts';
import type { ResolvedQueue } from '../core/queue.ts';

/**
 * What each worker loop holds while it has a batch: its place in the concurrency budget (ConcurrencyGate) and its
 * queue's slot (the Receiver's per-queue limits). A batch that waits between
 * Invoke attempts (an unknown outcome held, a back-off, a pause) gives both up (stepAside) and takes them back
 * before its next attempt (rejoin), so waiting never holds capacity that healthy batches could use. Its lease
 * keeps the messages invisible meanwhile, and the Dispatcher still counts it in flight.
 */
export class LoopCapacity {
  readonly #budget: ConcurrencyGate;
  readonly #receiver: Pick<Receiver, 'park' | 'unpark' | 'settled'>;
  /**
   * Loops counted by the budget: from the start of a receive until the Invoke of what it returned is over.
   * Settling happens outside, so the gate counts what reaches Lambda, not SQS round trips.
   */
  readonly #holding: boolean[];
  /**
   * Loops whose batch waits between Invoke attempts, with its capacity given up (stepAside): `place`, it
   * parked its place in the budget; `slot`, its queue slot. Both are taken again before the next attempt (rejoin).
   */
  readonly #aside: { place: boolean; slot: boolean }[];

  constructor(loops: number, budget: ConcurrencyGate, receiver: Pick<Receiver, 'park' | 'unpark' | 'settled'>) {
    this.#budget = budget;
    this.#receiver = receiver;
    this.#holding = Array.from({ length: loops }, () => false);
    this.#aside = Array.from({ length: loops }, () => ({ place: false, slot: false }));
  }

  /**
   * Whether the loop may receive: over the budget's limit (and its prefetch share) it waits, idle, and false
   * means `halt` aborted first. Call free() once the Invoke of what it received is over, or it received nothing.
   */
  async enter(loop: number, halt: AbortSignal): Promise<boolean> {
    // A free place is taken at once, with no wait of its own (under the fixed ceiling alone, always so).
    return (this.#holding[loop] = (!halt.aborted && this.#budget.tryEnter()) || (await this.#budget.enter(halt)));
  }

  /** The loop's Invoke is over (or it received nothing): another loop may receive. */
  free(loop: number): void {
    const aside = this.#aside[loop]!;
    if (aside.place) {
      aside.place = false;
      this.#budget.leave(true);
    }
    if (!this.#holding[loop]) return;
    this.#holding[loop] = false;
    this.#budget.leave();
  }

  /**
   * The loop's batch of `queue` is about to wait: it gives up its place in the budget and its queue slot meanwhile.
   * See ConcurrencyGate and QueueSlots for how many batches may wait aside.
   */
  stepAside(loop: number, queue: ResolvedQueue): void {
    const aside = this.#aside[loop]!;
    if (this.#holding[loop]) {
      this.#holding[loop] = false;
      aside.place = true;
      this.#budget.park();
    }
    if (!aside.slot) {
      aside.slot = true;
      this.#receiver.park(queue);
    }
  }

  /** Whether the loop's batch has capacity to take back before its next attempt. */
  isAside(loop: number): boolean {
    const aside = this.#aside[loop]!;
    return aside.place || aside.slot;
  }

  /**
   * Takes back what stepAside gave up, waiting its turn (ahead of new receives): the place in the budget first, then
   * the queue slot, the order in which a new receive takes them. Never aborted.
   */
  async rejoin(loop: number, queue: ResolvedQueue): Promise<void> {
    const aside = this.#aside[loop]!;
    if (aside.place) {
      await this.#budget.unpark();
      aside.place = false;
      this.#holding[loop] = true;
    }
    if (aside.slot) {
      await this.#receiver.unpark(queue);
      aside.slot = false;
    }
  }

  /** The loop's batch of `queue` is settled: its queue slot goes back, wherever it was. */
  settled(loop: number, queue: ResolvedQueue): void {
    const aside = this.#aside[loop]!;
    this.#receiver.settled(queue, aside.slot);
    aside.slot = false;
  }
}
