import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { Dispatcher } from '../../../../src/dispatch/dispatcher.ts';
import { SQS_METRICS } from '../../../../src/core/telemetry/metric-names.ts';
import {
  FakeInvoker,
  FakeSource,
  RecordingMetrics,
  dispatcherOptions,
  message,
  ok,
  queue,
  recordingLogger,
  startDispatcher,
  stopAfterTests,
  until,
} from '../../../support/factories.ts';

/** A message of message group `group` (a fair queue's tenant key, or a FIFO group); `tenant` sets the `tenant` attribute. */
function msg(id: string, group: string | undefined, tenant?: string): Message {
  return message({
    MessageId: id,
    Attributes: { ApproximateReceiveCount: '1', ...(group !== undefined ? { MessageGroupId: group } : {}) },
    ...(tenant !== undefined ? { MessageAttributes: { tenant: { DataType: 'String', StringValue: tenant } } } : {}),
  });
}

/** Each invocation as `tenant: ids`, with the tenant the call carried. */
function calls(invoker: FakeInvoker): string[] {
  return invoker.payloads.map((p, i) => `${invoker.params[i]?.tenantId ?? '-'}: ${p.Records.map((r) => r.messageId).join(' ')}`);
}

describe('Dispatcher with --tenant-id-from', () => {
  it('a mixed batch of a fair queue is one invocation per tenant, each carrying its tenant id; all are deleted', async () => {
    const batch = [msg('1', 'a'), msg('2', 'b'), msg('3', 'a'), msg('4', 'c'), msg('5', 'b')];
    const { source, invoker, stop, running } = startDispatcher(
      [queue('q')],
      { batchSize: 10, tenantIdFrom: { kind: 'group' } },
      undefined,
      (s) => s.push('q', ...batch),
    );
    await until(() => source.deleted.length === 5, 5000, 'deletes');
    stop.abort();
    await running;
    assert.deepEqual(calls(invoker), ['a: 1 3', 'b: 2 5', 'c: 4']);
  });

  it('without the option a batch is one invocation and carries no tenant (the function is not tenant-isolated)', async () => {
    const { source, invoker, stop, running } = startDispatcher([queue('q')], { batchSize: 10 }, undefined, (s) =>
      s.push('q', msg('1', 'a'), msg('2', 'b')),
    );
    await until(() => source.deleted.length === 2, 5000, 'deletes');
    stop.abort();
    await running;
    assert.deepEqual(calls(invoker), ['-: 1 2']);
    assert.deepEqual(invoker.params, [undefined]);
  });

  it('a message without a tenant id is counted, logged with its id and the option, not invoked and not deleted', async () => {
    const source = new FakeSource();
    source.push('q', msg('1', 'a', 't1'), msg('2', 'a'), msg('3', 'a', 'tenant-é'), msg('4', 'a', 't2'));
    const invoker = new FakeInvoker();
    const metrics = new RecordingMetrics();
    const { logger, lines } = recordingLogger();
    const options = dispatcherOptions([queue('q')], { batchSize: 10, tenantIdFrom: { kind: 'attribute', name: 'tenant' } });
    const stop = stopAfterTests();
    const running = new Dispatcher(options, { source, invoker, metrics, logger }).run(stop.signal);
    await until(() => source.deleted.length === 2, 5000, 'deletes');
    stop.abort();
    await running;
    assert.deepEqual(calls(invoker), ['t1: 1', 't2: 4']);
    assert.deepEqual(source.deleted.map((d) => d.id).sort(), ['1', '4']);
    assert.deepEqual([...source.inflight.values()].map((m) => m.MessageId).sort(), ['2', '3'], 'left on the queue for its redrive');
    assert.equal(metrics.sum(SQS_METRICS.untenanted.cloudwatch, 'q'), 2);
    const line = lines.find((l) => l.msg === 'no tenant id for a tenant-isolated function; messages stay on the queue for its redrive');
    assert.ok(line);
    assert.equal(line.level, 50);
    assert.deepEqual(
      { messageIds: line['messageIds'], reasons: line['reasons'], option: line['option'], tenantIdFrom: line['tenantIdFrom'] },
      { messageIds: ['2', '3'], reasons: ['missing', 'not a header value'], option: '--tenant-id-from', tenantIdFrom: 'attribute:tenant' },
    );
  });

  it('FIFO: each group keeps its order across the split, and a failure stops the rest of its group', async () => {
    // Tenants by attribute; group g changes tenant in the middle, so it is cut there.
    const batch = [msg('1', 'g', 't1'), msg('2', 'h', 't2'), msg('3', 'g', 't2'), msg('4', 'g', 't1'), msg('5', 'h', 't2')];
    const invoker = new FakeInvoker((payload) =>
      payload.includes('"messageId":"3"') ? ok({ batchItemFailures: [{ itemIdentifier: '3' }] }) : ok(),
    );
    const { source, stop, running } = startDispatcher(
      [queue('q.fifo')],
      { batchSize: 10, tenantIdFrom: { kind: 'attribute', name: 'tenant' } },
      invoker,
      (s) => s.push('q.fifo', ...batch),
    );
    await until(() => invoker.payloads.length === 2, 5000, 'two invocations');
    // Settling ends the batch: wait for it before stopping, so nothing is released by the stop.
    await until(() => source.deleted.length === 2, 5000, 'the deletes of both runs');
    stop.abort();
    await running;
    // t1 takes 1; 4 must not join it (3 of its group is in the later t2 run), so it would start a third run.
    assert.deepEqual(calls(invoker), ['t1: 1', 't2: 2 3 5']);
    // 3 failed: it and everything after it in its run stay (the FIFO rule: 5), and the run after it (4, behind 3
    // in group g) is not invoked.
    assert.deepEqual(
      source.deleted.map((d) => d.id),
      ['1', '2'],
    );
    assert.deepEqual([...source.inflight.values()].map((m) => m.MessageId).sort(), ['3', '4', '5']);
  });
});
