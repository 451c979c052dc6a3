import type { DispatchTracer } from '../core/telemetry/tracer.ts';
import type { ConcurrencyGate } from './concurrency-gate.ts';
import type { Invoke, InvokeWrapper } from './invoke.ts';
import type { FunctionInvoker } from '../core/function-invoker.ts';
import { withRetry, type InvokeOutcome, type RetryContext, type RetryDeps } from './retry.ts';
import { INVOKE_TIMEOUT_MS, withDeadline } from './with-deadline.ts';
import { withDurableStart } from './with-durable-start.ts';
import { withLeaseCheck } from './with-lease-check.ts';
import { withPermit } from './with-permit.ts';
import { withSpan } from './with-span.ts';

/** Unknown Invoke outcomes after which a batch is left to the queue's redrive rules. */
const MAX_UNKNOWN_OUTCOMES = 3;

export interface InvokeChainDeps extends Omit<RetryDeps, 'maxUnknown' | 'attemptMs' | 'throttledBackOff'> {
  readonly invoker: FunctionInvoker;
  readonly tracer: DispatchTracer;
  /** The concurrency budget: Invoke permits, and the back-off after a throttle. */
  readonly budget: ConcurrencyGate;
}

/**
 * The Invoke of one chunk, from the outside in: retry (until an answer, or the policy gives up) > durable start
 * (an async start already made counts as made) > permit (the concurrency budget) > lease check (right before the
 * call, after any wait) > span > deadline > the call, with the chunk's parameters (ctx.params).
 */
export function composeInvoke(deps: InvokeChainDeps): (payload: string, ctx: RetryContext) => Promise<InvokeOutcome> {
  const { invoker, tracer, budget, ...retry } = deps;
  const call: Invoke = (payload, ctx, signal) => invoker.invoke(payload, signal, ctx.params);
  const attempt = wrap(
    call,
    withDurableStart(deps.logger, deps.functionName),
    // Waiting for an Invoke permit is an activity of its own, for liveness.
    withPermit(budget, (ctx) => deps.events.activity(ctx.loop, 'waiting for an Invoke permit', Infinity)),
    withLeaseCheck(),
    withSpan(tracer, deps.functionName),
    withDeadline(INVOKE_TIMEOUT_MS),
  );
  return withRetry({
    ...retry,
    maxUnknown: MAX_UNKNOWN_OUTCOMES,
    attemptMs: INVOKE_TIMEOUT_MS,
    throttledBackOff: (ms: number, signal: AbortSignal) => budget.throttledBackOff(ms, signal),
  })(attempt);
}

/** `call` inside `wrappers`, the first outermost. */
function wrap(call: Invoke, ...wrappers: InvokeWrapper[]): Invoke {
  return wrappers.reduceRight((next, wrapper) => wrapper(next), call);
}
