// Issue 10, routes: two functions in one daemon, each with its own pool and limits, behind one HTTP server and one
// metrics registry with a `function` label. Runs the built CLI against LocalStack and the test Lambda endpoint.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { StatusSnapshot } from '../../src/operator/status/snapshot.ts';
import { countMessages, createQueue, sendMessages } from '../support/aws.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { freePort, get, sample } from '../support/http.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { runsByMessage, sqsRecords } from '../support/message-runs.ts';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/functions/${name}`, import.meta.url));

describe('routes: several functions in one daemon (issue 10)', { timeout: 120_000 }, () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({
      functions: {
        'route-orders': { handler: fixture('slow.mjs'), env: { SLOW_MS: '300' } },
        'route-reports': { handler: fixture('slow.mjs'), env: { SLOW_MS: '300' } },
      },
    });
  });
  after(() => endpoint.stop());

  it('each route invokes its own function with its own queues, concurrency and batch size; one /metrics with a function label', async (t) => {
    const orders = await createQueue('wl-route-orders');
    const refunds = await createQueue('wl-route-refunds');
    const reports = await createQueue('wl-route-reports');
    const sent = {
      orders: await sendMessages(
        orders.url,
        Array.from({ length: 30 }, (_, i) => `order-${i}`),
      ),
      refunds: await sendMessages(
        refunds.url,
        Array.from({ length: 10 }, (_, i) => `refund-${i}`),
      ),
      reports: await sendMessages(
        reports.url,
        Array.from({ length: 30 }, (_, i) => `report-${i}`),
      ),
    };
    const config = join(mkdtempSync(join(tmpdir(), 'wl-routes-')), 'workerless.yaml');
    writeFileSync(
      config,
      [
        'routes:',
        '  - function: route-orders',
        `    queues: ${orders.name},${refunds.name}`,
        '    concurrency: 4',
        '    queue-options:',
        `      ${refunds.name}: { max-concurrency: 1 }`,
        '  - function: route-reports',
        `    queues: ${reports.name}`,
        '    concurrency: 1',
        '    batch-size: 5',
        '',
      ].join('\n'),
    );
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const daemon = startDaemon(endpoint.url, ['--config', config, '--http-port', String(port)]);
    await started(daemon);
    const summary = daemon.logs().find((l) => l['msg'] === 'workerless started')!;
    assert.deepEqual(
      (summary['routes'] as { function: string; concurrency: number }[]).map((r) => [r.function, r.concurrency]),
      [
        ['route-orders', 4],
        ['route-reports', 1],
      ],
    );

    await until(
      async () => (await Promise.all([orders, refunds, reports].map((q) => countMessages(q.url)))).every((n) => n === 0),
      60_000,
      'every queue drained',
      200,
    );
    const idle = () => endpoint.invocations.every((i) => i.endedAt !== undefined);
    await until(idle, 10_000, 'invocations over', 50);
    // One registry for both pools: the same metric, told apart by the function label.
    const metrics = (await get(base, '/metrics'))!.body;
    const status = JSON.parse((await get(base, '/status.json'))!.body) as StatusSnapshot;
    assert.equal((await get(base, '/readyz'))?.status, 200);
    assert.equal(await stopDaemon(daemon), 0);

    // Each function got exactly its own queues' messages, each once.
    for (const [fn, queues] of [
      ['route-orders', [orders, refunds]],
      ['route-reports', [reports]],
    ] as const) {
      const arns = new Set(
        endpoint.invocations
          .filter((i) => i.functionName === fn)
          .flatMap(sqsRecords)
          .map((r) => r.eventSourceARN),
      );
      assert.deepEqual([...arns].sort(), queues.map((q) => q.arn).sort(), `${fn} got only its own queues`);
    }
    for (const [name, q] of [
      ['orders', orders],
      ['refunds', refunds],
      ['reports', reports],
    ] as const) {
      const runs = runsByMessage(endpoint, q.arn);
      assert.deepEqual([...runs.keys()].sort(), [...sent[name]].sort(), `every ${name} message invoked`);
      assert.ok(
        [...runs.values()].every((r) => r.length === 1),
        `each ${name} message once`,
      );
    }

    // Separate limits: 4 loops for orders (refunds at most 1), 1 loop of batches of up to 5 for reports.
    const ordersPeak = endpoint.peakConcurrency('route-orders');
    const reportsPeak = endpoint.peakConcurrency('route-reports');
    const reportBatches = endpoint.invocations.filter((i) => i.functionName === 'route-reports').map((i) => sqsRecords(i).length);
    const ordersBatches = endpoint.invocations.filter((i) => i.functionName === 'route-orders').map((i) => sqsRecords(i).length);
    t.diagnostic(`peak in flight: route-orders ${ordersPeak} (limit 4), route-reports ${reportsPeak} (limit 1)`);
    t.diagnostic(`route-reports batch sizes ${reportBatches.join(',')}`);
    assert.ok(ordersPeak <= 4 && ordersPeak >= 3, `route-orders peak ${ordersPeak}`);
    assert.equal(reportsPeak, 1);
    assert.ok(
      ordersBatches.every((n) => n === 1),
      'route-orders keeps the default batch size of 1',
    );
    assert.ok(
      reportBatches.every((n) => n <= 5) && reportBatches.some((n) => n > 1),
      `route-reports batches of up to 5: ${reportBatches.join(',')}`,
    );

    for (const [fn, q, count] of [
      ['route-orders', orders, 30],
      ['route-orders', refunds, 10],
      ['route-reports', reports, 30],
    ] as const) {
      assert.equal(sample(metrics, 'workerless_deleted_events_total', { function: fn, queue: q.name }), count, `${fn} ${q.name}`);
    }
    assert.equal(sample(metrics, 'workerless_concurrency_limit', { function: 'route-orders' }), 4);
    assert.equal(sample(metrics, 'workerless_concurrency_limit', { function: 'route-reports' }), 1);
    assert.deepEqual(status.functions, ['route-orders', 'route-reports']);
    assert.deepEqual(status.queues.map((q) => q.name).sort(), [orders.name, refunds.name, reports.name].sort());
  });
});
