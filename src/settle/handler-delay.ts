/**
 * A retry delay the handler chooses: a workerless extension of the partial batch response, in which a
 * `batchItemFailures` entry may carry `retryDelaySeconds` (the users of every peer ask for it: aws-lambda-go#289,
 * powertools-lambda-java#437, aws-dotnet-messaging#323, bref#1613). The message is then made visible again after
 * that delay (ChangeMessageVisibility), in place of --retry-backoff's curve or the queue's visibility timeout.
 *
 * - The value must be a JSON number of seconds, 0 or more; a fraction is rounded up (SQS sets whole seconds, and
 *   a retry must not come sooner than asked).
 * - SQS refuses a visibility timeout that ends more than 12 hours after the receive that returned the handle
 *   (ChangeMessageVisibility, "Amazon SQS visibility timeout" in the SQS Developer Guide): a longer delay is
 *   clamped to what is left of those 12 hours, and counted.
 * - Anything else (a string, null, a negative number, NaN or Infinity cannot arrive as JSON) is invalid: counted
 *   and logged, and the message gets what it would have got without a delay, the back-off or its timeout.
 */
import type { Message } from '@aws-sdk/client-sqs';
import type { BackoffChange } from './retry-backoff.ts';
import { groupsOf, messageIdOf } from '../core/message.ts';

export type HandlerDelay = { kind: 'delay'; sec: number; clamped: boolean } | { kind: 'invalid'; reason: string };

/**
 * Reads one entry's `retryDelaySeconds`. `limitSec`: the longest timeout SQS still allows for the handle. The
 * reason never holds the value unless it is a number: a string from the function could hold payload data.
 */
export function readHandlerDelay(raw: unknown, limitSec: number): HandlerDelay {
  if (typeof raw !== 'number' || !Number.isFinite(raw)) {
    return { kind: 'invalid', reason: `retryDelaySeconds must be a number of seconds, got ${raw === null ? 'null' : typeof raw}` };
  }
  if (raw < 0) return { kind: 'invalid', reason: `retryDelaySeconds must not be negative, got ${raw}` };
  const sec = Math.ceil(raw);
  const limit = Math.max(0, limitSec);
  return sec > limit ? { kind: 'delay', sec: limit, clamped: true } : { kind: 'delay', sec, clamped: false };
}

/** What the handler's delays decide for the kept messages of one chunk. */
export interface HandlerDelayPlan {
  /** One ChangeMessageVisibility timeout each, with the messages that get it. */
  readonly changes: BackoffChange[];
  /** The messages no valid delay covers: the back-off (or their visibility timeout) applies to them. */
  readonly rest: Message[];
  readonly invalid: { readonly message: Message; readonly reason: string }[];
  /** Delays above what SQS allows, clamped to it. */
  readonly clamped: { readonly message: Message; readonly sec: number }[];
}

/**
 * Which kept messages get the delay their handler chose. `raw`: `retryDelaySeconds` by message id, as the
 * entries gave it (src/settle/invoke-result.ts).
 * - Standard queue: each message its own delay.
 * - FIFO queue: per message group, as the back-off is (src/settle/retry-backoff.ts): SQS hands out nothing more
 *   of a group while one of its messages is invisible, so all the group's kept messages get one timeout, the
 *   longest valid delay among them, and none of them returns before a message it must follow. A group with no
 *   valid delay is left to the back-off.
 */
export function planHandlerDelays(
  kept: readonly Message[],
  fifo: boolean,
  raw: ReadonlyMap<string, unknown>,
  limitSec: number,
): HandlerDelayPlan {
  const plan: HandlerDelayPlan = { changes: [], rest: [], invalid: [], clamped: [] };
  if (raw.size === 0) return { ...plan, rest: [...kept] };
  const delayOf = (m: Message): number | undefined => {
    const id = messageIdOf(m);
    if (!raw.has(id)) return undefined;
    const delay = readHandlerDelay(raw.get(id), limitSec);
    if (delay.kind === 'invalid') {
      plan.invalid.push({ message: m, reason: delay.reason });
      return undefined;
    }
    if (delay.clamped) plan.clamped.push({ message: m, sec: delay.sec });
    return delay.sec;
  };
  const byTimeout = new Map<number, Message[]>();
  const add = (sec: number, messages: readonly Message[]) => {
    const list = byTimeout.get(sec);
    if (list) list.push(...messages);
    else byTimeout.set(sec, [...messages]);
  };
  const units = fifo ? groupsOf(kept) : kept.map((m) => [m]);
  for (const unit of units) {
    const delays = unit.map(delayOf).filter((d): d is number => d !== undefined);
    if (delays.length > 0) add(Math.max(...delays), unit);
    else plan.rest.push(...unit);
  }
  plan.changes.push(...[...byTimeout].map(([timeoutSec, messages]) => ({ timeoutSec, messages })));
  return plan;
}
