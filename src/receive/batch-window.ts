/**
 * The batching window (--batch-window, --batch-size above 10), as Lambda's SQS trigger has it
 * (MaximumBatchingWindowInSeconds, BatchSize up to 10,000): after the first receive of a batch, the loop keeps
 * receiving from the same queue until the batch is full, the window (counted from the first receive) is over,
 * or the next message would take the payload past Lambda's 6 MB synchronous limit, whichever comes first.
 * FIFO queues keep at most 10 and no window, as on the trigger.
 *
 * Pure: decideGather() is told what was gathered and the time, and says whether to invoke now or what to
 * receive next. src/dispatch/gather.ts does the receiving, and keeps what it gathered invisible with the batch's lease.
 */
import { SQS_RECEIVE_MAX } from '../core/queue.ts';

export interface BatchWindow {
  /** --batch-size: messages per invocation, 1-10,000. */
  readonly batchSize: number;
  /** --batch-window in ms, 0-300,000; 0: one receive per batch. */
  readonly windowMs: number;
  /** Payload bytes one invocation may carry (MAX_SYNC_PAYLOAD_BYTES). */
  readonly maxBytes: number;
  /**
   * The longest long poll while gathering, 1-20 s: --poll-for (at least 1), so a stop waits no longer for a
   * receive in flight than it does without a window.
   */
  readonly maxWaitSec: number;
}

/** What a batch holds so far. */
export interface Gathered {
  readonly count: number;
  /** Bytes of the payload the messages make (the event's envelope included). */
  readonly bytes: number;
  /** Bytes of the largest record so far: the estimate of the next one's. */
  readonly largestRecordBytes: number;
  /** When the first receive of the batch returned (epoch ms); the window runs from here. */
  readonly startedAt: number;
  /** The last receive returned nothing (the queue looks empty for now). */
  readonly lastReceiveEmpty: boolean;
  /**
   * The queue was read again since the batch's first receive. False while a batch that an idle poll received
   * waited for a loop (with --concurrency 1, while the previous batch was invoked): its window may be over
   * before the gathering starts, and what arrived in it is still in the queue.
   */
  readonly readSinceFirst: boolean;
}

export type GatherDecision =
  | { readonly action: 'invoke'; readonly reason: 'full' | 'window' | 'payload' }
  /** Receive up to `max` messages, long-polling `waitSec`; first wait `delayMs` (the window's last partial second). */
  | { readonly action: 'receive'; readonly max: number; readonly waitSec: number; readonly delayMs: number };

/** Whether a batch is gathered over a window at all: never on FIFO, never without a window. */
export function gathers(window: Pick<BatchWindow, 'windowMs'>, fifo: boolean): boolean {
  return window.windowMs > 0 && !fifo;
}

/** How many messages the first receive of a batch asks for. */
export function firstReceiveMax(batchSize: number): number {
  return Math.min(SQS_RECEIVE_MAX, batchSize);
}

/**
 * What to do next with a batch being gathered. The next message's size is unknown until it is received, so
 * the largest record so far stands in for it: a receive asks for no more than that many fit, and the batch is
 * invoked once not one more would. (A larger message than any before can still pass the limit; the Dispatcher
 * then splits the payload, as buildSqsEvents does for any batch.)
 *
 * WaitTimeSeconds is whole seconds: a receive long-polls the whole seconds left of the window (at most
 * `maxWaitSec`; a long poll answers as soon as messages arrive). In the last partial second short receives
 * follow each other while they return messages (a 1 s window on a full queue still fills its batch); once one
 * comes back empty, the rest of the window is waited out and read with one more short receive, so the batch
 * is invoked when the window ends with what arrived in it, neither a second early nor a second late.
 */
export function decideGather(g: Gathered, window: BatchWindow, now: number): GatherDecision {
  if (g.count >= window.batchSize) return { action: 'invoke', reason: 'full' };
  const fit = g.largestRecordBytes > 0 ? Math.floor((window.maxBytes - g.bytes) / g.largestRecordBytes) : SQS_RECEIVE_MAX;
  if (fit <= 0) return { action: 'invoke', reason: 'payload' };
  const remainingMs = g.startedAt + window.windowMs - now;
  const max = Math.min(SQS_RECEIVE_MAX, window.batchSize - g.count, fit);
  // A window that ran out before the queue was read again (the batch waited for a loop) is still read once, so
  // the batch takes what arrived in it instead of leaving it to the next batch.
  if (remainingMs <= 0)
    return g.readSinceFirst ? { action: 'invoke', reason: 'window' } : { action: 'receive', max, waitSec: 0, delayMs: 0 };
  if (remainingMs >= 1_000)
    return { action: 'receive', max, waitSec: Math.min(window.maxWaitSec, Math.floor(remainingMs / 1_000)), delayMs: 0 };
  return { action: 'receive', max, waitSec: 0, delayMs: g.lastReceiveEmpty ? remainingMs : 0 };
}
