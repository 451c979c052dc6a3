// 1,000 idle queues at --concurrency 10 and the default --poll-for (20 s): the route keeps one long poll in flight per
// queue whatever the number of idle loops, so an idle daemon makes about 3 ReceiveMessage per queue a minute (before:
// loops whose poll came back empty read every queue with short receives, 20-30 a queue a minute). Counted through a
// proxy in front of ElasticMQ and LocalStack. A thousand long polls held open for a minute starve the tests beside
// them on the shared SQS servers (ElasticMQ stops answering new connections at about 1,024), so scripts/test.sh runs
// this file alone, after the integration phase (phase `alone`).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueues, deleteQueues, sqsClient } from '../../support/aws.ts';
import type { CliRun } from '../../support/cli.ts';
import { startIdleDaemon, started, stopDaemon } from '../../support/daemon.ts';
import { queuesLongPolled, receivesPerQueue, startFaultProxy, type FaultProxy } from '../../support/fault-proxy.ts';
import { until } from '../../support/factories.ts';
import { functionFixture } from '../../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../../support/lambda-endpoint/server.ts';
import { ensureSqsServer, sqsServers } from '../../support/sqs-servers.ts';

const QUEUES = 1_000;
const CONCURRENCY = 10;
/**
 * Start-up is not idle cost: the route's first pass reads each queue once with a short receive, and past 250 queues
 * each queue's first poll waits a drawn 1-20 s (src/receive/idle-polls.ts, waitSec). The window opens once every
 * queue has had a long poll through the proxy: from then on each queue gets one poll per --poll-for, the drawn
 * one's end included. A fixed settle time did not do: on a busy host the first pass over 1,000 queues on LocalStack
 * outlasted 20 s, its short receives fell into the window, and a queue counted 3 (3.44 a queue a minute in CI).
 */
const START_UP_MS = 90_000;
const WINDOW_MS = 40_000;
/**
 * One poll per queue per 20 s is 3 a minute (measured: 3.00 on LocalStack and 2.99 on ElasticMQ); a 40 s window
 * holds the starts of two polls per queue, three at most. The loops' short-receive passes of before made 20-30.
 */
const MAX_PER_QUEUE_MINUTE = 3.25;
const MAX_IN_WINDOW = 3;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Where the receives of the window came from: how long each took (a poll SQS held, or one it answered early), and
 * for the queues with the most, when each was made relative to the window; printed with every run, so a failure
 * says its cause.
 */
function receiveTimeline(
  proxy: FaultProxy,
  queues: readonly { name: string }[],
  perQueue: readonly number[],
  from: number,
  to: number,
): string {
  const inWindow = proxy.calls('ReceiveMessage').filter((c) => c.at >= from && c.at < to);
  const took = (c: (typeof inWindow)[number]) => (c.endedAt === undefined ? undefined : c.endedAt - c.at);
  const bands = { open: 0, under1s: 0, from1to19s: 0, over19s: 0 };
  for (const c of inWindow) {
    const ms = took(c);
    if (ms === undefined) bands.open++;
    else if (ms < 1_000) bands.under1s++;
    else if (ms < 19_000) bands.from1to19s++;
    else bands.over19s++;
  }
  const most = Math.max(...perQueue);
  const busiest = queues.filter((_, i) => perQueue[i] === most).slice(0, 5);
  const lines = busiest.map((q) => {
    const own = proxy.calls('ReceiveMessage').filter((c) => c.queueUrl?.endsWith(`/${q.name}`));
    return `${q.name}: ${own.map((c) => `${((c.at - from) / 1000).toFixed(1)}s+${took(c) ?? 'open'}ms`).join(' ')}`;
  });
  return `receives in the window by how long each took: ${JSON.stringify(bands)}; ${perQueue.filter((n) => n === most).length} queues had ${most}, e.g. (start from the window's opening + duration) ${lines.join('; ')}`;
}

const servers = sqsServers().filter((s) => s.name !== 'moto');

describe('many idle queues behind one small pool: one long poll per queue', { concurrency: false }, () => {
  let endpoint: LambdaEndpoint;
  const runs: CliRun[] = [];
  before(async () => {
    endpoint = await startLambdaEndpoint({ functions: { echo: { handler: functionFixture('echo.mjs') } } });
  });
  after(async () => {
    for (const run of runs) if (run.child.exitCode === null) run.child.kill('SIGKILL');
    await endpoint.stop();
  });

  for (const server of servers) {
    it(`${server.name}: ${QUEUES} idle queues at --concurrency ${CONCURRENCY} cost at most ${MAX_PER_QUEUE_MINUTE} ReceiveMessage per queue a minute`, async () => {
      await ensureSqsServer(server);
      const sqs = sqsClient(server.endpoint);
      const proxy = await startFaultProxy({ upstream: server.endpoint });
      const queues = await createQueues(QUEUES, 'wl-many', sqs);
      try {
        const startedAt = Date.now();
        const run = startIdleDaemon(endpoint.url, proxy.url, [
          '--function',
          'echo',
          '--queues',
          queues.map((q) => q.name).join(','),
          '--concurrency',
          String(CONCURRENCY),
        ]);
        runs.push(run);
        await started(run);
        const names = queues.map((q) => q.name);
        await until(() => queuesLongPolled(proxy, names, Date.now()) === QUEUES, START_UP_MS, 'a long poll on every queue', 500);
        const from = Date.now();
        console.log(`${server.name}: start-up over (a long poll on every queue) ${from - startedAt} ms after the start`);
        await sleep(WINDOW_MS);
        const to = Date.now();
        const perQueue = receivesPerQueue(proxy, names, from, to);
        const total = perQueue.reduce((a, b) => a + b, 0);
        const perMinute = (total * 60_000) / (to - from) / QUEUES;
        const max = Math.max(...perQueue);
        const open = proxy.calls('ReceiveMessage').filter((c) => c.endedAt === undefined).length;
        console.log(
          `${server.name}: ${total} ReceiveMessage in ${to - from} ms of idle over ${QUEUES} queues: ${perMinute.toFixed(2)} per queue a minute, at most ${max} on one queue; ${open} open`,
        );
        console.log(`${server.name}: ${receiveTimeline(proxy, queues, perQueue, from, to)}`);
        assert.ok(perMinute <= MAX_PER_QUEUE_MINUTE, `${perMinute.toFixed(2)} per queue a minute`);
        assert.ok(max <= MAX_IN_WINDOW, `a queue had ${max} receives in the window`);
        // One poll per queue, and at most a receive per loop beside them.
        assert.ok(open <= QUEUES + CONCURRENCY, `at most one poll open per queue, ${open} open`);

        assert.equal(await stopDaemon(run), 0, run.stderr());
      } finally {
        await proxy.close();
        await deleteQueues(queues, sqs);
        sqs.destroy();
      }
    });
  }
});
