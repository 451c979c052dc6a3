// Issue 40, a fleet: real daemon processes sharing one DynamoDB table (moto's server, and dynalite), in front of
// real SQS servers (ElasticMQ, LocalStack) through a counting proxy. Three replicas on idle queues pay about one
// replica's idle receives; after a kill -9 every queue is polled again and a message sent to any queue is invoked
// once, within the failover bound; after a SIGTERM the leaver says so and its queues are picked up at once.
// Liveness as the KCL decides it (docs/fleet.md): a member silent for 3 heartbeats on an observer's own clock.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { createQueue, sendMessages, sqsClient, type TestQueue } from '../../support/aws.ts';
import type { CliRun } from '../../support/cli.ts';
import { startIdleDaemon, started, stopDaemon } from '../../support/daemon.ts';
import { createFleetTable, motoDynamoEndpoint, startDynalite, uniqueTableName, type DynamoServer } from '../../support/dynamodb.ts';
import { firstReceiveAfter, receivesPerQueue, startFaultProxy } from '../../support/fault-proxy.ts';
import { functionFixture } from '../../support/functions.ts';
import { freePort, sample } from '../../support/http.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../../support/lambda-endpoint/server.ts';
import { ensureSqsServer, sqsServers } from '../../support/sqs-servers.ts';
import { fleetOf, fromReplica, invokedBodies, overlapping } from '../../support/fleet.ts';

const REPLICAS = 3;
const QUEUES = 24;
const POLL_FOR = 5;
const WINDOW_MS = 20_000;
/** The issue's bounds: kill -9 20 s to a poll and 25 s to an invocation; SIGTERM 5 s. */
const KILL_POLL_MS = 20_000;
const KILL_INVOKE_MS = 25_000;
/**
 * The test queues' visibility timeout. A message sent at the moment of a kill -9 can be taken by the dead process's
 * long poll still open at the server (ElasticMQ finishes a poll whose client is gone; AWS promises nothing either
 * way), and then comes back only after the visibility timeout, whatever the fleet does: "a received message
 * remains in the queue... other consumers can't receive it during the visibility timeout" (SQS Developer Guide,
 * "Amazon SQS visibility timeout"). 10 s keeps that case inside the failover bound the test measures.
 */
const VISIBILITY_S = 10;
const TERM_INVOKE_MS = 5_000 + POLL_FOR * 1000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Pairing {
  readonly sqs: 'ElasticMQ' | 'LocalStack';
  readonly dynamo: 'moto' | 'dynalite';
}
const PAIRINGS: readonly Pairing[] = [
  { sqs: 'ElasticMQ', dynamo: 'moto' },
  { sqs: 'LocalStack', dynamo: 'dynalite' },
];

