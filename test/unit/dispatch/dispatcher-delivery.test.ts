import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, it } from 'node:test';
import type { QueueOptions } from '../../../src/config/delivery-options.ts';
import type { DispatcherOptions } from '../../../src/dispatch/dispatcher.ts';
import { compileFilter } from '../../../src/receive/event-filter.ts';
import { SQS_METRICS } from '../../../src/operator/metrics/names.ts';
import type { ResolvedQueue } from '../../../src/aws/sqs-source.ts';
import { FakeInvoker, FakeSource, functionError, message, ok, queue, until, startDispatcher } from '../../support/factories.ts';

const setup = (
  queues: ResolvedQueue[],
  options: Partial<DispatcherOptions>,
  invoker: FakeInvoker,
  preload: (source: FakeSource) => void = () => {},
) => startDispatcher(queues, options, invoker, preload, () => 0);

const opts = (entries: Record<string, Partial<QueueOptions>>): ReadonlyMap<string, QueueOptions> =>
  new Map(Object.entries(entries).map(([k, v]) => [k, { filterAction: 'delete', ...v }]));

const filterOf = (...patterns: unknown[]) => compileFilter(patterns).filter!;
const counted = (n: number) => ({ Attributes: { ApproximateReceiveCount: String(n), SentTimestamp: '1' } });

/** Counts invocations in flight per queue (by the records' eventSourceARN) and keeps each queue's peak. */
function perQueueInvoker(durationMs: number) {
  const active = new Map<string, number>();
  const peak = new Map<string, number>();
  const starts: { queue: string; at: number }[] = [];
  const invoker = new FakeInvoker(async (payload) => {
    const arn = (JSON.parse(payload) as { Records: { eventSourceARN: string }[] }).Records[0]!.eventSourceARN;
    const q = arn.split(':').pop()!;
    starts.push({ queue: q, at: Date.now() });
    active.set(q, (active.get(q) ?? 0) + 1);
    peak.set(q, Math.max(peak.get(q) ?? 0, active.get(q)!));
    await delay(durationMs);
    active.set(q, active.get(q)! - 1);
    return ok();
  });
  return { invoker, active, peak, starts };
}

