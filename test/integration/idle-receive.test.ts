// Issue 24, idle cost: with every queue empty, the idle loops keep one long poll per queue between them, so an idle
// daemon makes at most 3 ReceiveMessage calls per queue a minute with the default 20 s --poll-for (Lambda's SQS
// trigger makes 15: 5 pollers with 20 s long polls; workerless made 28-29 on five queues before, 52 on one), and
// still picks a message up at once. Counted through a proxy in front of each SQS implementation: the CLI with
// --concurrency 10 on 5 queues, 25 s of idle, then messages one at a time after idle gaps.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { createQueue, sqsClient } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { startIdleDaemon, started, stopDaemon } from '../support/daemon.ts';
import { receivesPerQueue, startFaultProxy } from '../support/fault-proxy.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureSqsServer, sqsServers } from '../support/sqs-servers.ts';
import { until } from '../support/factories.ts';

const QUEUES = 5;
const CONCURRENCY = 10;
const WINDOW_MS = 25_000;
/**
 * 3 a minute is 1.25 in 25 s; polls are whole 20 s calls, so a window can hold the starts of two (one just after
 * its opening, one 20 s later). Before issue 24: 8-12 per queue in such a window.
 */
const MAX_PER_QUEUE = 2;
const PICKUPS = 15;

describe('idle receives: one long poll per queue while the loops are idle (issue 24)', { concurrency: true }, () => {
  let endpoint: LambdaEndpoint;
  const runs: CliRun[] = [];
  before(async () => {
    endpoint = await startLambdaEndpoint({ functions: { echo: { handler: functionFixture('echo.mjs') } } });
  });
  after(async () => {
    for (const run of runs) if (run.child.exitCode === null) run.child.kill('SIGKILL');
    await endpoint.stop();
  });

  for (const server of sqsServers()) {
    it(`${server.name}: at most ${MAX_PER_QUEUE} ReceiveMessage per queue in ${WINDOW_MS / 1000} s of idle (5 queues, --concurrency 10, --poll-for 20), and pickup within a second after idle`, async () => {
      await ensureSqsServer(server);
      const sqs = sqsClient(server.endpoint);
      const proxy = await startFaultProxy({ upstream: server.endpoint });
      try {
        const queues = await Promise.all(Array.from({ length: QUEUES }, (_, i) => createQueue(`wl-idle-${i}`, {}, sqs)));
        // The default --poll-for (20 s): the tests' startDaemon() passes 1 s.
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
        // The first passes (a short receive per queue per loop) are start-up, not idle cost.
        await new Promise((r) => setTimeout(r, 2_000));
        const from = Date.now();
        await new Promise((r) => setTimeout(r, WINDOW_MS));
        const to = Date.now();
        const perQueue = receivesPerQueue(
          proxy,
          queues.map((q) => q.name),
          from,
          to,
        );
        const open = proxy.calls('ReceiveMessage').filter((c) => c.endedAt === undefined).length;
        console.log(
          `${server.name}: ReceiveMessage per queue in ${to - from} ms of idle: ${perQueue.join(', ')} (${perQueue
            .map((n) => ((n * 60_000) / (to - from)).toFixed(1))
            .join(', ')} a minute); ${open} open`,
        );
        for (const [i, n] of perQueue.entries())
          assert.ok(n <= MAX_PER_QUEUE, `queue ${i}: ${n} receives in the window: ${perQueue.join(', ')}`);
        assert.ok(
          perQueue.every((n) => n >= 1),
          `every queue is polled: ${perQueue.join(', ')}`,
        );
        assert.ok(open <= QUEUES, `at most one poll open per queue, ${open} open`);

        // Pickup after idle: one message at a time, round-robin over the queues, the loops idle before each.
        const sentAt = new Map<string, number>();
        for (let k = 0; k < PICKUPS; k++) {
          await new Promise((r) => setTimeout(r, 400));
          const at = Date.now();
          const sent = await sqs.send(new SendMessageCommand({ QueueUrl: queues[k % QUEUES]!.url, MessageBody: `idle-${k}` }));
          sentAt.set(sent.MessageId!, at);
        }
        const invokedAt = new Map<string, number>();
        await until(
          () => {
            for (const inv of endpoint.invocations)
              for (const r of (inv.payload as { Records: { messageId: string }[] }).Records)
                if (sentAt.has(r.messageId)) invokedAt.set(r.messageId, inv.startedAt);
            return invokedAt.size === PICKUPS;
          },
          30_000,
          'every message invoked',
          50,
        );
        const pickups = [...sentAt].map(([id, at]) => invokedAt.get(id)! - at).sort((a, b) => a - b);
        console.log(`${server.name}: send-to-invoke after idle, ms: ${pickups.join(', ')}`);
        // A message that waited for a poll to come round would take up to 20 s; a poll answers at once.
        assert.ok(pickups.at(-1)! < 1_000, `slowest pickup ${pickups.at(-1)} ms`);
        assert.equal(await stopDaemon(run), 0, run.stderr());
      } finally {
        await proxy.close();
        sqs.destroy();
      }
    });
  }
});