describe('a fleet of replicas over one DynamoDB table (issue 40)', { concurrency: true, timeout: 300_000 }, () => {
  let endpoint: LambdaEndpoint;
  let dynalite: DynamoServer;
  const runs: CliRun[] = [];
  before(async () => {
    endpoint = await startLambdaEndpoint({
      functions: { echo: { handler: functionFixture('echo.mjs') }, slow: { handler: functionFixture('slow.mjs') } },
    });
    dynalite = await startDynalite();
  });
  after(async () => {
    for (const run of runs) if (run.child.exitCode === null) run.child.kill('SIGKILL');
    await endpoint.stop();
    await dynalite.close();
  });

  for (const dynamo of ['moto', 'dynalite'] as const) {
    it(`${dynamo}: a missing table stops the start with one line naming it and exit code 1`, async () => {
      const server = sqsServers().find((s) => s.name === 'ElasticMQ')!;
      await ensureSqsServer(server);
      const queue = await createQueue('wl-fleet-missing', {}, sqsClient(server.endpoint));
      const table = uniqueTableName('wl-fleet-missing');
      const dynamoEndpoint = dynamo === 'moto' ? motoDynamoEndpoint() : dynalite.endpoint;
      const run = startIdleDaemon(endpoint.url, server.endpoint, ['--function', 'echo', '--queues', queue.name, '--fleet-table', table], {
        AWS_ENDPOINT_URL_DYNAMODB: dynamoEndpoint,
      });
      runs.push(run);
      const { code } = await run.exited;
      assert.equal(code, 1);
      const said = `${run.stdout()}\n${run.stderr()}`;
      assert.ok(said.includes(`DescribeTable on table ${table}`), said);
      assert.ok(said.includes(new URL(dynamoEndpoint).host), `names the endpoint: ${said}`);
      assert.doesNotMatch(said, /\n\s+at /, 'no stack trace');
    });
  }

  it('3 replicas on one queue: the two that own nothing stay alive (they heartbeat and answer their probes) while it is busy and after, and every message is invoked once', async () => {
    // A replica that owned none of its queues spun in 0 ms waits once its loops came back from a busy queue that
    // went quiet, and froze (CI: one of 3 replicas of the budget test, which own no queue of 6 about one time in 11,
    // dropped out of the fleet and invoked nothing).
    const server = sqsServers().find((s) => s.name === 'ElasticMQ')!;
    await ensureSqsServer(server);
    const table = uniqueTableName('wl-fleet-one');
    await createFleetTable(dynalite.endpoint, table);
    const sqs = sqsClient(server.endpoint);
    const queue = await createQueue('wl-fleet-one', {}, sqs);
    const ports = await Promise.all(Array.from({ length: REPLICAS }, freePort));
    const replicas = ports.map((port) => {
      const run = startIdleDaemon(
        endpoint.url,
        server.endpoint,
        [
          ...['--function', 'slow', '--queues', queue.name, '--poll-for', String(POLL_FOR), '--concurrency', '8', '--batch-size', '1'],
          ...['--fleet-table', table, '--fleet-name', table, '--fleet-heartbeat', '2s', '--http-port', String(port)],
        ],
        { AWS_ENDPOINT_URL_DYNAMODB: dynalite.endpoint },
      );
      runs.push(run);
      return run;
    });
    await Promise.all(replicas.map(started));
    await Promise.all(replicas.map((r) => r.waitForLog((l) => l['to'] === 'shared', 30_000)));
    assert.deepEqual((await Promise.all(ports.map(fleetOf))).map((v) => v.owned).sort(), [0, 0, 1]);
    // Busy for about 10 s (8 loops a replica, 200 ms a message): advertised, received from by all, then quiet.
    const bodies = Array.from({ length: 400 }, (_, i) => JSON.stringify({ sleepMs: 200, one: i }));
    await sendMessages(queue.url, bodies, sqs);
    await endpoint.waitFor(() => invokedBodies(endpoint, '{"sleepMs":200,"one"').size === bodies.length, 90_000);
    // Past the busy mark (2 heartbeats) and one expiry more: a frozen replica has dropped out of its peers' view.
    await sleep(10_500);
    const views = await Promise.all(ports.map(fleetOf));
    assert.deepEqual(
      views.map((v) => [v.mode, v.members.length]),
      [
        ['shared', 3],
        ['shared', 3],
        ['shared', 3],
      ],
    );
    assert.ok(
      [...invokedBodies(endpoint, '{"sleepMs":200,"one"').values()].every((n) => n === 1),
      'every message invoked once',
    );
    for (const r of replicas) assert.equal(await stopDaemon(r), 0);
  });

  it('DynamoDB silent for 30 s: every replica falls back to every queue, says so in a line and a gauge, loses nothing, and shares again', async () => {
    const server = sqsServers().find((s) => s.name === 'ElasticMQ')!;
    await ensureSqsServer(server);
    const table = uniqueTableName('wl-fleet-outage');
    await createFleetTable(dynalite.endpoint, table);
    const dynamoProxy = await startFaultProxy({ upstream: dynalite.endpoint });
    const sqs = sqsClient(server.endpoint);
    const sqsProxy = await startFaultProxy({ upstream: server.endpoint, abortOnClientClose: true });
    const queues = await Promise.all(Array.from({ length: 8 }, () => createQueue('wl-fleet-outage', {}, sqs)));
    const names = queues.map((q) => q.name);
    const ports = await Promise.all([freePort(), freePort()]);
    const replicas = ports.map((port) => {
      const run = startIdleDaemon(
        endpoint.url,
        sqsProxy.url,
        [
          ...['--function', 'echo', '--queues', names.join(','), '--poll-for', String(POLL_FOR)],
          // A 2 s heartbeat (expiry 6 s) keeps the test short; the failover test above runs the default.
          ...['--fleet-table', table, '--fleet-name', table, '--fleet-heartbeat', '2s', '--http-port', String(port)],
        ],
        { AWS_ENDPOINT_URL_DYNAMODB: dynamoProxy.url },
      );
      runs.push(run);
      return run;
    });
    const shared = async (port: number) => sample(await fromReplica(port, '/metrics'), 'workerless_fleet_shared', { fleet: table });
    try {
      await Promise.all(replicas.map(started));
      await Promise.all(replicas.map((r) => r.waitForLog((l) => l['to'] === 'shared', 30_000)));
      await sleep(POLL_FOR * 1000 + 1_000);
      const sharedFrom = Date.now();
      await sleep(2 * POLL_FOR * 1000);
      const sharedPolls = receivesPerQueue(sqsProxy, names, sharedFrom, Date.now());

      // The table accepts connections and never answers: each call runs into its 5 s timeout, 3 times.
      const silentAt = Date.now();
      dynamoProxy.inject({ fault: { kind: 'hang' }, forMs: 30_000 });
      const fell = await Promise.all(replicas.map((r) => r.waitForLog((l) => l['to'] === 'fallen-back', 20_000)));
      const fellMs = Math.max(...fell.map((l) => Number(l['time']) - silentAt));
      for (const port of ports) assert.equal(await shared(port), 0);
      await sleep(POLL_FOR * 1000 + 500);
      const blindFrom = Date.now();
      const tag = `outage-${blindFrom}-`;
      await Promise.all(queues.map((q, i) => sqs.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: `${tag}${i}` }))));
      await endpoint.waitFor(() => invokedBodies(endpoint, tag).size === queues.length, 15_000);
      await sleep(2 * POLL_FOR * 1000);
      const blindPolls = receivesPerQueue(sqsProxy, names, blindFrom, Date.now());

      const back = await Promise.all(
        replicas.map((r) => r.waitForLog((l) => l['to'] === 'shared' && Number(l['time']) > silentAt, 90_000)),
      );
      const backMs = Math.max(...back.map((l) => Number(l['time']))) - (silentAt + 30_000);
      for (const port of ports) assert.equal(await shared(port), 1);
      console.log(
        `# DynamoDB silent 30 s, 2 replicas, 8 queues, heartbeat 2 s: fallen back after ${fellMs} ms, shared again ${backMs} ms after it answered; ReceiveMessage per queue in ${2 * POLL_FOR} s: shared ${sharedPolls.join(' ')}, fallen back ${blindPolls.join(' ')}`,
      );
      assert.ok(fellMs <= 20_000, `fallen back within 20 s: ${fellMs}`);
      assert.ok(backMs <= 60_000, `shared again within a minute: ${backMs}`);
      // Blind, each replica polls every queue: about twice the shared polls, and never a queue without one.
      assert.ok(
        blindPolls.every((n) => n >= 3),
        `every queue polled by both: ${blindPolls.join(' ')}`,
      );
      assert.ok(
        sharedPolls.every((n) => n >= 1 && n <= 3),
        `shared, one poller a queue: ${sharedPolls.join(' ')}`,
      );
      await sleep(1_000);
      assert.ok(
        [...invokedBodies(endpoint, tag).values()].every((n) => n === 1),
        'every message invoked once',
      );
      for (const r of replicas) assert.equal(await stopDaemon(r), 0);
    } finally {
      for (const r of replicas) if (r.child.exitCode === null) r.child.kill('SIGKILL');
      await dynamoProxy.close();
      await sqsProxy.close();
    }
  });

  for (const pairing of PAIRINGS) {
    it(`${pairing.sqs} with ${pairing.dynamo}: 3 replicas pay one idle cost; kill -9 and SIGTERM fail over within the bounds; every message once`, async () => {
      const server = sqsServers().find((s) => s.name === pairing.sqs)!;
      await ensureSqsServer(server);
      const dynamoEndpoint = pairing.dynamo === 'moto' ? motoDynamoEndpoint() : dynalite.endpoint;
      const table = uniqueTableName('wl-fleet');
      await createFleetTable(dynamoEndpoint, table);
      const sqs = sqsClient(server.endpoint);
      // A killed replica's sockets close with it: its long polls end at the server too, not only at the proxy.
      const proxy = await startFaultProxy({ upstream: server.endpoint, abortOnClientClose: true });
      const prefix = `wl-fleet-${pairing.sqs.toLowerCase()}`;
      const queues: TestQueue[] = await Promise.all(
        Array.from({ length: QUEUES }, () => createQueue(prefix, { VisibilityTimeout: String(VISIBILITY_S) }, sqs)),
      );
      const names = queues.map((q) => q.name);
      const ports = await Promise.all(Array.from({ length: REPLICAS }, freePort));
      const start = (_: unknown, i: number) => {
        const run = startIdleDaemon(
          endpoint.url,
          proxy.url,
          [
            '--function',
            'echo',
            '--queues',
            names.join(','),
            '--concurrency',
            '4',
            '--poll-for',
            String(POLL_FOR),
            '--fleet-table',
            table,
            '--fleet-name',
            prefix,
            '--fleet-concurrency',
            '10',
            '--http-port',
            String(ports[i]),
          ],
          { AWS_ENDPOINT_URL_DYNAMODB: dynamoEndpoint },
        ); // found by the SDK's own rule for a service's endpoint
        runs.push(run);
        return run;
      };
      const replicas = Array.from({ length: REPLICAS }, start);
      try {
        await Promise.all(replicas.map(started));
        await Promise.all(replicas.map((r) => r.waitForLog((l) => l['to'] === 'shared', 30_000)));
        // Polls sent while joining (every queue, by every replica) last one --poll-for.
        await sleep(POLL_FOR * 1000 + 1_000);

        // What each replica shows: status.json's fleet, and the same in /metrics. The owners partition the queues.
        const views = await Promise.all(
          ports.map(async (port) => ({ fleet: await fleetOf(port), metrics: await fromReplica(port, '/metrics') })),
        );
        for (const { fleet, metrics } of views) {
          assert.equal(fleet.mode, 'shared');
          assert.equal(fleet.members.length, REPLICAS);
          assert.equal(fleet.queues, QUEUES);
          assert.equal(fleet.concurrency, 10);
          assert.equal(sample(metrics, 'workerless_fleet_shared', { fleet: prefix }), 1);
          assert.equal(sample(metrics, 'workerless_fleet_members', { fleet: prefix }), REPLICAS);
          assert.equal(sample(metrics, 'workerless_fleet_owned_queues', { fleet: prefix }), fleet.owned);
          assert.equal(sample(metrics, 'workerless_fleet_share', { fleet: prefix }), fleet.share);
        }
        assert.equal(
          views.reduce((a, v) => a + v.fleet.owned, 0),
          QUEUES,
          `each queue owned once: ${views.map((v) => v.fleet.owned).join('+')}`,
        );
        assert.deepEqual(views.map((v) => v.fleet.share).sort(), [3, 3, 4], 'the fleet budget of 10 over 3 replicas');

        // Idle cost: the fleet together, per queue, against one replica's (WINDOW / POLL_FOR polls a queue).
        const from = Date.now();
        await sleep(WINDOW_MS);
        const perQueue = receivesPerQueue(proxy, names, from, Date.now());
        const one = WINDOW_MS / (POLL_FOR * 1000);
        const total = perQueue.reduce((a, b) => a + b, 0);
        console.log(
          `# ${pairing.sqs}/${pairing.dynamo}: ${REPLICAS} replicas, ${QUEUES} idle queues, ${WINDOW_MS / 1000} s: ${(total / QUEUES).toFixed(2)} ReceiveMessage per queue (one replica alone: ${one}; without a fleet: ${one * REPLICAS}); per queue ${perQueue.join(' ')}`,
        );
        assert.ok(
          perQueue.every((n) => n >= 1),
          `every queue polled: ${perQueue.join(' ')}`,
        );
        assert.ok(total / QUEUES <= one * 1.25 + 0.5, `about one replica's idle cost: ${(total / QUEUES).toFixed(2)} a queue`);

        // kill -9 of one replica; a message to every queue at that moment: each invoked once, in time.
        const killedAt = Date.now();
        replicas[0]!.child.kill('SIGKILL');
        const killTag = `kill-${killedAt}-`;
        await Promise.all(queues.map((q, i) => sqs.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: `${killTag}${i}` }))));
        await endpoint.waitFor(() => invokedBodies(endpoint, killTag).size === QUEUES, KILL_INVOKE_MS + 10_000);
        const killMs = Date.now() - killedAt;
        // A receive that starts after the kill is a survivor's: the first one on each queue is when it is polled again.
        const repollMs = Math.max(...firstReceiveAfter(proxy, names, killedAt));
        console.log(
          `# ${pairing.sqs}/${pairing.dynamo}: after kill -9, every queue polled again within ${repollMs} ms, a message on each of ${QUEUES} queues invoked within ${killMs} ms`,
        );
        assert.ok(repollMs <= KILL_POLL_MS, `every queue polled within ${KILL_POLL_MS} ms after the kill: ${repollMs}`);
        assert.ok(killMs <= KILL_INVOKE_MS, `within ${KILL_INVOKE_MS} ms after the kill: ${killMs}`);

        // The survivors share the dead one's queues and its part of the budget.
        const after = await Promise.all(ports.slice(1).map(fleetOf));
        assert.deepEqual(
          after.map((f) => [f.members.length, f.share]),
          [
            [2, 5],
            [2, 5],
          ],
        );
        assert.equal(after[0]!.owned + after[1]!.owned, QUEUES);

        // SIGTERM of another: it says it leaves, and its queues are picked up at once by the last one.
        const termAt = Date.now();
        const leaving = replicas[1]!.waitForLog((l) => String(l['msg']).startsWith('leaving the fleet'), 5_000);
        const stopped = stopDaemon(replicas[1]!);
        await leaving;
        const termTag = `term-${termAt}-`;
        await Promise.all(queues.map((q, i) => sqs.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: `${termTag}${i}` }))));
        await endpoint.waitFor(() => invokedBodies(endpoint, termTag).size === QUEUES, TERM_INVOKE_MS + 10_000);
        const termMs = Date.now() - termAt;
        console.log(`# ${pairing.sqs}/${pairing.dynamo}: after SIGTERM, a message on each of ${QUEUES} queues invoked within ${termMs} ms`);
        assert.equal(await stopped, 0);
        assert.ok(termMs <= TERM_INVOKE_MS, `within ${TERM_INVOKE_MS} ms after the SIGTERM: ${termMs}`);

        await sleep(2_000);
        for (const tag of [killTag, termTag]) {
          const counts = invokedBodies(endpoint, tag);
          assert.equal(counts.size, QUEUES);
          assert.ok(
            [...counts.values()].every((n) => n === 1),
            `${tag}: every message invoked once`,
          );
        }
        assert.equal(await stopDaemon(replicas[2]!), 0);
      } finally {
        for (const r of replicas) if (r.child.exitCode === null) r.child.kill('SIGKILL');
        await proxy.close();
      }
    });
  }
});

