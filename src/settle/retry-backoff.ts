/**
 * Retry back-off after a failed invocation: instead of coming back after the queue's whole visibility timeout
 * (the trigger's behaviour, and ours by default), a kept message is made visible again after a delay that
 * grows with its ApproximateReceiveCount, like spring-cloud-aws's ExponentialBackoffErrorHandler, sqs-consumer's
 * terminateVisibilityTimeout function and Shoryuken's retry_intervals.
 *
 *   delay = min(max, base * 2^(receiveCount - 1)) * (1 - jitter * random)   rounded up to whole seconds
 *
 * SQS sets visibility in whole seconds, and at most 12 hours after the receive that returned the handle.
 */
import type { Message } from '@aws-sdk/client-sqs';
import type { Random } from '../receive/queue-order.ts';
import { groupsOf } from '../core/message.ts';

/** SQS's largest visibility timeout, counted from the receive. */
export const MAX_VISIBILITY_SEC = 43_200;

export interface RetryBackoff {
  /** Delay after the first failed delivery (receive count 1). */
  readonly baseSec: number;
  /** The most any delay grows to. */
  readonly maxSec: number;
  /** 0-1: the share of each delay drawn at random (0: the exact curve; 0.5 default: between half and all of it). */
  readonly jitter: number;
}

/**
 * The policy for one queue: its own (queue-options), none when its own is 'off', else the --retry-backoff one
 * (undefined: none).
 */
export function retryBackoffFor(own: RetryBackoff | 'off' | undefined, global: RetryBackoff | undefined): RetryBackoff | undefined {
  return own === 'off' ? undefined : (own ?? global);
}

/** One ChangeMessageVisibility timeout and the messages that get it. */
export interface BackoffChange {
  readonly timeoutSec: number;
  readonly messages: Message[];
}

/** The message's ApproximateReceiveCount; 1 when SQS did not send it (it always does when asked). */
export function receiveCountOf(message: Message): number {
  const n = Number(message.Attributes?.ApproximateReceiveCount);
  return Number.isInteger(n) && n >= 1 ? n : 1;
}

/** The ceiling of the curve for a receive count, before jitter, in seconds (not rounded). */
export function curveSec(receiveCount: number, policy: RetryBackoff): number {
  const exponent = Math.min(Math.max(1, receiveCount) - 1, 40);
  return Math.min(policy.maxSec, policy.baseSec * 2 ** exponent);
}

/** The delay for one message (or one FIFO group) that was received `receiveCount` times, in whole seconds. */
export function retryDelaySec(receiveCount: number, policy: RetryBackoff, random: Random, limitSec = MAX_VISIBILITY_SEC): number {
  const delay = curveSec(receiveCount, policy) * (1 - policy.jitter * random());
  return Math.max(0, Math.min(limitSec, MAX_VISIBILITY_SEC, Math.ceil(delay)));
}

/**
 * Which visibility timeout each kept message gets, grouped into one change per distinct timeout (each change is
 * one ChangeMessageVisibilityBatch per 10 messages).
 * - Standard queue: each message by its own receive count and its own jitter.
 * - FIFO queue: per message group. SQS hands out nothing more of a group while one of its messages is
 *   invisible, so the group's first kept message already holds the whole group back; its later kept messages
 *   get the same timeout (computed from the highest receive count among them, one draw per group) so that
 *   none of them becomes visible before the message it must follow. The group is therefore retried, in
 *   order, after one back-off, and its messages that were not in this batch wait behind it.
 * `limitSec` is what SQS still allows for these handles (12 hours minus the time since the receive).
 */
export function planRetryBackoff(
  kept: readonly Message[],
  fifo: boolean,
  policy: RetryBackoff,
  random: Random,
  limitSec = MAX_VISIBILITY_SEC,
): BackoffChange[] {
  const byTimeout = new Map<number, Message[]>();
  const add = (timeoutSec: number, messages: Message[]) => {
    const list = byTimeout.get(timeoutSec);
    if (list) list.push(...messages);
    else byTimeout.set(timeoutSec, [...messages]);
  };
  if (!fifo) {
    for (const m of kept) add(retryDelaySec(receiveCountOf(m), policy, random, limitSec), [m]);
  } else {
    for (const messages of groupsOf(kept)) {
      const count = Math.max(...messages.map(receiveCountOf));
      add(retryDelaySec(count, policy, random, limitSec), messages);
    }
  }
  return [...byTimeout].map(([timeoutSec, messages]) => ({ timeoutSec, messages }));
}
