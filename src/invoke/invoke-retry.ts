import { backoffMs } from '../util/backoff.ts';
import type { InvokeError } from '../core/function-invoker.ts';

/** Failed Invoke attempts of one batch so far, by kind. */
export interface InvokeAttempts {
  throttled: number;
  notSent: number;
  unknown: number;
  unusable: number;
}

export interface InvokeRetryPolicy {
  /**
   * How long to keep messages invisible after an Invoke whose outcome is unknown before invoking them again.
   * The queue's visibility timeout: SQS itself would hand the message to another consumer after that, and
   * AWS asks for a visibility timeout of at least 6x the function timeout, so the first invocation is over.
   */
  readonly unknownHoldMs: number;
  /** Unknown outcomes after which the batch goes back to the queue's own redrive rules. */
  readonly maxUnknown: number;
}

/**
 * What to do after a failed Invoke:
 * - retry: invoke again after delayMs, keeping the messages invisible;
 * - pause-function: the function cannot run at all; retry when the function gate opens again;
 * - give-up: the messages stay on the queue and come back after their visibility timeout.
 */
export type InvokeRetryDecision = { action: 'retry'; delayMs: number } | { action: 'pause-function' } | { action: 'give-up' };

export const NO_ATTEMPTS: Readonly<InvokeAttempts> = Object.freeze({ throttled: 0, notSent: 0, unknown: 0, unusable: 0 });

/** Counts one more failure of `error`'s kind. */
export function countAttempt(attempts: Readonly<InvokeAttempts>, error: InvokeError): InvokeAttempts {
  const next = { ...attempts };
  if (error.kind === 'throttled') next.throttled++;
  else if (error.kind === 'not-sent') next.notSent++;
  else if (error.kind === 'unknown') next.unknown++;
  else if (error.kind === 'unusable') next.unusable++;
  return next;
}

/**
 * The retry policy. Throttles and requests that never left are retried for as long as the messages are
 * held: nothing ran, so they are not attempts (unlike Lambda's trigger, where they climb towards the DLQ).
 * An unknown outcome may still be running, so the messages are held for a whole visibility timeout before
 * the next try: never a second invocation while the first may be running. `attempts` includes `error`.
 */
export function decideInvokeRetry(
  error: InvokeError,
  attempts: Readonly<InvokeAttempts>,
  policy: InvokeRetryPolicy,
  random: () => number,
): InvokeRetryDecision {
  switch (error.kind) {
    case 'throttled':
      return { action: 'retry', delayMs: throttledDelayMs(error, attempts.throttled, random) };
    case 'not-sent':
      // Capped at 1 s so that dispatching resumes within about a second of Lambda answering again.
      return { action: 'retry', delayMs: backoffMs(attempts.notSent - 1, 100, 1_000, random) };
    case 'unknown':
      return attempts.unknown > policy.maxUnknown ? { action: 'give-up' } : { action: 'retry', delayMs: policy.unknownHoldMs };
    case 'unusable':
      return { action: 'pause-function' };
    case 'rejected':
      return { action: 'give-up' };
  }
}

/**
 * The longest Retry-After honoured: Lambda's longest function timeout. The lease keeps the messages invisible while
 * the batch waits, and a drain ends the wait; a longer value is more likely a broken proxy than Lambda's advice.
 */
const RETRY_AFTER_MAX_MS = 15 * 60 * 1000;

/**
 * After a throttle: the back-off curve, but never sooner than Lambda's Retry-After (TooManyRequestsException's
 * retryAfterSeconds, Invoke API reference, https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html), e.g.
 * for ConcurrentSnapshotCreateLimitExceeded, where another invocation accepted meanwhile says nothing of the limit.
 */
function throttledDelayMs(error: InvokeError, throttles: number, random: () => number): number {
  const curve = backoffMs(throttles - 1, 100, 5_000, random);
  return error.retryAfterMs === undefined ? curve : Math.max(curve, Math.min(error.retryAfterMs, RETRY_AFTER_MAX_MS));
}

/**
 * Whether held messages may be released at once (visibility 0) on shutdown: only if no attempt could still
 * be running. After an unknown outcome they keep their remaining visibility instead.
 */
export function safeToRelease(attempts: Readonly<InvokeAttempts>): boolean {
  return attempts.unknown === 0;
}
