import { noopTracer, type DispatchTracer } from '../core/telemetry/tracer.ts';
import type { Invoke, InvokeWrapper } from './invoke.ts';
import { messageIdOf } from '../core/message.ts';

/**
 * Each call inside a process span (src/core/telemetry/tracer.ts) over the batch's messages still unsettled and
 * still leased, with the error type read from the result: outcomes are values, not exceptions. Without tracing
 * the call goes straight through: the span's message list (a Set and a filter per Invoke) would be built for nothing.
 */
export function withSpan(tracer: DispatchTracer, functionName: string): InvokeWrapper {
  return (next: Invoke): Invoke => {
    if (tracer === noopTracer) return next;
    return (payload, ctx, signal) => {
      // A Set: a batch may hold 10,000 messages. Made here, not kept for the whole call.
      const unsettled = new Set(ctx.unsettledIds);
      return tracer.process(
        ctx.queue,
        functionName,
        ctx.lease.messages.filter((m) => unsettled.has(messageIdOf(m))),
        () => next(payload, ctx, signal),
        (r) => (r.ok ? (r.response.functionError ? 'function_error' : undefined) : r.error.kind),
      );
    };
  };
}
