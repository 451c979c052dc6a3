import type { Invoke, InvokeWrapper } from './invoke.ts';
import type { InvokeResult } from '../core/function-invoker.ts';
import { monotonicNow } from '../util/clock.ts';
import { TimerHeap, type HeapEntry } from '../util/timer-heap.ts';

/** Lambda runs a function for at most 15 minutes: an Invoke with no answer a minute after that is dead. */
export const INVOKE_TIMEOUT_MS = 16 * 60_000;

/** One Invoke's deadline on the chain's heap, and the signal it aborts. */
class InvokeDeadline implements HeapEntry {
  dueAt = 0;
  slot = -1;
  readonly controller = new AbortController();
}

/**
 * Each call under a deadline of `ms` (INVOKE_TIMEOUT_MS in the daemon), given to it as its signal, aborted with
 * a TimeoutError (src/core/errors.ts then calls it "no answer in time"). The timer is cleared as soon as the call
 * ends: AbortSignal.timeout() would keep a 16-minute timer per invocation alive long after its message was
 * settled. Not an async function: a suspended one keeps its frame for the whole call, thousands at a time at
 * high concurrency. The deadlines of all the chain's calls share one timer (src/util/timer-heap.ts) instead of a
 * 16-minute Timeout per call, which outlived two scavenges as soon as a call took a few tens of milliseconds.
 */
export function withDeadline(ms: number): InvokeWrapper {
  // The call itself keeps the process alive while it runs; the deadline must not do so on its own.
  const heap = new TimerHeap<InvokeDeadline>(
    monotonicNow,
    (deadline) => deadline.controller.abort(new DOMException('no answer in time', 'TimeoutError')),
    { unref: true },
  );
  return (next: Invoke): Invoke =>
    (payload, ctx) => {
      const deadline = new InvokeDeadline();
      heap.set(deadline, monotonicNow() + ms);
      const clear = () => heap.remove(deadline);
      let call: Promise<InvokeResult>;
      try {
        call = next(payload, ctx, deadline.controller.signal);
      } catch (err) {
        // As an async function would: a throw becomes a rejection.
        call = Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
      return call.then(
        (result) => {
          clear();
          return result;
        },
        (err: unknown) => {
          clear();
          throw err;
        },
      );
    };
}
