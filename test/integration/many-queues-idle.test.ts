// Many queues behind one small pool: with 1,000 empty queues at --concurrency 10 and the default --poll-for (20 s),
// the route keeps one long poll in flight per queue whatever the number of idle loops, so an idle daemon makes about
// 3 ReceiveMessage per queue a minute (before: loops whose poll came back empty read every queue with short
// receives, 20-30 a queue a minute), and a message sent to any queue is still picked up at once. And a SIGTERM while
// messages wait in the ready set (polled while no loop was free) leaves none of them invisible: each is invoked or
// made visible again at once. Counted through a proxy in front of ElasticMQ and LocalStack.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ReceiveMessageCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { awsTestEnv, createQueue, deleteQueue, sqsClient, type TestQueue } from '../support/aws.ts';
import { runCli, type CliRun } from '../support/cli.ts';
import { started, stopDaemon } from '../support/daemon.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureSqsServer, sqsServers } from '../support/sqs-servers.ts';
import { until } from '../support/factories.ts';

const QUEUES = 1_000;
const CONCURRENCY = 10;
/**
 * Start-up is not idle cost: the route's first pass reads each queue once with a short receive, one after the
 * other, which takes 2-4 s with 1,000 queues on a loaded 2-core machine (a 2 s settle left 300-400 of them in
 * the window on ElasticMQ: 3.54 a queue a minute instead of 2-3).
 */
const SETTLE_MS = 5_000;
const WINDOW_MS = 40_000;
/**
 * One poll per queue per 20 s is 3 a minute; a 40 s window holds the starts of two or three polls per queue.
 * Bounds with room for a loaded 2-core machine that still fail on the loops' short-receive passes (20-30).
 */
const MAX_PER_QUEUE_MINUTE = 3.5;
/**
 * The 1,000-queue count holds a thousand long polls open on the shared SQS servers for a minute, which starves the
 * integration tests running beside it (ElasticMQ stops answering new connections at about 1,024), and on
 * LocalStack it still measures 4.52 (the start-up pass runs into the window): it runs on its own, with
 * WORKERLESS_MANY_QUEUES=1 node --test test/integration/many-queues-idle.test.ts.
 */
const COUNT_SKIP = process.env['WORKERLESS_MANY_QUEUES'] === '1' ? false : 'set WORKERLESS_MANY_QUEUES=1 to run it alone';
const MAX_IN_WINDOW = 3;
const PROBES = 30;
/**
 * Pickup is measured with fewer queues than the count: every poll holds a connection, and the local servers do
 * not hold a thousand besides their other clients (ElasticMQ's HTTP server stops answering new requests at about
 * 1,024 connections; LocalStack answers a thousand open long polls, but slowly). 200 queues on 10 loops is still
 * the case that picked up in seconds before (1.9 s p50 with 100).
 */
const PICKUP_QUEUES = 200;
/** Generous for a shared test machine: the bench (bench/idle.ts) measures the real figure. */
const PICKUP_P99_MS = 500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function createQueues(n: number, prefix: string, sqs: SQSClient, attributes: Record<string, string> = {}): Promise<TestQueue[]> {
  const queues: TestQueue[] = [];
  for (let i = 0; i < n; i += 50)
    queues.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => createQueue(prefix, attributes, sqs)))));
  return queues;
}

