import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventLoopLag, checkLiveness } from '../../../../src/operator/health.ts';
import { startHttpServer } from '../../../../src/operator/http/server.ts';
import { DispatchMetrics } from '../../../../src/core/telemetry/dispatch-metrics.ts';
import { fanOut } from '../../../../src/core/telemetry/metrics-sink.ts';
import { ALL_METRICS } from '../../../../src/core/telemetry/metric-names.ts';
import { PrometheusMetrics } from '../../../../src/operator/metrics/prometheus.ts';
import { RecordingMetrics, silentLogger, dispatcherOptions } from '../../../support/factories.ts';

/** The value of one sample line of a Prometheus exposition, e.g. sample(text, 'x_total{queue="q"}'). */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metric names', () => {
  it('follow Prometheus naming: workerless_ prefix, _total on counters only, _seconds on histograms', () => {
    for (const def of ALL_METRICS) {
      assert.match(def.prometheus, /^workerless_[a-z_]+$/, def.prometheus);
      assert.equal(def.prometheus.endsWith('_total'), def.kind === 'counter', def.prometheus);
      if (def.kind === 'histogram') assert.ok(def.prometheus.endsWith('_seconds') && def.unit === 'Milliseconds', def.prometheus);
    }
    assert.equal(new Set(ALL_METRICS.map((d) => d.cloudwatch)).size, ALL_METRICS.length, 'CloudWatch names are unique');
  });
});

describe('DispatchMetrics into Prometheus and CloudWatch', () => {
  it('records the same event counts in both sinks, with function and queue labels', async () => {
    const prom = new PrometheusMetrics();
    const cw = new RecordingMetrics();
    const m = new DispatchMetrics(fanOut([prom, cw]), 'fn', 4);
    m.polled('q', 3);
    m.invoked('q', 3, 250);
    m.throttled('q', 'ReservedFunctionConcurrentInvocationLimitExceeded');
    m.deleted('q', 2);
    m.failedInvoke('q', 1);
    m.settled('q', 3, 1500);
    const { body, contentType } = await prom.exposition();
    assert.match(contentType, /text\/plain/);
    const l = '{function="fn",queue="q"}';
    assert.equal(sample(body, `workerless_polled_events_total${l}`), 3);
    assert.equal(sample(body, `workerless_invoked_events_total${l}`), 3);
    assert.equal(sample(body, `workerless_deleted_events_total${l}`), 2);
    assert.equal(sample(body, `workerless_failed_invoke_events_total${l}`), 1);
    assert.equal(
      sample(
        body,
        'workerless_throttled_invocations_total{function="fn",queue="q",reason="ReservedFunctionConcurrentInvocationLimitExceeded"}',
      ),
      1,
    );
    assert.equal(sample(body, `workerless_in_flight_messages${l}`), 0);
    assert.equal(sample(body, `workerless_invocation_duration_seconds_sum${l}`), 0.25);
    assert.equal(sample(body, `workerless_receive_to_settle_seconds_count${l}`), 3);
    assert.equal(sample(body, 'workerless_concurrency_limit{function="fn"}'), 4);
    assert.equal(sample(body, 'workerless_concurrency_in_use{function="fn"}'), 0);
    assert.ok(body.includes('workerless_process_cpu_user_seconds_total'), 'default process metrics');
    assert.equal(cw.sum('PolledEventCount', 'q'), 3);
    assert.equal(cw.sum('DeletedEventCount', 'q'), 2);
    assert.ok(cw.data.every((d) => d.dimensions['Function'] === 'fn'));
  });

  it('keeps registries apart: two sinks in one process do not share counts', async () => {
    const a = new PrometheusMetrics();
    const b = new PrometheusMetrics();
    new DispatchMetrics(a, 'fn', 1).polled('q', 5);
    assert.equal(sample((await b.exposition()).body, 'workerless_polled_events_total{function="fn",queue="q"}'), undefined);
  });
});

