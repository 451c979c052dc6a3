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
import { receivesPerQueue, startFaultProxy } from '../../support/fault-proxy.ts';
import { functionFixture } from '../../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../../support/lambda-endpoint/server.ts';
import { ensureSqsServer, sqsServers } from '../../support/sqs-servers.ts';

const QUEUES = 1_000;
const CONCURRENCY = 10;
/**
 * Start-up is not idle cost: the route's first pass reads each queue once with a short receive, and past 250 queues
 * each queue's first poll waits a drawn 1-20 s (src/receive/idle-polls.ts, waitSec). The window opens one --poll-for
 * after start-up, when both are over (with a 5 s settle the first pass still ran into the window on LocalStack: 4.52).
 */
const SETTLE_MS = 20_000;
const WINDOW_MS = 40_000;
/**
 * One poll per queue per 20 s is 3 a minute (measured: 3.00 on LocalStack and 2.99 on ElasticMQ); a 40 s window
 * holds the starts of two polls per queue, three at most. The loops' short-receive passes of before made 20-30.
 */
const MAX_PER_QUEUE_MINUTE = 3.25;
const MAX_IN_WINDOW = 3;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
        await sleep(SETTLE_MS);
        const from = Date.now();
        await sleep(WINDOW_MS);
        const to = Date.now();
        const perQueue = receivesPerQueue(
          proxy,
          queues.map((q) => q.name),
          from,
          to,
        );
        const total = perQueue.reduce((a, b) => a + b, 0);
        const perMinute = (total * 60_000) / (to - from) / QUEUES;
        const max = Math.max(...perQueue);
        const open = proxy.calls('ReceiveMessage').filter((c) => c.endedAt === undefined).length;
        console.log(
          `${server.name}: ${total} ReceiveMessage in ${to - from} ms of idle over ${QUEUES} queues: ${perMinute.toFixed(2)} per queue a minute, at most ${max} on one queue; ${open} open`,
        );
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
