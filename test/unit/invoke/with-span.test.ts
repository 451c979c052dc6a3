import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import type { Invoke } from '../../../src/invoke/invoke.ts';
import type { InvokeResult } from '../../../src/core/function-invoker.ts';
import type { DispatchTracer } from '../../../src/core/telemetry/tracer.ts';
import { noopTracer } from '../../../src/core/telemetry/tracer.ts';
import { withSpan } from '../../../src/invoke/with-span.ts';
import { functionError, message, ok, throttled } from '../../support/factories.ts';
import { invokeContext } from '../../support/invoke-context.ts';

/** A tracer that records each process span: its function, messages and the error type read from the result. */
function recordingTracer() {
  const spans: { functionName: string; ids: string[]; errorType: string | undefined }[] = [];
  const tracer: DispatchTracer = {
    ...noopTracer,
    async process<T>(
      _q: unknown,
      functionName: string,
      messages: readonly Message[],
      run: () => Promise<T>,
      failure?: (r: T) => string | undefined,
    ) {
      const result = await run();
      spans.push({ functionName, ids: messages.map((m) => m.MessageId ?? ''), errorType: failure?.(result) });
      return result;
    },
  };
  return { tracer, spans };
}

describe('withSpan', () => {
  it('runs each call in a process span over the unsettled messages the lease still holds', async () => {
    const { tracer, spans } = recordingTracer();
    const messages = [message({ MessageId: 'a' }), message({ MessageId: 'b' }), message({ MessageId: 'c' })];
    // b is settled already (not in unsettledIds); c is no longer leased.
    const ctx = { ...invokeContext({ messages }), unsettledIds: ['a', 'c'] };
    const leased = { ...ctx, lease: { ...ctx.lease, messages: messages.slice(0, 2) } };
    const result = await withSpan(tracer, 'fn')(() => Promise.resolve(ok()))('{}', leased);
    assert.deepEqual(result, ok());
    assert.deepEqual(spans, [{ functionName: 'fn', ids: ['a'], errorType: undefined }]);
  });

  it('records a function error as function_error and a failed Invoke by its kind', async () => {
    const { tracer, spans } = recordingTracer();
    const answers =
      (r: InvokeResult): Invoke =>
      () =>
        Promise.resolve(r);
    await withSpan(tracer, 'fn')(answers(functionError()))('{}', invokeContext());
    await withSpan(tracer, 'fn')(answers(throttled()))('{}', invokeContext());
    assert.deepEqual(
      spans.map((s) => s.errorType),
      ['function_error', 'throttled'],
    );
  });

  it('leaves the call as it is without tracing: no span, and no message list built per Invoke', () => {
    const call: Invoke = () => Promise.resolve(ok());
    assert.equal(withSpan(noopTracer, 'fn')(call), call);
  });
});
