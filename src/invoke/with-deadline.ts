import type { Invoke, InvokeWrapper } from './invoke.ts';
import type { InvokeResult } from './lambda-invoker.ts';

/** Lambda runs a function for at most 15 minutes: an Invoke with no answer a minute after that is dead. */
export const INVOKE_TIMEOUT_MS = 16 * 60_000;

/**
 * Each call under a deadline of `ms` (INVOKE_TIMEOUT_MS in the daemon), given to it as its signal, aborted with
 * a TimeoutError (src/aws/errors.ts then calls it "no answer in time"). The timer is cleared as soon as the call
 * ends: AbortSignal.timeout() would keep a 16-minute timer per invocation alive long after its message was
 * settled. Not an async function: a suspended one keeps its frame for the whole call, thousands at a time at
 * high concurrency.
 */
export function withDeadline(ms: number): InvokeWrapper {
  return (next: Invoke): Invoke =>
    (payload, ctx) => {
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(new DOMException('no answer in time', 'TimeoutError')), ms);
      // The call itself keeps the process alive while it runs; the deadline must not do so on its own.
      timer.unref();
      const clear = () => clearTimeout(timer);
      let call: Promise<InvokeResult>;
      try {
        call = next(payload, ctx, deadline.signal);
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
