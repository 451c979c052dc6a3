// A durable route (--durable sync|async; docs/targets.md, "Durable functions") through the Dispatcher, over the fake
// queue: each message is one invocation under its execution name, and what Lambda's answer means for the message.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Dispatcher } from '../../../../src/dispatch/dispatcher.ts';
import { type DispatcherOptions } from '../../../../src/dispatch/dispatcher-options.ts';
import { durableExecutionName } from '../../../../src/invoke/durable-name.ts';
import type { InvokeResult } from '../../../../src/core/function-invoker.ts';
import { SQS_METRICS } from '../../../../src/core/telemetry/metric-names.ts';
import {
  FakeInvoker,
  FakeSource,
  RecordingMetrics,
  dispatcherOptions,
  message,
  queue,
  recordingLogger,
  stopAfterTests,
  until,
} from '../../../support/factories.ts';

/** Lambda's 202 for an accepted Event invoke: no payload. */
const accepted = (): InvokeResult => ({ ok: true, response: { payload: undefined, functionError: undefined } });
/** Lambda's 409 for a name whose execution has another payload (the SDK's model: DurableExecutionAlreadyStartedException$). */
const alreadyStarted = (): InvokeResult => ({
  ok: false,
  error: { kind: 'rejected', code: 'DurableExecutionAlreadyStartedException', message: 'already started', status: 409 },
});

function start(durable: 'sync' | 'async', invoker: FakeInvoker, more: Partial<DispatcherOptions> = {}) {
  const source = new FakeSource();
  const metrics = new RecordingMetrics();
  const { logger, lines } = recordingLogger();
  const q = queue('orders');
  const dispatcher = new Dispatcher(dispatcherOptions([q], { durable, ...more }), { source, invoker, metrics, logger });
  // Stopped after the file too, should a test fail before it stops the dispatcher.
  const stop = stopAfterTests();
  const running = dispatcher.run(stop.signal);
  return { q, source, metrics, lines, stop, running };
}

describe('Dispatcher on a durable route', () => {
  it('async: each message is one Event invoke under its execution name, deleted once Lambda accepted the start', async () => {
    const invoker = new FakeInvoker(accepted);
    const { q, source, stop, running } = start('async', invoker);
    const messages = [message(), message(), message()];
    source.push('orders', ...messages);
    await until(() => source.deleted.length === 3, 5000, 'deletes');
    stop.abort();
    await running;
    assert.deepEqual(
      invoker.payloads.map((p) => p.Records.map((r) => r.messageId)),
      messages.map((m) => [m.MessageId]),
    );
    assert.deepEqual(
      invoker.params,
      messages.map((m) => ({ durableExecutionName: durableExecutionName(q.arn, m.MessageId!), async: true })),
    );
    // The event is the durable one: no receipt handle, no receive count.
    const record = invoker.payloads[0]!.Records[0]! as unknown as { receiptHandle: string; attributes: Record<string, string> };
    assert.equal(record.receiptHandle, '');
    assert.equal(record.attributes['ApproximateReceiveCount'], undefined);
  });

  it('a durable tenant-isolated route: each invocation carries its execution name and its tenant', async () => {
    const invoker = new FakeInvoker(accepted);
    const { q, source, stop, running } = start('async', invoker, { tenantIdFrom: { kind: 'group' } });
    const a = message({ Attributes: { MessageGroupId: 'acme' } });
    const b = message({ Attributes: { MessageGroupId: 'globex' } });
    source.push('orders', a, b);
    await until(() => source.deleted.length === 2, 5000, 'deletes');
    stop.abort();
    await running;
    assert.deepEqual(invoker.params, [
      { durableExecutionName: durableExecutionName(q.arn, a.MessageId!), async: true, tenantId: 'acme' },
      { durableExecutionName: durableExecutionName(q.arn, b.MessageId!), async: true, tenantId: 'globex' },
    ]);
  });

  it('async: DurableExecutionAlreadyStartedException counts as started, and the message is deleted', async () => {
    const invoker = new FakeInvoker(alreadyStarted);
    const { source, metrics, lines, stop, running } = start('async', invoker);
    const m = message();
    source.push('orders', m);
    await until(() => source.deleted.length === 1, 5000, 'the delete');
    stop.abort();
    await running;
    assert.equal(invoker.payloads.length, 1, 'not invoked again');
    assert.equal(metrics.sum(SQS_METRICS.failedInvoke.cloudwatch), 0);
    assert.ok(lines.some((l) => l.msg === 'durable execution already started under this name; counted as started'));
  });

  it('sync: DurableExecutionAlreadyStartedException is a failed Invoke; the message stays for its redrive policy', async () => {
    const invoker = new FakeInvoker(alreadyStarted);
    const { source, metrics, stop, running } = start('sync', invoker);
    const m = message();
    source.push('orders', m);
    await until(() => metrics.sum(SQS_METRICS.failedInvoke.cloudwatch) === 1, 5000, 'the failure');
    stop.abort();
    await running;
    assert.equal(invoker.payloads.length, 1);
    assert.deepEqual(invoker.params, [{ durableExecutionName: durableExecutionName(queue('orders').arn, m.MessageId!), async: false }]);
    assert.equal(source.deleted.length, 0);
    assert.ok(source.inflight.has(m.ReceiptHandle!), 'the message stays in flight until its visibility timeout');
  });

  it('async: an event over 1 MB is not sent; counted, logged with its id and size, left on the queue', async () => {
    const invoker = new FakeInvoker(accepted);
    const { source, metrics, lines, stop, running } = start('async', invoker);
    const big = message({ Body: 'x'.repeat(1024 * 1024) });
    const small = message();
    source.push('orders', big, small);
    await until(() => source.deleted.length === 1, 5000, 'the small one deleted');
    stop.abort();
    await running;
    assert.deepEqual(
      invoker.payloads.map((p) => p.Records[0]!.messageId),
      [small.MessageId],
    );
    assert.equal(metrics.sum(SQS_METRICS.oversized.cloudwatch), 1);
    const line = lines.find(
      (l) => l.msg === "event over the invocation's payload limit; not invoked, the message stays for the queue's redrive policy",
    );
    assert.ok(line, 'the log line');
    assert.equal(line['messageId'], big.MessageId);
    assert.equal(line['limitBytes'], 1_048_576);
    assert.ok((line['bytes'] as number) > 1_048_576);
    assert.ok(source.inflight.has(big.ReceiptHandle!), 'not deleted: it returns after its visibility timeout');
  });
});
