import type { Message } from '@aws-sdk/client-sqs';
import type { Invoke, InvokeWrapper } from './invoke.ts';
import type { InvokeError, InvokeResult } from '../core/function-invoker.ts';

/** What an attempt returns when the lease lapsed before it: nothing was sent (never seen by callers outside). */
export interface LeaseLapsed extends InvokeError {
  readonly kind: 'not-sent';
  readonly code: 'LeaseLapsed';
  /** The messages the lease could no longer prove hidden. */
  readonly lapsed: Message[];
}

/**
 * Asks the lease right before every attempt (the first, and each after a throttle, pause, hold or back-off,
 * after any wait for a permit): a message it cannot prove hidden may be another consumer's now, so nothing is
 * invoked. Otherwise the attempt starts (ctx.onStart) and the call goes on.
 */
export function withLeaseCheck(): InvokeWrapper {
  return (next: Invoke): Invoke =>
    (payload, ctx, signal) => {
      const lapsed = ctx.lease.confirm(ctx.messages);
      if (lapsed.length > 0) {
        const error: LeaseLapsed = { kind: 'not-sent', code: 'LeaseLapsed', message: 'the visibility lease lapsed; not invoked', lapsed };
        return Promise.resolve({ ok: false, error });
      }
      ctx.onStart();
      return next(payload, ctx, signal);
    };
}

/** The messages whose lease lapsed before `result`'s attempt, if that is why nothing was invoked. */
export function lapsedOf(result: InvokeResult): Message[] | undefined {
  if (result.ok || result.error.code !== 'LeaseLapsed') return undefined;
  return (result.error as LeaseLapsed).lapsed;
}
