// Filters and deleting what they drop (src/receive/batch-filter.ts), through the Dispatcher with the in-memory fakes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { QueueOptions } from '../../../src/config/delivery-options.ts';
import type { DispatcherOptions } from '../../../src/dispatch/dispatcher.ts';
import { compileFilter } from '../../../src/receive/event-filter.ts';
import { SQS_METRICS } from '../../../src/operator/metrics/names.ts';
import type { ResolvedQueue } from '../../../src/aws/sqs-source.ts';
import { FakeInvoker, FakeSource, message, queue, until, startDispatcher } from '../../support/factories.ts';

const setup = (
  queues: ResolvedQueue[],
  options: Partial<DispatcherOptions>,
  invoker: FakeInvoker,
  preload: (source: FakeSource) => void = () => {},
) => startDispatcher(queues, options, invoker, preload, () => 0);

const opts = (entries: Record<string, Partial<QueueOptions>>): ReadonlyMap<string, QueueOptions> =>
  new Map(Object.entries(entries).map(([k, v]) => [k, { filterAction: 'delete', ...v }]));

const filterOf = (...patterns: unknown[]) => compileFilter(patterns).filter!;
describe('Dispatcher: filters', () => {
  const filter = filterOf({ body: { kind: ['order'] } });

  it('action delete: non-matching messages are deleted unseen and counted as filtered out', async () => {
    const match = message({ Body: '{"kind":"order"}' });
    const other = message({ Body: '{"kind":"refund"}' });
    const plain = message({ Body: 'plain text' });
    const invoker = new FakeInvoker();
    const { source, metrics, stop, running } = setup([queue('q')], { batchSize: 10, queueOptions: opts({ q: { filter } }) }, invoker, (s) =>
      s.push('q', match, other, plain),
    );
    await until(() => source.deleted.length === 3);
    stop.abort();
    await running;
    assert.deepEqual(
      invoker.payloads.flatMap((p) => p.Records.map((r) => r.messageId)),
      [match.MessageId],
    );
    assert.equal(metrics.sum(SQS_METRICS.filtered.cloudwatch, 'q'), 2);
    assert.equal(
      metrics.sum(SQS_METRICS.deleted.cloudwatch, 'q'),
      1,
      'DeletedEventCount counts processed messages only, as on the trigger',
    );
  });

  it('action leave: non-matching messages are neither invoked nor deleted', async () => {
    const match = message({ Body: '{"kind":"order"}' });
    const other = message({ Body: '{"kind":"refund"}' });
    const invoker = new FakeInvoker();
    const { source, metrics, stop, running } = setup(
      [queue('q')],
      { batchSize: 10, queueOptions: opts({ q: { filter, filterAction: 'leave' } }) },
      invoker,
      (s) => s.push('q', match, other),
    );
    await until(() => source.deleted.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(
      invoker.payloads.flatMap((p) => p.Records.map((r) => r.messageId)),
      [match.MessageId],
    );
    assert.ok(source.inflight.has(other.ReceiptHandle!), 'left: it returns after its visibility timeout');
    assert.equal(metrics.sum(SQS_METRICS.filtered.cloudwatch, 'q'), 1);
  });

  it('a batch that is filtered out entirely is not invoked', async () => {
    const invoker = new FakeInvoker();
    const { source, stop, running } = setup([queue('q')], { batchSize: 10, queueOptions: opts({ q: { filter } }) }, invoker, (s) =>
      s.push('q', message({ Body: 'x' }), message({ Body: 'y' })),
    );
    await until(() => source.deleted.length === 2);
    stop.abort();
    await running;
    assert.equal(invoker.payloads.length, 0);
  });

  it("FIFO with leave: later messages of a left message's group stay too, other groups are invoked", async () => {
    const q = queue('q.fifo');
    const m = (body: string, group: string) => message({ Body: body, Attributes: { MessageGroupId: group } });
    const msgs = [m('{"kind":"refund"}', 'a'), m('{"kind":"order"}', 'a'), m('{"kind":"order"}', 'b')];
    const invoker = new FakeInvoker();
    const { source, stop, running } = setup(
      [q],
      { batchSize: 10, queueOptions: opts({ 'q.fifo': { filter, filterAction: 'leave' } }) },
      invoker,
      (s) => s.push('q.fifo', ...msgs),
    );
    await until(() => source.deleted.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(
      invoker.payloads.flatMap((p) => p.Records.map((r) => r.messageId)),
      [msgs[2]!.MessageId],
    );
  });
});
