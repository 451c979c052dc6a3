import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { FakeInvoker, message, ok, queue, until, startUnjittered, queueOptionsByName } from '../../../support/factories.ts';

const setup = startUnjittered;
const opts = queueOptionsByName;

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
