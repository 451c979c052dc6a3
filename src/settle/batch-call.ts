import type { Logger } from 'pino';
import { callErrorOf } from '../core/errors.ts';
import { backoffMs, sleep } from '../util/backoff.ts';
import { monotonicNow } from '../util/clock.ts';
import type { EntryFailure, ResolvedQueue } from '../core/queue.ts';

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

/** One SQS batch call to run with retries (retryBatchCall). */
export interface BatchCall {
  /** The SQS operation, in logs. */
  readonly operation: 'DeleteMessageBatch' | 'ChangeMessageVisibilityBatch';
  readonly queue: ResolvedQueue;
  /** The call itself; it returns the entries SQS refused (its `Failed` list), which are not retried here. */
  readonly send: () => Promise<EntryFailure[]>;
  /** How many entries the call carries, with Ids "0".."n-1": all are reported failed when the call gives up. */
  readonly entryCount: number;
  /** Until when (on `now`'s clock) retries may go on beyond SETTLE_ATTEMPTS; default: no longer. */
  readonly retryUntil?: () => number;
  /** Told before each retry: the caller is waiting on AWS, not stuck (liveness). */
  readonly onRetry?: () => void;
  /** The clock of `retryUntil`; monotonic by default (src/util/clock.ts). */
  readonly now?: () => number;
}

/**
 * Runs a batch call, retrying retryable errors with jittered back-off: at least SETTLE_ATTEMPTS times, and
 * beyond that until `retryUntil` (while the messages are still invisible, a retry can still prevent a second
 * delivery). After that, or on a fatal error, every entry is reported failed: the messages then come back
 * after their visibility timeout, so nothing is lost, only delayed.
 */
export async function retryBatchCall(logger: Logger, call: BatchCall): Promise<EntryFailure[]> {
  const { operation, queue, send, entryCount, retryUntil = () => 0, onRetry = () => {}, now = monotonicNow } = call;
  for (let attempt = 0; ; attempt++) {
    try {
      // The adapter gives each call its deadline; a call past it comes back as a retryable TimeoutError.
      return await send();
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
