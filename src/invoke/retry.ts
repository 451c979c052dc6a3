import type { Message } from '@aws-sdk/client-sqs';
import type { ResolvedQueue } from '../core/queue.ts';
import type { Logger } from 'pino';
import { sleep } from '../util/backoff.ts';
import type { FunctionGate } from './function-gate.ts';
import type { Invoke, InvokeContext } from './invoke.ts';
import type { InvocationResponse } from '../core/function-invoker.ts';
import { NO_ATTEMPTS, countAttempt, decideInvokeRetry, safeToRelease, type InvokeAttempts } from './invoke-retry.ts';
import type { InvokeError } from '../core/function-invoker.ts';
import { describeThrottle, type ThrottleLabel } from './throttle-reason.ts';
import { lapsedOf } from './with-lease-check.ts';

/** How invoking a chunk ended, after every retry. */
export type InvokeOutcome =
  | { kind: 'answered'; response: InvocationResponse; durationMs: number }
  | { kind: 'failed'; error: InvokeError }
  | { kind: 'released'; atOnce: boolean }
  | { kind: 'lapsed'; lapsed: Message[] };

/** The retry's context: an attempt's, less the start signal the retry gives each attempt itself. */
export type RetryContext = Omit<InvokeContext, 'onStart'>;

/** What the retry tells its owner (the Dispatcher's loop activities, for liveness, and its metrics). */
/**
 * The loop capacity a waiting batch gives up and takes back (src/dispatch/loop-capacity.ts): while a batch waits
 * to retry, its place in the concurrency budget and its queue slot go to other loops.
 */
export interface LoopsAside {
  /** The loop's batch of `queue` is about to wait: it gives up its place and its queue slot meanwhile. */
  stepAside(loop: number, queue: ResolvedQueue): void;
  /** Whether the loop's batch has capacity to take back before its next attempt. */
  isAside(loop: number): boolean;
  /** Takes back what stepAside gave up, waiting its turn. */
  rejoin(loop: number, queue: ResolvedQueue): Promise<void>;
}

export interface RetryEvents {
  /** What the loop is doing now, for liveness, with its deadline (Infinity: no deadline of its own). */
  activity(loop: number, activity: string, deadlineMs: number): void;
  /** One throttled Invoke of `queue`'s messages, with the bounded label of Lambda's reason (throttle-reason.ts). */
  throttled(queue: string, reason: ThrottleLabel): void;
  /** The function was paused (true) or got through again (false). */
  paused(paused: boolean): void;
}

export interface RetryDeps {
  readonly logger: Logger;
  readonly functionName: string;
  readonly now: () => number;
  readonly random: () => number;
  /** Pauses the function for every loop while it cannot run at all (src/invoke/function-gate.ts). */
  readonly gate: FunctionGate;
  /** Capacity given up while a batch waits between attempts, and taken back before the next. */
  readonly capacity: LoopsAside;
  /** Aborts when the drain's retry time is over: waits after a throttle, not-sent or pause end there. */
  readonly drainOver: AbortSignal;
  /** Unknown outcomes after which a batch is left to the queue's redrive rules. */
  readonly maxUnknown: number;
  /** The deadline of the 'invoke' activity (the attempt's own deadline). */
  readonly attemptMs: number;
  /** The wait after a throttle, if not a plain sleep (adaptive concurrency cuts it short: ConcurrencyGate). */
  readonly throttledBackOff?: (delayMs: number, signal: AbortSignal) => Promise<void>;
  readonly events: RetryEvents;
}

/**
 * Invokes until the function answers or the retry policy gives up (the pure decisions: src/invoke/invoke-retry.ts).
 * The lease keeps the messages invisible meanwhile, so throttles, pauses and holds cost no receive count. An
 * invocation in flight is never cut short by shutdown; only waiting between attempts is.
 */
export function withRetry(d: RetryDeps): (attempt: Invoke) => (payload: string, ctx: RetryContext) => Promise<InvokeOutcome> {
  return (attempt) => async (payload, ctx) => {
    const { queue, loop } = ctx;
    let attempts: InvokeAttempts = NO_ATTEMPTS;
    const policy = { unknownHoldMs: ctx.lease.timeoutMs, maxUnknown: d.maxUnknown };
    for (;;) {
      if (d.capacity.isAside(loop)) {
        d.events.activity(loop, 'waiting for capacity', Infinity);
        await d.capacity.rejoin(loop, queue);
      }
      let started = d.now();
      const onStart = () => {
        // After the wait for a permit: the duration and the invoke activity's deadline are the Invoke's own.
        d.events.activity(loop, 'invoke', d.attemptMs);
        started = d.now();
      };
      const result = await attempt(payload, { ...ctx, onStart });
      const lapsed = lapsedOf(result);
      if (lapsed !== undefined) return { kind: 'lapsed', lapsed };
      if (result.ok) {
        d.gate.resume();
        d.events.paused(false);
        return { kind: 'answered', response: result.response, durationMs: d.now() - started };
      }
      const error = result.error;
      attempts = countAttempt(attempts, error);
      const decision = decideInvokeRetry(error, attempts, policy, d.random);
      if (decision.action === 'give-up') return { kind: 'failed', error };
      // A throttle says why (a CPU or capacity limit, or a concurrency limit): Lambda's Reason, else its message, capped.
      const throttle = error.kind === 'throttled' ? describeThrottle(error) : undefined;
      const context = {
        queue: queue.name,
        messageIds: ctx.unsettledIds,
        function: d.functionName,
        err: { kind: error.kind, code: error.code, message: error.message },
        ...(throttle ? { reason: throttle.reason } : {}),
      };
      // Draining: an unknown outcome is not held (the messages keep their visibility); other failures may retry
      // until the drain's retry time is over.
      const stopped = () => (error.kind === 'unknown' ? ctx.halt.aborted : d.drainOver.aborted);
      if (stopped()) return { kind: 'released', atOnce: safeToRelease(attempts) };
      const waitSignal = error.kind === 'unknown' ? ctx.halt : d.drainOver;
      if (throttle) d.events.throttled(queue.name, throttle.label);
      // Waiting never holds capacity: healthy batches use the place and the slot meanwhile.
      d.capacity.stepAside(loop, queue);
      if (decision.action === 'pause-function') {
        d.gate.pause(error);
        d.events.paused(true);
        await d.gate.wait(waitSignal, (ms) => d.events.activity(loop, 'paused', ms));
      } else {
        if (error.kind === 'unknown') {
          d.logger.warn(
            { ...context, holdMs: decision.delayMs, attempt: attempts.unknown },
            'Invoke outcome unknown (the function may still be running); holding the messages before invoking them again',
          );
        } else {
          d.logger.warn(
            { ...context, delayMs: decision.delayMs, attempt: attempts.throttled + attempts.notSent },
            error.kind === 'throttled' ? 'function throttled, retrying' : 'Invoke could not reach Lambda, retrying',
          );
        }
        d.events.activity(loop, 'invoke back-off', decision.delayMs);
        // A Retry-After is waited out whole: an invocation accepted meanwhile does not say Lambda's limit is gone.
        if (d.throttledBackOff && error.kind === 'throttled' && error.retryAfterMs === undefined)
          await d.throttledBackOff(decision.delayMs, waitSignal);
        else await sleep(decision.delayMs, waitSignal);
      }
      if (stopped()) return { kind: 'released', atOnce: safeToRelease(attempts) };
    }
  };
}
