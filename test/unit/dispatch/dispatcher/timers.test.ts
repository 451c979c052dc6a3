import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { Dispatcher } from '../../../../src/dispatch/dispatcher.ts';
import { FakeInvoker, FakeSource, RecordingMetrics, queue, silentLogger, dispatcherOptions } from '../../../support/factories.ts';

/** Lets pending promise callbacks run (fake timers do not advance them). */
const flush = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

describe('Dispatcher timing with fake timers', () => {
  it('sleeps --sleep seconds after an empty pass, and a stop cuts the sleep short', async () => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    try {
      const source = new FakeSource();
      const dispatcher = new Dispatcher(dispatcherOptions([queue('a'), queue('b')], { pollForSec: 0, sleepSec: 60 }), {
        source,
        invoker: new FakeInvoker(),
        metrics: new RecordingMetrics(),
        logger: silentLogger,
        now: Date.now,
      });
      const stop = new AbortController();
      const running = dispatcher.run(stop.signal);
      await flush();
      assert.deepEqual(
        source.receives.map((r) => r.queue),
        ['a', 'b'],
        'one pass over both queues, no long poll',
      );
      mock.timers.tick(59_999);
      await flush();
      assert.equal(source.receives.length, 2, 'still sleeping');
      mock.timers.tick(1);
      await flush();
      assert.equal(source.receives.length, 4, 'the next pass starts after exactly 60 s');
      stop.abort();
      await running;
    } finally {
      mock.timers.reset();
    }
  });

  it('backs off exponentially with jitter while ReceiveMessage fails, then recovers', async () => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    try {
      const source = new FakeSource();
      let failures = 5;
      source.receiveError = () =>
        failures-- > 0 ? Object.assign(new Error('boom'), { name: 'ServiceUnavailable', $metadata: { httpStatusCode: 503 } }) : undefined;
      const dispatcher = new Dispatcher(
        dispatcherOptions([queue('a')], { pollForSec: 0, sleepSec: 1000 }),
        // random() = 0.999: each back-off is just under its ceiling (100, 200, 400, 800, then the 1 s cap).
        // The mocked Date is this test's clock (the default, performance.now(), is not mocked).
        { source, invoker: new FakeInvoker(), metrics: new RecordingMetrics(), logger: silentLogger, random: () => 0.999, now: Date.now },
      );
      const stop = new AbortController();
      const running = dispatcher.run(stop.signal);
      const receivesAfter = async (ms: number) => {
        mock.timers.tick(ms);
        await flush();
        return source.receives.length;
      };
      await flush();
      assert.equal(source.receives.length, 1);
      for (const [i, ceiling] of [100, 200, 400, 800, 1000].entries()) {
        assert.equal(await receivesAfter(ceiling - 2), i + 1, `retry ${i + 1} not before ~${ceiling} ms`);
        assert.equal(await receivesAfter(1), i + 2, `retry ${i + 1} after ~${ceiling} ms (transient back-off is capped at 1 s)`);
      }
      stop.abort();
      await running;
    } finally {
      mock.timers.reset();
    }
  });
});
