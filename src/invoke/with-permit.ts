import type { ConcurrencyGate, InvokeVerdict } from './concurrency-gate.ts';
import type { Invoke, InvokeContext, InvokeWrapper } from './invoke.ts';
import type { InvokeResult } from '../core/function-invoker.ts';

/**
 * Each call waits for an Invoke permit of the concurrency budget, and its outcome is told to the budget's ceilings
 * (src/invoke/concurrency-gate.ts); `onWait` is told first (the wait is an activity of its own, for liveness).
 */
export function withPermit(budget: ConcurrencyGate, onWait: (ctx: InvokeContext) => void): InvokeWrapper {
  return (next: Invoke): Invoke =>
    (payload, ctx, signal) => {
      onWait(ctx);
      return budget.invoke(() => next(payload, ctx, signal), invokeVerdict);
    };
}

/** What an Invoke result tells the budget's ceilings: only Lambda's answers and throttles speak about the budget. */
export function invokeVerdict(result: InvokeResult): InvokeVerdict {
  if (result.ok) return 'accepted';
  return result.error.kind === 'throttled' ? 'throttled' : 'failed';
}
