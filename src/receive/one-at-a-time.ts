import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { ANSWER_TOO_LARGE } from '../core/answer-caps.ts';
import { callErrorOf } from '../core/errors.ts';
import type { EntryFailure, MessageSource, ReceiptEntry, ReceiveOptions, ResolvedQueue } from '../core/queue.ts';
import { monotonicNow } from '../util/clock.ts';

/**
 * After a ReceiveMessage answer over its cap (src/core/answer-caps.ts), how many messages the receives of that queue
 * ask for, and until when. The refused answer's messages were received all the same: they come back after the
 * visibility timeout that receive stated, and asked for ten at a time again they would be refused again, one more
 * receive count each time, until the redrive policy moves them (and every message received with them) to the
 * dead-letter queue never invoked. Asked for one at a time they each fit, or only the one that cannot goes on.
 * So the queue is received from one message at a time for two of those visibility timeouts from the refusal:
 * the first while they are invisible, the second to take them one by one once they are back. Pure; `now` is
 * monotonic milliseconds.
 */
export class OneAtATime {
  /** Per queue URL: until when its receives ask for one message. */
  readonly #until = new Map<string, number>();

  /** The MaxNumberOfMessages to ask `queueUrl` for, given that its caller wants `wanted`. */
  max(queueUrl: string, wanted: number, now: number): number {
    const until = this.#until.get(queueUrl);
    if (until === undefined) return wanted;
    if (now < until) return 1;
    this.#until.delete(queueUrl);
    return wanted;
  }

  /** A receive of `queueUrl` stating `visibilityTimeoutSec` was refused as too large at `now`; returns until when. */
  refused(queueUrl: string, visibilityTimeoutSec: number, now: number): number {
    const until = now + 2 * visibilityTimeoutSec * 1000;
    this.#until.set(queueUrl, Math.max(until, this.#until.get(queueUrl) ?? 0));
    return until;
  }
}

/**
 * A MessageSource whose receives follow OneAtATime. It sits below SharedReceiveSource, so it caps the call that
 * is sent, whatever number of loops that call answers.
 */
export class OneAtATimeSource implements MessageSource {
  readonly #inner: MessageSource;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #policy = new OneAtATime();

  /** `now`: monotonic milliseconds (src/util/clock.ts), by default. */
  constructor(inner: MessageSource, deps: { readonly logger: Logger; readonly now?: () => number }) {
    this.#inner = inner;
    this.#logger = deps.logger;
    this.#now = deps.now ?? monotonicNow;
  }

  /** Not async: a long poll's wait holds one async step less (10,000 of them at a time). */
  receive(queue: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]> {
    const max = this.#policy.max(queue.url, options.max, this.#now());
    return this.#inner.receive(queue, max === options.max ? options : { ...options, max }, signal).catch((err: unknown) => {
      if (callErrorOf(err).code === ANSWER_TOO_LARGE) this.#refused(queue, options, max);
      throw err;
    });
  }

  #refused(queue: ResolvedQueue, options: ReceiveOptions, max: number): void {
    const visibilityTimeoutSec = options.visibilityTimeoutSec ?? queue.visibilityTimeoutSec;
    const untilMs = this.#policy.refused(queue.url, visibilityTimeoutSec, this.#now());
    this.#logger.warn(
      { queue: queue.name, max, forMs: untilMs - this.#now() },
      'ReceiveMessage answer over its cap: its messages return after their visibility timeout; receiving one message at a time from this queue meanwhile',
    );
  }

  deleteBatch(queue: ResolvedQueue, entries: readonly ReceiptEntry[], signal?: AbortSignal): Promise<EntryFailure[]> {
    return this.#inner.deleteBatch(queue, entries, signal);
  }

  changeVisibility(
    queue: ResolvedQueue,
    entries: readonly ReceiptEntry[],
    timeoutSec: number,
    signal?: AbortSignal,
  ): Promise<EntryFailure[]> {
    return this.#inner.changeVisibility(queue, entries, timeoutSec, signal);
  }
}