describe('a backlog is drained by the whole fleet (issue 40)', { timeout: 300_000 }, () => {
  it("3 replicas, 5,000 messages on the first of 6 queues in strict order (as the issue asks) and 1,000 on the second: each replica makes at least 20% of the first queue's invocations, and with the first seen busy none starts a batch of the second while the first gives batches; every message once", async () => {
    const MESSAGES = 5_000;
    const LOW = 1_000;
    const LOOPS = 4;
    const endpoint = await startLambdaEndpoint({ functions: { slow: { handler: functionFixture('slow.mjs') } } });
    const server = sqsServers().find((s) => s.name === 'ElasticMQ')!;
    await ensureSqsServer(server);
    const table = uniqueTableName('wl-fleet-backlog');
    await createFleetTable(motoDynamoEndpoint(), table);
    const sqs = sqsClient(server.endpoint);
    const queues = await Promise.all(Array.from({ length: 6 }, () => createQueue('wl-fleet-backlog', {}, sqs)));
    // "a,b,c" is strict order: high first, low read only when high is empty (docs/delivery.md, Priority).
    const [high, low] = queues as [TestQueue, TestQueue];
    const ports = await Promise.all(Array.from({ length: REPLICAS }, freePort));
    const replicas = ports.map((port) =>
      startIdleDaemon(
        endpoint.url,
        server.endpoint,
        [
          ...['--function', 'slow', '--queues', queues.map((q) => q.name).join(','), '--concurrency', String(LOOPS), '--batch-size', '10'],
          ...['--poll-for', String(POLL_FOR), '--fleet-table', table, '--fleet-name', table, '--http-port', String(port)],
        ],
        { AWS_ENDPOINT_URL_DYNAMODB: motoDynamoEndpoint() },
      ),
    );
    try {
      await Promise.all(replicas.map(started));
      await Promise.all(replicas.map((r) => r.waitForLog((l) => l['to'] === 'shared', 30_000)));
      // 500 ms an invocation of up to 10: one replica alone takes about 60 s, the fleet about a third of it.
      const body = (q: string, i: number) => JSON.stringify({ sleepMs: 500, q, i });
      const sentAt = Date.now();
      for (let i = 0; i < MESSAGES; i += 500)
        await sendMessages(
          high.url,
          Array.from({ length: 500 }, (_, k) => body('high', i + k)),
          sqs,
        );
      // Each replica learns of the busy queue at its own next read of the table; then low gets its backlog, so that
      // every replica already serves high when low fills (before, low's owner drains it as a lone replica would).
      while (invokedBodies(endpoint).size < MESSAGES && !(await Promise.all(ports.map(fleetOf))).every((v) => v.busy >= 1))
        await sleep(100);
      const highSeenMs = Date.now() - sentAt;
      for (let i = 0; i < LOW; i += 500)
        await sendMessages(
          low.url,
          Array.from({ length: 500 }, (_, k) => body('low', i + k)),
          sqs,
        );
      const lowSentAt = Date.now();
      await endpoint.waitFor(() => invokedBodies(endpoint).size === MESSAGES + LOW, 120_000);
      const drainMs = Date.now() - sentAt;
      await sleep(1_000);
      // One series per function and queue: a replica that invoked nothing of high has none.
      const per = await Promise.all(
        ports.map(
          async (port) => sample(await fromReplica(port, '/metrics'), 'workerless_invoked_events_total', { queue: high.name }) ?? 0,
        ),
      );
      const startsOf = (q: TestQueue) =>
        endpoint.invocations
          .filter((i) => (i.payload as { Records?: { eventSourceARN?: string }[] }).Records?.[0]?.eventSourceARN === q.arn)
          .map((i) => i.startedAt);
      const [highStarts, lowStarts] = [startsOf(high), startsOf(low)];
      const lastHigh = Math.max(...highStarts);
      const lowWhileHigh = lowStarts.filter((t) => t < lastHigh).length;
      const highAfterLow = highStarts.filter((t) => t > lowSentAt).length;
      console.log(
        `# backlog of ${MESSAGES} on one queue, 3 replicas: drained with ${LOW} more on the next queue in ${drainMs} ms; ` +
          `its messages invoked per replica ${per.join(' ')} (${per.map((n) => `${((100 * n) / MESSAGES).toFixed(0)}%`).join(' ')}); ` +
          `every replica saw it busy ${highSeenMs} ms after the first send; with low's backlog sent ${highAfterLow} high batches started, ` +
          `over ${lastHigh - lowSentAt} ms, and ${lowWhileHigh} low ones before the last of them`,
      );
      assert.equal(
        per.reduce((a, b) => a + b, 0),
        MESSAGES,
      );
      assert.ok(
        per.every((n) => n >= 0.2 * MESSAGES),
        `each replica at least 20%: ${per.join(' ')}`,
      );
      // Strict order across the fleet: low fills once every replica serves high. A loop turns to low only once its
      // receive on high came back empty, after the last high batch was received: only batches received but not yet started then (one a loop at most) may start
      // after a low one. A replica that did not serve high would start about 8 low batches a second meanwhile.
      assert.ok(highAfterLow >= REPLICAS * LOOPS, `high still had batches to give when low filled: ${highAfterLow}`);
      assert.ok(lowWhileHigh <= REPLICAS * LOOPS, `${lowWhileHigh} low batches started while high still gave batches`);
      assert.ok(
        [...invokedBodies(endpoint).values()].every((n) => n === 1),
        'every message invoked once',
      );
      assert.deepEqual(overlapping(endpoint), [], 'no message run twice while in flight');
      for (const r of replicas) assert.equal(await stopDaemon(r), 0);
    } finally {
      for (const r of replicas) if (r.child.exitCode === null) r.child.kill('SIGKILL');
      await endpoint.stop();
    }
  });
});