describe('liveness', () => {
  it('fails on a blocked event loop and on a loop past its step deadline', () => {
    const loops = [undefined, { activity: 'invoke', since: 0, deadlineAt: 1_000 }];
    assert.deepEqual(checkLiveness({ lagMs: 10, maxLagMs: 5_000, loops, now: 500, graceMs: 0 }), { ok: true, reasons: [] });
    const stuck = checkLiveness({ lagMs: 10, maxLagMs: 5_000, loops, now: 2_000, graceMs: 0 });
    assert.equal(stuck.ok, false);
    assert.match(stuck.reasons[0]!, /worker loop 1 stuck in invoke/);
    const blocked = checkLiveness({ lagMs: 6_000, maxLagMs: 5_000, loops: [], now: 0, graceMs: 0 });
    assert.match(blocked.reasons[0]!, /event loop blocked for 6000 ms/);
  });

  it('EventLoopLag sees a real block of the event loop', async () => {
    const lag = new EventLoopLag(20);
    lag.start();
    try {
      const until = Date.now() + 300;
      while (Date.now() < until) {
        // block the event loop
      }
      await new Promise((r) => setTimeout(r, 50));
      assert.ok(lag.lagMs() >= 200, `lag ${lag.lagMs()}`);
    } finally {
      lag.stop();
    }
  });
});

describe('HTTP server', () => {
  it('serves the probes (200/503 with reasons), metrics, status JSON and page; 404 and 405 otherwise', async () => {
    let ready = false;
    const server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      logger: silentLogger,
      maxConnections: 8,
      routes: {
        liveness: () => ({ ok: true, reasons: [] }),
        readiness: () => ({ ok: ready, reasons: ready ? [] : ['starting'] }),
        metrics: async () => ({ contentType: 'text/plain; version=0.0.4', body: 'x 1\n' }),
        status: () => ({ state: 'running' }),
        statusPage: '<html>page</html>',
      },
    });
    try {
      const get = async (path: string, init?: RequestInit) => {
        const res = await fetch(`${server.url}${path}`, init);
        return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
      };
      assert.deepEqual(await get('/healthz'), { status: 200, body: 'ok\n', type: 'text/plain; charset=utf-8' });
      assert.deepEqual((await get('/readyz')).status, 503);
      assert.equal((await get('/readyz')).body, 'starting\n');
      ready = true;
      assert.equal((await get('/readyz')).status, 200);
      assert.equal((await get('/metrics')).body, 'x 1\n');
      assert.deepEqual(JSON.parse((await get('/status.json')).body), { state: 'running' });
      assert.equal((await get('/')).body, '<html>page</html>');
      assert.equal((await get('/nope')).status, 404);
      assert.equal((await get('/healthz', { method: 'POST' })).status, 405);
    } finally {
      await server.close();
    }
  });
});

describe('liveness of the dispatcher', () => {
  it('reports a loop stuck in an Invoke that never settles, once the step deadline (16 min) and its grace are past', async () => {
    const { Dispatcher } = await import('../../../../src/dispatch/dispatcher.ts');
    const { FakeInvoker, FakeSource, message, queue } = await import('../../../support/factories.ts');
    let now = 1_000_000;
    const source = new FakeSource();
    source.push('q', message());
    const invoker = new FakeInvoker(() => new Promise(() => {}));
    const dispatcher = new Dispatcher(dispatcherOptions([queue('q', { visibilityTimeoutSec: 0 })], { pollForSec: 0 }), {
      source,
      invoker,
      metrics: new RecordingMetrics(),
      logger: silentLogger,
      now: () => now,
    });
    void dispatcher.run(new AbortController().signal);
    const deadline = Date.now() + 2_000;
    while (invoker.active === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const probe = () => checkLiveness({ lagMs: 0, maxLagMs: 10_000, loops: dispatcher.status().loops, now, graceMs: 0 });
    assert.equal(probe().ok, true, 'invoking, within the deadline');
    now += 16 * 60_000;
    assert.equal(probe().ok, true, 'at the Invoke deadline, inside the grace');
    now += 11_000;
    assert.deepEqual(probe(), { ok: false, reasons: ['worker loop 0 stuck in invoke for 971 s, past its deadline'] });
  });
});
