import { LIMIT_RECHECK_MS } from './idle-loops.ts';
import type { QueueSlots } from './queue-limits.ts';
import { WaitQueue } from '../util/wait-queue.ts';

/**
 * Who takes a queue's slot when one frees (src/receive/queue-limits.ts counts them): a parked batch of that queue
 * first, handed the slot; otherwise one loop waiting to receive, woken to look again, and the idle loops, which may
 * take a batch of the queue that waits or poll it again (`freed`). Queues are known by their index in the route.
 */
export class SlotHandover {
  readonly #slots: QueueSlots;
  readonly #now: () => number;
  readonly #freed: () => void;
  /** Loops waiting for a slot to be given back; each slot given back wakes one, which looks again. */
  readonly #slotWaiters = new WaitQueue();
  /** Per queue: parked batches taking their slot back, served before new receives. */
  readonly #unparkLines: WaitQueue[];

  constructor(slots: QueueSlots, queueCount: number, now: () => number, freed: () => void) {
    this.#slots = slots;
    this.#now = now;
    this.#freed = freed;
    this.#unparkLines = Array.from({ length: queueCount }, () => new WaitQueue());
  }

  /** A queue joined the route at the next index. */
  grow(): void {
    this.#unparkLines.push(new WaitQueue());
  }

  /** A batch of queue `index` is settled: its slot is given back (`parked`: the batch ended while its slot was parked). */
  settled(index: number, parked: boolean): void {
    if (!this.#slots.active) return;
    this.#slots.giveBack(index, true, this.#now(), parked);
    this.#handOver(index);
  }

  /** A receive from queue `index` returned nothing: its slot is given back. */
  giveBack(index: number): void {
    if (!this.#slots.active) return;
    this.#slots.giveBack(index, false, this.#now());
    this.#handOver(index);
  }

  /** A batch of queue `index` waits between Invoke attempts: its slot is free for healthy batches meanwhile. */
  park(index: number): void {
    if (!this.#slots.active) return;
    this.#slots.park(index);
    this.#handOver(index);
  }

  /** A parked batch takes its queue's slot back before its next attempt, ahead of new receives; never aborted. */
  async unpark(index: number): Promise<void> {
    if (!this.#slots.active) return;
    const line = this.#unparkLines[index]!;
    if (line.size === 0 && this.#slots.unpark(index)) return;
    // Woken means the slot is ours: #handOver() took it for us.
    await line.wait();
  }

  /** Waits until a slot is given back, the next rate token of one of `queues` is due, or LIMIT_RECHECK_MS. */
  async waitForSlot(queues: readonly number[], stop: AbortSignal): Promise<void> {
    const now = this.#now();
    const tokenAt = this.#slots.nextTokenAt(queues, now);
    await this.#slotWaiters.wait(stop, Math.min(LIMIT_RECHECK_MS, (tokenAt ?? Infinity) - now));
  }

  /** Loops waiting for a slot now (for tests). */
  get waiters(): number {
    return this.#slotWaiters.size;
  }

  /**
   * A slot of queue `index` is free: a parked batch of that queue takes it first (handed over, counted here);
   * otherwise one loop waiting to receive wakes and looks again. One wake per slot given back: the others keep waiting
   * (and look again on their own after LIMIT_RECHECK_MS), so giving one back costs O(1) however many loops wait.
   */
  #handOver(index: number): void {
    const line = this.#unparkLines[index]!;
    if (line.size > 0 && this.#slots.unpark(index)) {
      line.wakeOne();
      return;
    }
    this.#slotWaiters.wakeOne();
    this.#freed();
  }
}