/** The mean number of invocations of `fn` running over [from, to), from their start and end times; only those started after `startedAfter`, if given. */
function meanInFlight(endpoint: LambdaEndpoint, fn: string, from: number, to: number, startedAfter = -Infinity): number {
  let busyMs = 0;
  for (const inv of endpoint.invocations) {
    if (inv.functionName !== fn || inv.startedAt <= startedAfter) continue;
    const start = Math.max(inv.startedAt, from);
    const end = Math.min(inv.endedAt ?? to, to);
    if (end > start) busyMs += end - start;
  }
  return busyMs / (to - from);
}

describe('one budget for the fleet (issue 40)', { timeout: 300_000 }, () => {
  it('--fleet-concurrency 30 over 3 replicas at --concurrency 20, a 1 s function and a deep backlog: at most 33 at the function, at least 27 on average; after a kill -9 the two left take its share', async () => {
    const TOTAL = 30;
    const MESSAGES = 1_500;
    const endpoint = await startLambdaEndpoint({ functions: { slow: { handler: functionFixture('slow.mjs') } } });
    const server = sqsServers().find((s) => s.name === 'ElasticMQ')!;
    await ensureSqsServer(server);
    const table = uniqueTableName('wl-fleet-budget');
    await createFleetTable(motoDynamoEndpoint(), table);
    const sqs = sqsClient(server.endpoint);
    const queues = await Promise.all(
      Array.from({ length: 6 }, () => createQueue('wl-fleet-budget', { VisibilityTimeout: String(VISIBILITY_S) }, sqs)),
    );
    const ports = await Promise.all(Array.from({ length: REPLICAS }, freePort));
    const replicas = ports.map((port) =>
      startIdleDaemon(
        endpoint.url,
        server.endpoint,
        [
          ...['--function', 'slow', '--queues', queues.map((q) => q.name).join(','), '--concurrency', '20', '--batch-size', '1'],
          ...['--poll-for', String(POLL_FOR), '--fleet-table', table, '--fleet-name', table, '--fleet-concurrency', String(TOTAL)],
          // A 2 s heartbeat (expiry 6 s) keeps the failover short; the failover test runs the default.
          ...['--fleet-heartbeat', '2s', '--http-port', String(port)],
        ],
        { AWS_ENDPOINT_URL_DYNAMODB: motoDynamoEndpoint() },
      ),
    );
    try {
      await Promise.all(replicas.map(started));
      await Promise.all(replicas.map((r) => r.waitForLog((l) => l['to'] === 'shared', 30_000)));
      assert.deepEqual((await Promise.all(ports.map(fleetOf))).map((f) => f.share).sort(), [10, 10, 10]);
      const bodies = Array.from({ length: MESSAGES }, (_, i) => JSON.stringify({ sleepMs: 1_000, i }));
      for (let i = 0; i < MESSAGES; i += 250) await sendMessages(queues[(i / 250) % queues.length]!.url, bodies.slice(i, i + 250), sqs);
      // The busy queues are advertised at the owners' next heartbeats; then every replica runs its share.
      await endpoint.waitFor(() => endpoint.inFlight('slow') >= 20, 20_000);
      await sleep(6_000);
      const steadyFrom = Date.now();
      await sleep(10_000);
      const steady = meanInFlight(endpoint, 'slow', steadyFrom, Date.now());

      const killedAt = Date.now();
      replicas[0]!.child.kill('SIGKILL');
      // Back at the budget: the mean over a second at 27 or more, from the two left. The dead replica's last
      // invocations run on at the endpoint for up to their 1 s (CI once read 27 from them 1 s after the kill, shares
      // still 10+10), so only invocations started after the kill count (the survivors'), in windows that open once
      // every invocation started before it is over.
      const deadTailMs = 1_500;
      let regainedMs = Infinity;
      const after: string[] = [];
      while (Date.now() - killedAt < 30_000) {
        await sleep(250);
        const now = Date.now();
        if (now - killedAt >= after.length * 1_000 + 1_000)
          after.push(
            `${((now - killedAt) / 1000).toFixed(0)}s:${meanInFlight(endpoint, 'slow', now - 1_000, now, killedAt).toFixed(1)}/${endpoint.inFlight('slow')}`,
          );
        if (now - 1_000 >= killedAt + deadTailMs && meanInFlight(endpoint, 'slow', now - 1_000, now, killedAt) >= 27) {
          regainedMs = now - 1_000 - killedAt;
          break;
        }
      }
      // The survivors' shares once they saw the death (their view is read until it shows 2 members, within the bound).
      let shares: number[] = [];
      while (Date.now() - killedAt < KILL_POLL_MS) {
        const views = await Promise.all(ports.slice(1).map(fleetOf));
        shares = views.map((f) => f.share);
        if (views.every((v) => v.members.length === 2)) break;
        await sleep(250);
      }
      await endpoint.waitFor(() => invokedBodies(endpoint).size === MESSAGES, 180_000);
      await sleep(1_000);
      const peak = endpoint.peakConcurrency('slow');
      console.log(
        `# fleet budget ${TOTAL} over 3 replicas (--concurrency 20 each): peak ${peak} at the function, mean ${steady.toFixed(1)} over 10 s; after kill -9 shares ${shares.join('+')}, mean of 27+ again ${regainedMs} ms after the kill (mean of the survivors'/in flight each second: ${after.join(' ')})`,
      );
      assert.ok(peak <= TOTAL * 1.1, `peak in flight at most ${TOTAL * 1.1}: ${peak}`);
      assert.ok(steady >= TOTAL * 0.9, `mean in flight at least ${TOTAL * 0.9}: ${steady.toFixed(1)}`);
      assert.deepEqual(shares, [15, 15]);
      assert.ok(regainedMs <= KILL_POLL_MS, `the share taken within the failover bound: ${regainedMs} ms`);
      assert.deepEqual(overlapping(endpoint), [], 'no message run twice while in flight');
      for (const r of replicas.slice(1)) assert.equal(await stopDaemon(r), 0);
    } finally {
      for (const r of replicas) if (r.child.exitCode === null) r.child.kill('SIGKILL');
      await endpoint.stop();
    }
  });
});

