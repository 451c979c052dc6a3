// Filters and deleting what they drop (src/dispatch/batch-filter.ts), through the Dispatcher with the in-memory fakes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileFilter } from '../../../src/receive/event-filter.ts';
import { SQS_METRICS } from '../../../src/core/telemetry/metric-names.ts';
import { filterBatch, type FilterDeps } from '../../../src/dispatch/batch-filter.ts';
import type { Message } from '@aws-sdk/client-sqs';
import type { QueueOptions } from '../../../src/dispatch/queue-options.ts';
import { FakeInvoker, message, queue, silentLogger, until, startUnjittered, queueOptionsByName } from '../../support/factories.ts';

const setup = startUnjittered;
const opts = queueOptionsByName;

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

/** filterBatch alone, with recording fakes for the lease, the deletes and the metrics. */
function filtering(options: QueueOptions | undefined) {
  const deleted: string[] = [];
  const stopped: string[] = [];
  const marks: string[] = [];
  let filteredCount = 0;
  const deps: FilterDeps = {
    options,
    log: silentLogger,
    metrics: { filtered: (_q, n) => void (filteredCount += n) },
    tracer: { settle: (_q, _op, _m, run) => run() },
    deleter: {
      delete: (_q, entries) => {
        deleted.push(...entries.map((e) => e.id));
        return Promise.resolve({ done: entries.length, failed: [] });
      },
    },
    mark: (activity) => marks.push(activity),
  };
  const lease = {
    stop: (messages: readonly Message[]) => {
      stopped.push(...messages.map((m) => m.MessageId ?? ''));
      return Promise.resolve();
    },
    expiresAt: () => 0,
  };
  return { deps, lease, deleted, stopped, marks, filtered: () => filteredCount };
}

describe('filterBatch', () => {
  const body = (kind: string) => ({ Body: JSON.stringify({ kind }) });

  it('without a filter: every message is invoked, nothing is deleted or leaves the lease', async () => {
    const f = filtering(undefined);
    const messages = [message(), message()];
    assert.deepEqual(await filterBatch({ queue: queue('q'), messages, lease: f.lease }, f.deps), messages);
    assert.deepEqual([f.deleted, f.stopped, f.filtered()], [[], [], 0]);
  });

  it('action delete: returns the matches; the others are counted, deleted (a delete activity) and leave the lease', async () => {
    const f = filtering({ filterAction: 'delete', filter: filterOf({ body: { kind: ['a'] } }) });
    const [a, b, c] = [message(body('a')), message(body('b')), message(body('a'))];
    const matched = await filterBatch({ queue: queue('q'), messages: [a, b, c], lease: f.lease }, f.deps);
    assert.deepEqual(matched, [a, c]);
    assert.deepEqual(f.deleted, [b.MessageId]);
    assert.deepEqual(f.stopped, [b.MessageId]);
    assert.equal(f.filtered(), 1);
    assert.deepEqual(f.marks, ['delete']);
  });

  it("action leave on FIFO: a left message's later group members stay behind it, unseen and not deleted", async () => {
    const f = filtering({ filterAction: 'leave', filter: filterOf({ body: { kind: ['a'] } }) });
    const g = (group: string, kind: string) =>
      message({ ...body(kind), Attributes: { MessageGroupId: group, ApproximateReceiveCount: '1' } });
    const [g1left, g1later, g2] = [g('1', 'b'), g('1', 'a'), g('2', 'a')];
    const matched = await filterBatch({ queue: queue('q.fifo'), messages: [g1left, g1later, g2], lease: f.lease }, f.deps);
    assert.deepEqual(matched, [g2]);
    assert.deepEqual(f.deleted, []);
    assert.deepEqual(f.stopped, [g1left.MessageId, g1later.MessageId]);
    assert.equal(f.filtered(), 1, 'only the message that matched no pattern counts as filtered out');
  });
});
