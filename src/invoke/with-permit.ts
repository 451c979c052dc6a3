import type { ConcurrencyGate, InvokeVerdict } from './concurrency-gate.ts';
import type { Invoke, InvokeContext, InvokeWrapper } from './invoke.ts';
import type { InvokeResult } from '../core/function-invoker.ts';

/**
 * With adaptive concurrency (a gate), each call waits for an Invoke permit and its outcome moves the limit
 * (src/invoke/concurrency-gate.ts); `onWait` is told first (the wait is an activity of its own, for liveness). Without
 * a gate the call goes straight through.
 */
export function withPermit(gate: ConcurrencyGate | undefined, onWait: (ctx: InvokeContext) => void): InvokeWrapper {
  return (next: Invoke): Invoke => {
    if (gate === undefined) return next;
    return (payload, ctx, signal) => {
      onWait(ctx);
      return gate.invoke(() => next(payload, ctx, signal), invokeVerdict);
    };
  };
}

/** What an Invoke result tells adaptive concurrency: only Lambda's answers and throttles speak about the budget. */
export function invokeVerdict(result: InvokeResult): InvokeVerdict {
  if (result.ok) return 'accepted';
  return result.error.kind === 'throttled' ? 'throttled' : 'failed';
}