describe('Dispatcher: retry back-off', () => {
  const policy = { baseSec: 2, maxSec: 60, jitter: 0 };

  it('off by default: a failed message keeps its visibility timeout (no visibility change)', async () => {
    const { source, stop, running } = setup([queue('q')], {}, new FakeInvoker(() => functionError()), (s) =>
      s.push('q', message(counted(3))),
    );
    await until(() => source.receives.length >= 2);
    stop.abort();
    await running;
    assert.deepEqual(source.visibilityChanges, []);
  });

  it('a function error sets the visibility of the batch from its receive counts', async () => {
    const a = message(counted(1));
    const b = message(counted(4));
    const { source, stop, running } = setup(
      [queue('q')],
      { retryBackoff: policy, batchSize: 10 },
      new FakeInvoker(() => functionError()),
      (s) => s.push('q', a, b),
    );
    await until(() => source.visibilityChanges.length === 2);
    stop.abort();
    await running;
    assert.deepEqual(
      source.visibilityChanges.map((c) => [c.ids, c.timeoutSec]),
      [
        [[a.MessageId], 2],
        [[b.MessageId], 16],
      ],
    );
  });

  it("per queue: a queue's own policy, none where it is off, --retry-backoff's for the others", async () => {
    const invoker = new FakeInvoker(() => functionError());
    const { source, stop, running } = setup(
      [queue('own'), queue('off'), queue('plain')],
      {
        retryBackoff: policy,
        queueOptions: opts({ own: { retryBackoff: { baseSec: 5, maxSec: 60, jitter: 0 } }, off: { retryBackoff: 'off' } }),
      },
      invoker,
      (s) => {
        s.push('own', message(counted(2)));
        s.push('off', message(counted(2)));
        s.push('plain', message(counted(2)));
      },
    );
    await until(() => invoker.payloads.length >= 3 && source.visibilityChanges.length >= 2);
    stop.abort();
    await running;
    // Receive count 2: twice the first delay. Each queue's message was invoked once (none came back yet).
    assert.equal(invoker.payloads.length, 3);
    assert.deepEqual(source.visibilityChanges.map((c) => [c.queue, c.timeoutSec]).sort(), [
      ['own', 10],
      ['plain', 4],
    ]);
  });

  it('batchItemFailures: only the listed messages back off; the others are deleted', async () => {
    const msgs = [message(counted(2)), message(counted(2)), message(counted(2))];
    const invoker = new FakeInvoker(() => ok({ batchItemFailures: [{ itemIdentifier: msgs[1]!.MessageId }] }));
    const { source, stop, running } = setup([queue('q')], { retryBackoff: policy, batchSize: 10 }, invoker, (s) => s.push('q', ...msgs));
    await until(() => source.deleted.length === 2 && source.visibilityChanges.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(source.visibilityChanges[0], { queue: 'q', ids: [msgs[1]!.MessageId], timeoutSec: 4 });
  });

  it('an invalid response backs off the whole batch', async () => {
    const msgs = [message(counted(1)), message(counted(1))];
    const invoker = new FakeInvoker(() => ok({ batchItemFailures: [{ itemIdentifier: 'not-in-batch' }] }));
    const { source, stop, running } = setup([queue('q')], { retryBackoff: policy, batchSize: 10 }, invoker, (s) => s.push('q', ...msgs));
    await until(() => source.visibilityChanges.length === 1);
    stop.abort();
    await running;
    assert.deepEqual(source.visibilityChanges[0]!.ids.sort(), msgs.map((m) => m.MessageId).sort());
    assert.equal(source.deleted.length, 0);
  });

  it("FIFO: the failed message and every later one of its group get one delay, from the group's highest count", async () => {
    const q = queue('q.fifo');
    const g = (n: number, group: string) => message({ Attributes: { ApproximateReceiveCount: String(n), MessageGroupId: group } });
    const msgs = [g(1, 'a'), g(3, 'a'), g(1, 'b'), g(1, 'a')];
    // The second message fails: FIFO keeps it and everything after it.
    const invoker = new FakeInvoker(() => ok({ batchItemFailures: [{ itemIdentifier: msgs[1]!.MessageId }] }));
    const { source, stop, running } = setup([q], { retryBackoff: policy, batchSize: 10 }, invoker, (s) => s.push('q.fifo', ...msgs));
    await until(() => source.visibilityChanges.length === 2);
    stop.abort();
    await running;
    assert.deepEqual(
      source.deleted.map((d) => d.id),
      [msgs[0]!.MessageId],
    );
    assert.deepEqual(
      source.visibilityChanges.map((c) => [c.ids, c.timeoutSec]),
      [
        [[msgs[1]!.MessageId, msgs[3]!.MessageId], 8],
        [[msgs[2]!.MessageId], 2],
      ],
    );
  });
});

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

describe('Dispatcher: per-queue limits', () => {
  it('maxConcurrency: a queue never has more invocations in flight than its cap, the other queue uses the rest', async () => {
    const { invoker, peak } = perQueueInvoker(30);
    const { source, stop, running } = setup(
      [queue('a'), queue('b')],
      { concurrency: 6, queueOptions: opts({ a: { maxConcurrency: 2 } }) },
      invoker,
      (s) => {
        s.push('a', ...Array.from({ length: 20 }, () => message()));
        s.push('b', ...Array.from({ length: 20 }, () => message()));
      },
    );
    await until(() => source.deleted.length === 40, 10_000);
    stop.abort();
    await running;
    assert.equal(peak.get('a'), 2);
    assert.equal(peak.get('b'), 4);
  });

  it('minConcurrency: under strict priority, a full low queue still gets its reserved loops', async () => {
    const { invoker, peak, starts } = perQueueInvoker(30);
    const { source, stop, running } = setup(
      [queue('high'), queue('low')],
      { concurrency: 5, queueOptions: opts({ low: { minConcurrency: 2 } }) },
      invoker,
      (s) => {
        s.push('high', ...Array.from({ length: 40 }, () => message()));
        s.push('low', ...Array.from({ length: 40 }, () => message()));
      },
    );
    await until(() => source.deleted.length >= 30, 10_000);
    stop.abort();
    await running;
    const early = starts.slice(0, 25);
    assert.equal(peak.get('low'), 2, 'low gets its minimum and no more while high has messages');
    const lowShare = early.filter((s) => s.queue === 'low').length / early.length;
    assert.ok(lowShare >= 0.3 && lowShare <= 0.5, `low's share of the first invocations ${lowShare}`);
  });

  it('without a minimum, strict priority serves the low queue only once the high one is empty', async () => {
    const { invoker, starts } = perQueueInvoker(10);
    const { source, stop, running } = setup([queue('high'), queue('low')], { concurrency: 3 }, invoker, (s) => {
      s.push('high', ...Array.from({ length: 15 }, () => message()));
      s.push('low', ...Array.from({ length: 3 }, () => message()));
    });
    await until(() => source.deleted.length === 18, 10_000);
    stop.abort();
    await running;
    assert.deepEqual(new Set(starts.slice(0, 13).map((s) => s.queue)), new Set(['high']));
  });

  it('rate: invocations of a queue follow its token bucket', async () => {
    const { invoker, starts } = perQueueInvoker(1);
    const { source, stop, running } = setup([queue('q')], { concurrency: 4, queueOptions: opts({ q: { ratePerSec: 20 } }) }, invoker, (s) =>
      s.push('q', ...Array.from({ length: 100 }, () => message())),
    );
    await delay(1_000);
    stop.abort();
    await running;
    const n = starts.length;
    // One token at start, then 20 a second: at most 21 (+1 for timer slack) in the first second. The lower bound
    // is loose because the unit suite runs files in parallel; the integration test measures the rate itself.
    assert.ok(n >= 10 && n <= 22, `${n} invocations in 1 s at 20/s`);
    assert.ok(source.deleted.length <= 22);
  });
});
