import type { Logger } from 'pino';
import { monotonicNow } from '../util/clock.ts';
import type { EntryFailure, MessageSource, ReceiptEntry, ResolvedQueue } from '../core/queue.ts';
import { retryBatchCall, type SettleResult } from './batch-call.ts';
import { SQS_BATCH_MAX } from '../core/queue.ts';

/**
 * One delete() call, answered once each of its entries is settled: one promise per call, not one per entry and a
 * Promise.all (this runs per message).
 */
interface Call {
  /** Each entry's failure, by its position in the call; undefined: deleted. */
  readonly failures: (EntryFailure | undefined)[];
  left: number;
  readonly resolve: (result: SettleResult) => void;
}

interface Pending {
  entry: ReceiptEntry;
  readonly call: Call;
  /** The entry's position in its call. */
  readonly index: number;
  /** Until when a failing call may keep being retried for this entry (monotonic ms, src/util/clock.ts: the lease's clock). */
  retryUntil: () => number;
  /** Told before each retry: the caller is waiting on AWS, not stuck (liveness). */
  onRetry: () => void;
}

/**
 * Deletes messages for many worker loops with as few DeleteMessageBatch calls as possible: entries that
 * arrive within `windowMs` of each other share a call (up to 10), and a full batch goes out at once.
 * Retryable failures are retried with back-off, and for as long as the caller's `retryUntil` (the visibility
 * its lease still holds) allows; the promise of each caller resolves when its entries are settled, so an
 * awaited delete really happened (or is reported as failed).
 */
export class DeleteBatcher {
  readonly #source: MessageSource;
  readonly #log: Logger;
  readonly #windowMs: number;
  readonly #pending = new Map<ResolvedQueue, Pending[]>();
  readonly #timers = new Map<ResolvedQueue, NodeJS.Timeout>();
  /** The clock of the callers' `retryUntil` (their leases'): monotonic by default. */
  readonly #now: () => number;

  constructor(source: MessageSource, logger: Logger, windowMs = 2, now: () => number = monotonicNow) {
    this.#source = source;
    this.#log = logger;
    this.#windowMs = windowMs;
    this.#now = now;
  }

  async delete(
    queue: ResolvedQueue,
    entries: readonly ReceiptEntry[],
    retryUntil: () => number = () => 0,
    onRetry: () => void = () => {},
  ): Promise<SettleResult> {
    if (entries.length === 0) return { done: 0, failed: [] };
    let list = this.#pending.get(queue);
    if (!list) this.#pending.set(queue, (list = []));
    const settled = new Promise<SettleResult>((resolve) => {
      const call: Call = { failures: new Array<EntryFailure | undefined>(entries.length), left: entries.length, resolve };
      entries.forEach((entry, index) => list.push({ entry, call, index, retryUntil, onRetry }));
    });
    while (list.length >= SQS_BATCH_MAX) this.#send(queue, list.splice(0, SQS_BATCH_MAX));
    if (list.length > 0 && !this.#timers.has(queue)) {
      this.#timers.set(
        queue,
        setTimeout(() => {
          this.#timers.delete(queue);
          const rest = this.#pending.get(queue) ?? [];
          while (rest.length > 0) this.#send(queue, rest.splice(0, SQS_BATCH_MAX));
        }, this.#windowMs),
      );
    }
    return settled;
  }

  #send(queue: ResolvedQueue, batch: Pending[]): void {
    // Ids only need to be unique within one request; the index avoids clashes when SQS delivered a
    // message twice (standard queues are at-least-once) and both copies are deleted together.
    const entries = batch.map((p, i) => ({ id: String(i), receiptHandle: p.entry.receiptHandle }));
    const retryUntil = () => Math.max(...batch.map((p) => p.retryUntil()));
    const onRetry = () => {
      for (const p of batch) p.onRetry();
    };
    void retryBatchCall(this.#log, {
      operation: 'DeleteMessageBatch',
      queue,
      send: () => this.#source.deleteBatch(queue, entries),
      entryCount: entries.length,
      retryUntil,
      onRetry,
      now: this.#now,
    }).then((failures) => {
      const byId = failures.length > 0 ? new Map(failures.map((f) => [f.id, f])) : undefined;
      batch.forEach((p, i) => {
        const f = byId?.get(String(i));
        answer(p, f ? { ...f, id: p.entry.id } : undefined);
      });
    });
  }
}

/** Settles one entry of a call; the last one answers the call, its failures in entry order. */
function answer(p: Pending, failure: EntryFailure | undefined): void {
  const call = p.call;
  call.failures[p.index] = failure;
  if (--call.left > 0) return;
  const failed = call.failures.filter((f): f is EntryFailure => f !== undefined);
  call.resolve({ done: call.failures.length - failed.length, failed });
}