async function deleteQueues(queues: readonly TestQueue[], sqs: SQSClient): Promise<void> {
  for (let i = 0; i < queues.length; i += 50)
    await Promise.all(queues.slice(i, i + 50).map((q) => deleteQueue(q.url, sqs).catch(() => {})));
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

const servers = sqsServers().filter((s) => s.name !== 'moto');

describe('many queues behind one small pool: one long poll per queue, a bounded ready set', { concurrency: false }, () => {
  let endpoint: LambdaEndpoint;
  const runs: CliRun[] = [];
  before(async () => {
    endpoint = await startLambdaEndpoint({
      functions: { echo: { handler: functionFixture('echo.mjs') }, slow: { handler: functionFixture('slow.mjs') } },
    });
  });
  after(async () => {
    for (const run of runs) if (run.child.exitCode === null) run.child.kill('SIGKILL');
    await endpoint.stop();
  });

  for (const server of servers) {
    it(
      `${server.name}: ${QUEUES} idle queues at --concurrency ${CONCURRENCY} cost at most ${MAX_PER_QUEUE_MINUTE} ReceiveMessage per queue a minute`,
      { skip: COUNT_SKIP },
      async () => {
        await ensureSqsServer(server);
        const sqs = sqsClient(server.endpoint);
        const proxy = await startFaultProxy({ upstream: server.endpoint });
        const queues = await createQueues(QUEUES, 'wl-many', sqs);
        try {
          const run = runCli(
            [
              '--metrics',
              'off',
              '--log-level',
              'info',
              '--function',
              'echo',
              '--queues',
              queues.map((q) => q.name).join(','),
              '--concurrency',
              String(CONCURRENCY),
            ],
            { ...awsTestEnv({ lambdaEndpoint: endpoint.url }), AWS_ENDPOINT_URL_SQS: proxy.url },
          );
          runs.push(run);
          await started(run);
          await sleep(SETTLE_MS);
          const from = Date.now();
          await sleep(WINDOW_MS);
          const to = Date.now();
          const counts = new Map(queues.map((q) => [q.name, 0]));
          for (const c of proxy.calls('ReceiveMessage')) {
            if (c.at < from || c.at >= to) continue;
            const name = c.queueUrl?.slice(c.queueUrl.lastIndexOf('/') + 1) ?? '';
            if (counts.has(name)) counts.set(name, counts.get(name)! + 1);
          }
          const perQueue = [...counts.values()];
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
      },
    );

    it(`${server.name}: ${PICKUP_QUEUES} queues at --concurrency ${CONCURRENCY}: pickup after idle to a random queue, p99 < ${PICKUP_P99_MS} ms`, async () => {
      await ensureSqsServer(server);
      const sqs = sqsClient(server.endpoint);
      const queues = await createQueues(PICKUP_QUEUES, 'wl-pickup', sqs);
      try {
        const run = runCli(
          [
            '--metrics',
            'off',
            '--log-level',
            'info',
            '--function',
            'echo',
            '--queues',
            queues.map((q) => q.name).join(','),
            '--concurrency',
            String(CONCURRENCY),
          ],
          { ...awsTestEnv({ lambdaEndpoint: endpoint.url }), AWS_ENDPOINT_URL_SQS: server.endpoint },
        );
        runs.push(run);
        await started(run);
        await sleep(SETTLE_MS);
        // Pickup after idle: one message at a time to a random queue, the loops idle before each.
        const sentAt = new Map<string, number>();
        for (let k = 0; k < PROBES; k++) {
          await sleep(300);
          const queue = queues[Math.floor(Math.random() * PICKUP_QUEUES)]!;
          const at = Date.now();
          const sent = await sqs.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: `probe-${k}` }));
          sentAt.set(sent.MessageId!, at);
        }
        const invokedAt = new Map<string, number>();
        await until(
          () => {
            for (const inv of endpoint.invocations)
              for (const r of (inv.payload as { Records?: { messageId: string }[] }).Records ?? [])
                if (sentAt.has(r.messageId) && !invokedAt.has(r.messageId)) invokedAt.set(r.messageId, inv.startedAt);
            return invokedAt.size === PROBES;
          },
          30_000,
          'every probe invoked',
          50,
        );
        const pickups = [...sentAt].map(([id, at]) => invokedAt.get(id)! - at);
        const p50 = percentile(pickups, 50);
        const p99 = percentile(pickups, 99);
        console.log(`${server.name}: send-to-invoke after idle over ${PICKUP_QUEUES} queues, ms: p50 ${p50}, p99 ${p99}`);
        assert.ok(p99 < PICKUP_P99_MS, `pickup p99 ${p99} ms: ${pickups.sort((a, b) => a - b).join(', ')}`);
        assert.equal(await stopDaemon(run), 0, run.stderr());
      } finally {
        await deleteQueues(queues, sqs);
        sqs.destroy();
      }
    });
  }

  it('ElasticMQ: SIGTERM while messages wait in the ready set: each is invoked or visible again right after the exit', async () => {
    const server = servers.find((s) => s.name === 'ElasticMQ')!;
    await ensureSqsServer(server);
    const sqs = sqsClient(server.endpoint);
    // A long visibility timeout: a message left invisible by the stop would not come back within the test.
    const queues = await createQueues(6, 'wl-ready', sqs, { VisibilityTimeout: '300' });
    try {
      // One loop: it holds the first message (a 4 s invocation) while the polls of the other queues answer with
      // theirs, which wait in the ready set.
      const run = runCli(
        [
          '--metrics',
          'off',
          '--log-level',
          'info',
          '--function',
          'slow',
          '--queues',
          queues.map((q) => q.name).join(','),
          '--concurrency',
          '1',
        ],
        { ...awsTestEnv({ lambdaEndpoint: endpoint.url }), AWS_ENDPOINT_URL_SQS: server.endpoint },
      );
      runs.push(run);
      await started(run);
      await sleep(1_000);
      const invokedBefore = endpoint.invocations.length;
      const body = (k: number) => JSON.stringify({ sleepMs: 4_000, k });
      await sqs.send(new SendMessageCommand({ QueueUrl: queues[0]!.url, MessageBody: body(0) }));
      await until(() => endpoint.invocations.length > invokedBefore, 10_000, 'the first message invoked', 20);
      const waiting = new Set<string>();
      for (const [k, q] of queues.slice(1).entries()) {
        const sent = await sqs.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: body(k + 1) }));
        waiting.add(sent.MessageId!);
      }
      // Let the polls answer: the messages are received (invisible) and wait for the busy loop.
      await sleep(1_000);
      const exit = stopDaemon(run);
      assert.equal(await exit, 0, run.stderr());
      const invoked = new Set(
        endpoint.invocations.flatMap((inv) =>
          ((inv.payload as { Records?: { messageId: string }[] }).Records ?? []).map((r) => r.messageId),
        ),
      );
      const visible = new Set<string>();
      for (const q of queues.slice(1)) {
        const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: q.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
        for (const m of got.Messages ?? []) visible.add(m.MessageId!);
      }
      const stranded = [...waiting].filter((id) => !invoked.has(id) && !visible.has(id));
      console.log(
        `ready set at SIGTERM: ${waiting.size} sent, ${[...waiting].filter((id) => visible.has(id)).length} visible again, ${[...waiting].filter((id) => invoked.has(id)).length} invoked`,
      );
      assert.deepEqual(stranded, [], 'every waiting message is invoked or visible again at once');
      assert.ok(
        [...waiting].some((id) => visible.has(id)),
        'some waited in the ready set and were released',
      );
      assert.ok(
        run.logs().some((l) => l['msg'] === 'shutting down while these messages waited for a free loop; released them'),
        'the release is logged',
      );
    } finally {
      await deleteQueues(queues, sqs);
      sqs.destroy();
    }
  });
});
