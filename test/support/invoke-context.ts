import type { Message } from '@aws-sdk/client-sqs';
import type { InvokeContext } from '../../src/invoke/invoke.ts';
import { message, queue } from './factories.ts';

/**
 * An InvokeContext over `messages` whose lease hides them all (confirm() returns `lapsed`), for the invoke
 * wrappers' unit tests. `started` counts the attempts that really started.
 */
export function invokeContext(
  opts: { messages?: Message[]; lapsed?: Message[]; timeoutMs?: number; halt?: AbortSignal } = {},
): InvokeContext & { started: number; confirmed: number } {
  const messages = opts.messages ?? [message({ MessageId: 'm1' }), message({ MessageId: 'm2' })];
  const ctx = {
    loop: 0,
    queue: queue('q'),
    lease: {
      confirm: () => {
        ctx.confirmed++;
        return opts.lapsed ?? [];
      },
      messages,
      timeoutMs: opts.timeoutMs ?? 30_000,
    },
    messages,
    unsettledIds: messages.map((m) => m.MessageId ?? ''),
    halt: opts.halt ?? new AbortController().signal,
    onStart: () => {
      ctx.started++;
    },
    started: 0,
    confirmed: 0,
  };
  return ctx;
}
