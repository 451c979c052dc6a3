import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import type { ResolvedQueue } from '../aws/sqs-source.ts';
import type { LoopCapacity } from '../dispatch/loop-capacity.ts';
import type { DispatchMetrics } from '../operator/metrics/dispatch-metrics.ts';
import type { DispatchTracer } from '../operator/tracing/tracer.ts';
import type { VisibilityLease } from '../settle/visibility-lease.ts';
import { sleep } from '../util/backoff.ts';
import type { ConcurrencyGate, InvokeVerdict } from './concurrency-gate.ts';
import { INVOKE_TIMEOUT_MS, invokeWithDeadline } from './deadline.ts';
import type { FunctionGate } from './function-gate.ts';
import type { InvocationResponse } from './invoke-result.ts';
import { NO_ATTEMPTS, countAttempt, nextInvokeStep, safeToRelease, type InvokeAttempts } from './invoke-retry.ts';
import type { FunctionInvoker, InvokeError, InvokeResult } from './lambda-invoker.ts';

/** Unknown Invoke outcomes after which a batch is left to the queue's redrive rules. */
const MAX_UNKNOWN_OUTCOMES = 3;

/** What an attempt returns when the lease lapsed before it: nothing was sent (never seen by callers outside). */
const NOT_INVOKED: InvokeResult = {
  ok: false,
  error: { kind: 'not-sent', code: 'LeaseLapsed', message: 'the visibility lease lapsed; not invoked' },
};

/** What the Dispatcher lent the retry loop (its fields, as they were). */
export interface RetryDeps {
  readonly log: Logger;
  readonly now: () => number;
  readonly random: () => number;
  readonly invoker: FunctionInvoker;
  readonly functionName: string;
  readonly gate: FunctionGate;
  readonly adaptive: ConcurrencyGate | undefined;
  readonly capacity: LoopCapacity;
  readonly metrics: DispatchMetrics;
  readonly tracer: DispatchTracer;
  readonly drainOver: AbortSignal;
  readonly step: (loop: number, step: string | undefined, deadlineMs?: number) => void;
}

export interface RetryBatch {
  readonly loop: number;
  readonly queue: ResolvedQueue;
  readonly lease: VisibilityLease;
}

/**
 * Invokes until the function answers or the retry policy gives up (src/invoke/invoke-retry.ts). The lease
 * keeps the messages invisible meanwhile, so throttles, pauses and holds cost no receive count. An
 * invocation in flight is never cut short by shutdown; only waiting between attempts is.
 */
export async function invokeWithRetry(
  d: RetryDeps,
  batch: RetryBatch,
  messages: readonly Message[],
  unsettledIds: string[],
  payload: string,
  halt: AbortSignal,
): Promise<
  | { kind: 'answered'; response: InvocationResponse; durationMs: number }
  | { kind: 'failed'; error: InvokeError }
  | { kind: 'interrupted'; release: boolean }
  | { kind: 'lapsed'; lapsed: Message[] }
> {
  const { queue } = batch;
  let attempts: InvokeAttempts = NO_ATTEMPTS;
  const policy = { unknownHoldMs: batch.lease.timeoutMs, maxUnknown: MAX_UNKNOWN_OUTCOMES };
  for (;;) {
    if (d.capacity.isAside(batch.loop)) {
      d.step(batch.loop, 'waiting for capacity', Infinity);
      await d.capacity.rejoin(batch.loop, queue);
    }
    // Waiting for an Invoke permit (adaptive concurrency) is a step of its own.
    if (d.adaptive) d.step(batch.loop, 'waiting for an Invoke permit', Infinity);
    let started = d.now();
    let lapsed: Message[] = [];
    const invoke = () => {
      // The lease is asked right before every attempt (the first, and each after a throttle, pause, hold or
      // back-off, after any wait for a permit): a message it cannot prove hidden may be another consumer's now.
      lapsed = batch.lease.confirm(messages);
      if (lapsed.length > 0) return Promise.resolve(NOT_INVOKED);
      // After the wait for a permit: the duration and the invoke step's deadline are the Invoke's own.
      d.step(batch.loop, 'invoke', INVOKE_TIMEOUT_MS);
      started = d.now();
      // A Set: a batch may hold 10,000 messages. Made here, not kept for the whole call.
      const unsettled = new Set(unsettledIds);
      return d.tracer.process(
        queue,
        d.functionName,
        batch.lease.messages.filter((m) => unsettled.has(m.MessageId ?? '')),
        () => invokeWithDeadline(d.invoker, payload),
        (r) => (r.ok ? (r.response.functionError ? 'function_error' : undefined) : r.error.kind),
      );
    };
    // With adaptive concurrency the call waits for a permit, and its outcome moves the limit.
    const result = d.adaptive ? await d.adaptive.invoke(invoke, invokeVerdict) : await invoke();
    if (lapsed.length > 0) return { kind: 'lapsed', lapsed };
    if (result.ok) {
      d.gate.resume();
      d.metrics.paused(false);
      return { kind: 'answered', response: result.response, durationMs: d.now() - started };
    }
    const error = result.error;
    attempts = countAttempt(attempts, error);
    const step = nextInvokeStep(error, attempts, policy, d.random);
    if (step.action === 'give-up') return { kind: 'failed', error };
    const context = {
      queue: queue.name,
      messageIds: unsettledIds,
      function: d.functionName,
      err: { kind: error.kind, code: error.code, message: error.message },
    };
    // Draining: an unknown outcome is not held (the messages keep their visibility); other failures may retry
    // until the drain's retry time is over.
    const stopped = () => (error.kind === 'unknown' ? halt.aborted : d.drainOver.aborted);
    if (stopped()) return { kind: 'interrupted', release: safeToRelease(attempts) };
    const waitSignal = error.kind === 'unknown' ? halt : d.drainOver;
    if (error.kind === 'throttled') d.metrics.throttled(queue.name);
    // Waiting never holds capacity: healthy batches use the place and the slot meanwhile.
    d.capacity.stepAside(batch.loop, queue);
    if (step.action === 'pause-function') {
      d.gate.pause(error);
      d.metrics.paused(true);
      await d.gate.wait(waitSignal, (ms) => d.step(batch.loop, 'paused', ms));
    } else {
      if (error.kind === 'unknown') {
        d.log.warn(
          { ...context, holdMs: step.delayMs, attempt: attempts.unknown },
          'Invoke outcome unknown (the function may still be running); holding the messages before invoking them again',
        );
      } else {
        d.log.warn(
          { ...context, delayMs: step.delayMs, attempt: attempts.throttled + attempts.notSent },
          error.kind === 'throttled' ? 'function throttled, retrying' : 'Invoke could not reach Lambda, retrying',
        );
      }
      d.step(batch.loop, 'invoke back-off', step.delayMs);
      if (d.adaptive && error.kind === 'throttled') await d.adaptive.throttledBackOff(step.delayMs, waitSignal);
      else await sleep(step.delayMs, waitSignal);
    }
    if (stopped()) return { kind: 'interrupted', release: safeToRelease(attempts) };
  }
}

/** What an Invoke result tells adaptive concurrency: only Lambda's answers and throttles speak about the budget. */
function invokeVerdict(result: InvokeResult): InvokeVerdict {
  if (result.ok) return 'accepted';
  return result.error.kind === 'throttled' ? 'throttled' : 'failed';
}