describe('a replica joins a fleet of 3 (issue 40)', { timeout: 300_000 }, () => {
  it('the 4th owns about a quarter of 240 queues within 2 heartbeats of its first, the 3 only give queues away, and what they gave is what it owns', async () => {
    const QUEUE_COUNT = 240;
    const HEARTBEAT_MS = 2_000;
    const endpoint = await startLambdaEndpoint({ functions: { echo: { handler: functionFixture('echo.mjs') } } });
    const server = sqsServers().find((s) => s.name === 'ElasticMQ')!;
    await ensureSqsServer(server);
    const table = uniqueTableName('wl-fleet-join');
    await createFleetTable(motoDynamoEndpoint(), table);
    const sqs = sqsClient(server.endpoint);
    const queues = await Promise.all(Array.from({ length: QUEUE_COUNT }, () => createQueue('wl-fleet-join', {}, sqs)));
    const ports = await Promise.all(Array.from({ length: 4 }, freePort));
    const start = (port: number) =>
      startIdleDaemon(
        endpoint.url,
        server.endpoint,
        [
          ...['--function', 'echo', '--queues', queues.map((q) => q.name).join(','), '--poll-for', String(POLL_FOR)],
          ...['--fleet-table', table, '--fleet-name', table, '--fleet-heartbeat', `${HEARTBEAT_MS}ms`, '--http-port', String(port)],
        ],
        { AWS_ENDPOINT_URL_DYNAMODB: motoDynamoEndpoint() },
      );
    const replicas = ports.slice(0, 3).map(start);
    try {
      await Promise.all(replicas.map(started));
      await Promise.all(replicas.map((r) => r.waitForLog((l) => l['to'] === 'shared', 30_000)));
      const before = await Promise.all(ports.slice(0, 3).map(fleetOf));
      assert.equal(
        before.reduce((n, f) => n + f.owned, 0),
        QUEUE_COUNT,
      );

      const fourth = start(ports[3]!);
      replicas.push(fourth);
      await started(fourth);
      const firstRound = await fourth.waitForLog((l) => l['msg'] === 'fleet members changed', 30_000);
      // The peers count it from their next read, at most a heartbeat on: by 2 heartbeats they gave its queues away.
      await sleep(2 * HEARTBEAT_MS);
      const at = Date.now();
      const peers = await Promise.all(ports.slice(0, 3).map(fleetOf));
      // It serves every queue while it watches the members for an expiry (joining), then only its own.
      const shared = await fourth.waitForLog((l) => l['to'] === 'shared', 30_000);
      const joined = await fleetOf(ports[3]!);
      const moved = before.reduce((n, f, i) => n + f.owned - peers[i]!.owned, 0);
      console.log(
        `# 3 -> 4 replicas on ${QUEUE_COUNT} queues: owned ${before.map((f) => f.owned).join('+')} -> ${peers.map((f) => f.owned).join('+')} ${at - Number(firstRound['time'])} ms after the 4th's first round, and ${joined.owned} by the 4th (shared ${Number(shared['time']) - Number(firstRound['time'])} ms after its first round); ${moved} queues (${((100 * moved) / QUEUE_COUNT).toFixed(1)}%) changed owner`,
      );
      assert.deepEqual(
        [...peers, joined].map((f) => f.members.length),
        [4, 4, 4, 4],
      );
      for (const [i, f] of before.entries()) assert.ok(peers[i]!.owned <= f.owned, `replica ${i} only gave queues away`);
      assert.equal(moved, joined.owned, 'the queues that moved are the ones the 4th took: each queue owned once');
      // Fairness over 10,000 names is within 5.1% (test/unit/fleet/placement.test.ts); 240 draws of 1 in 4 vary by
      // about 7 (sqrt(240 x 1/4 x 3/4)), so the bound here is 4 of those either side of 60.
      assert.ok(Math.abs(joined.owned - QUEUE_COUNT / 4) <= 28, `about a quarter: ${joined.owned}`);
      for (const r of replicas) assert.equal(await stopDaemon(r), 0);
    } finally {
      for (const r of replicas) if (r.child.exitCode === null) r.child.kill('SIGKILL');
      await endpoint.stop();
    }
  });
});
