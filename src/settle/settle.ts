import type { Logger } from 'pino';
import { callErrorOf } from '../aws/errors.ts';
import { backoffMs, sleep } from '../util/backoff.ts';
import { monotonicNow } from '../util/clock.ts';
import type { EntryFailure, MessageSource, ReceiptEntry, ResolvedQueue } from '../aws/sqs-source.ts';

/** SQS batch calls take at most 10 entries. */
const SQS_BATCH_MAX = 10;
/**
 * Attempts for a delete or a release that fails. The visibility lease keeps the messages invisible while a
 * delete is retried, so a few seconds of SQS errors cost a delay, not a second delivery.
 */
const SETTLE_ATTEMPTS = 8;

export interface SettleResult {
  /** How many entries SQS confirmed. */
  done: number;
  failed: EntryFailure[];
}

interface Pending {
  entry: ReceiptEntry;
  /** Until when a failing call may keep being retried for this entry (monotonic ms, src/util/clock.ts: the lease's clock). */
  retryUntil: () => number;
  /** Told before each retry: the caller is waiting on AWS, not stuck (liveness). */
  onRetry: () => void;
  resolve: (failure: EntryFailure | undefined) => void;
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
    const results = entries.map(
      (entry) => new Promise<EntryFailure | undefined>((resolve) => list.push({ entry, retryUntil, onRetry, resolve })),
    );
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
    const failures = (await Promise.all(results)).filter((f): f is EntryFailure => f !== undefined);
    return { done: entries.length - failures.length, failed: failures };
  }

  #send(queue: ResolvedQueue, batch: Pending[]): void {
    // Ids only need to be unique within one request; the index avoids clashes when SQS delivered a
    // message twice (standard queues are at-least-once) and both copies are deleted together.
    const entries = batch.map((p, i) => ({ id: String(i), receiptHandle: p.entry.receiptHandle }));
    const retryUntil = () => Math.max(...batch.map((p) => p.retryUntil()));
    const onRetry = () => {
      for (const p of batch) p.onRetry();
    };
    void withRetry(
      this.#log,
      'DeleteMessageBatch',
      queue,
      () => this.#source.deleteBatch(queue, entries),
      entries.length,
      retryUntil,
      onRetry,
      this.#now,
    ).then((failures) => {
      const byId = new Map(failures.map((f) => [f.id, f]));
      batch.forEach((p, i) => {
        const f = byId.get(String(i));
        p.resolve(f ? { ...f, id: p.entry.id } : undefined);
      });
    });
  }
}

/**
 * Changes the visibility of messages (0 releases them now), in batches of 10, with retries. `onChunk` is called
 * before each batch call after the first: each has its own retries, so a caller's step deadline (liveness) is
 * renewed per call, as a delete's is per retry; 10,000 messages released during an SQS outage are not one step.
 */
export async function changeVisibility(
  source: MessageSource,
  logger: Logger,
  queue: ResolvedQueue,
  entries: readonly ReceiptEntry[],
  timeoutSec: number,
  onChunk: () => void = () => {},
): Promise<SettleResult> {
  const failed: EntryFailure[] = [];
  for (let i = 0; i < entries.length; i += SQS_BATCH_MAX) {
    if (i > 0) onChunk();
    const chunk = entries.slice(i, i + SQS_BATCH_MAX).map((e, k) => ({ id: String(k), receiptHandle: e.receiptHandle, original: e.id }));
    const failures = await withRetry(
      logger,
      'ChangeMessageVisibilityBatch',
      queue,
      () => source.changeVisibility(queue, chunk, timeoutSec),
      chunk.length,
    );
    for (const f of failures) failed.push({ ...f, id: chunk[Number(f.id)]?.original ?? f.id });
  }
  return { done: entries.length - failed.length, failed };
}

/**
 * Runs a batch call, retrying retryable errors with jittered back-off: at least SETTLE_ATTEMPTS times, and
 * beyond that until `retryUntil` (while the messages are still invisible, a retry can still prevent a second
 * delivery). After that, or on a fatal error, every entry is reported failed: the messages then come back
 * after their visibility timeout, so nothing is lost, only delayed.
 */
async function withRetry(
  logger: Logger,
  operation: string,
  queue: ResolvedQueue,
  call: () => Promise<EntryFailure[]>,
  entryCount: number,
  retryUntil: () => number = () => 0,
  onRetry: () => void = () => {},
  now: () => number = monotonicNow,
): Promise<EntryFailure[]> {
  for (let attempt = 0; ; attempt++) {
    try {
      // The adapter gives each call its deadline; a call past it comes back as a retryable TimeoutError.
      return await call();
    } catch (err) {
      const e = callErrorOf(err);
      const delayMs = backoffMs(attempt, 100, 1_000);
      const last = e.kind === 'fatal' || (attempt + 1 >= SETTLE_ATTEMPTS && now() + delayMs >= retryUntil());
      logger[last ? 'error' : 'warn'](
        { queue: queue.name, operation, attempt, err: { code: e.code, message: e.message } },
        `${operation} failed`,
      );
      if (last) return Array.from({ length: entryCount }, (_, i) => ({ id: String(i), code: e.code, message: e.message }));
      onRetry();
      await sleep(delayMs);
    }
  }
}
