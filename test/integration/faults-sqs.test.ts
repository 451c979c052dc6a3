// Issue 8, cases 1 and 2: SQS stops answering (a hung ReceiveMessage) or refuses connections, between the real
// CLI and LocalStack, through a fault proxy. Asserted by message id from the test Lambda endpoint's records.
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { bodies, countMessages, createQueue, localstackEndpoint, messageCounts, sendMessages } from '../support/aws.ts';
import { problems, startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { describeRuns, overlappingRuns, runsByMessage, succeededIds } from '../support/message-runs.ts';
import { RECEIVE_MARGIN_MS } from '../../src/core/queue.ts';

describe('fault injection between workerless and SQS', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({ functions: { record: { handler: functionFixture('record.mjs') } } });
  });
  after(() => endpoint.stop());

  it('1. a hung ReceiveMessage: each hung call is given up at its deadline with a warning, and dispatching carries on', async () => {
    const pollForSec = 1;
    const q = await createQueue('wl-fault-hung-receive', { VisibilityTimeout: '30' });
    const sqsProxy = await startFaultProxy({ upstream: localstackEndpoint() });
    const daemon = startDaemon(
      endpoint.url,
      ['--function', 'record', '--queues', q.name, '--concurrency', '4', '--poll-for', String(pollForSec)],
      {
        AWS_ENDPOINT_URL_SQS: sqsProxy.url,
      },
    );
    try {
      await started(daemon);
      const early = await sendMessages(q.url, bodies(20, 'before'));
      await until(() => succeededIds(endpoint, q.arn).size === early.length, 15_000, 'the first messages processed', 50);

      // The proxy accepts every ReceiveMessage for 10 s and never answers; those connections stay open after.
      const rule = sqsProxy.inject({ operation: 'ReceiveMessage', fault: { kind: 'hang' }, forMs: 10_000 });
      await sqsProxy.waitForCall((c) => c.fault === 'hang', 5_000);
      const late = await sendMessages(q.url, bodies(20, 'during'));
      await rule.ended;
      const windowEnd = Date.now();
      assert.ok(sqsProxy.hungConnections() > 0, 'hung connections outlive the window');
      await until(
        () => succeededIds(endpoint, q.arn).size === early.length + late.length,
        20_000,
        'every message processed after the hang',
        50,
      );
      const lastStart = Math.max(...[...runsByMessage(endpoint, q.arn).values()].flat().map((r) => r.startedAt));
      await until(async () => (await countMessages(q.url)) === 0, 10_000, 'the queue empty', 100);
      assert.equal(await stopDaemon(daemon), 0);

      const runs = runsByMessage(endpoint, q.arn);
      assert.deepEqual([...runs.keys()].sort(), [...early, ...late].sort());
      assert.ok(
        [...runs.values()].every((list) => list.length === 1),
        `each message invoked once: ${describeRuns(runs, windowEnd)}`,
      );
      assert.deepEqual(overlappingRuns(runs), []);

      // Every hung call was abandoned by the daemon at its deadline (wait time + margin), not left to the proxy.
      const hung = sqsProxy.calls('ReceiveMessage').filter((c) => c.fault === 'hang');
      assert.ok(hung.length >= 2, `hung calls: ${hung.length}`);
      for (const c of hung) {
        assert.ok(c.clientClosed, 'the daemon closed the hung call itself');
        const heldMs = (c.endedAt ?? Infinity) - c.at;
        assert.ok(heldMs <= pollForSec * 1000 + RECEIVE_MARGIN_MS + 1_000, `a hung receive was held ${heldMs} ms`);
      }
      const warnings = daemon.logs().filter((l) => l['level'] === 40 && String(l['msg']).includes('deadline'));
      assert.ok(warnings.length > 0, 'a warning names the deadline');
      assert.equal((warnings[0]!['err'] as { code?: string }).code, 'TimeoutError');
      console.log(
        `hung receive: ${hung.length} hung calls, held ${hung.map((c) => (c.endedAt ?? 0) - c.at).join('/')} ms; ` +
          `all ${late.length} messages sent during the hang invoked by ${lastStart - windowEnd} ms after it ended`,
      );
    } finally {
      if (daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
      await sqsProxy.close();
    }
  });

  it('2. SQS refusing connections: the first invocation comes within 2 s of SQS answering again, after each outage', async () => {
    const q = await createQueue('wl-fault-refuse', { VisibilityTimeout: '30' });
    const sqsProxy = await startFaultProxy({ upstream: localstackEndpoint() });
    const daemon = startDaemon(endpoint.url, ['--function', 'record', '--queues', q.name, '--concurrency', '2', '--poll-for', '1'], {
      AWS_ENDPOINT_URL_SQS: sqsProxy.url,
    });
    const latencies: number[] = [];
    const sent: string[] = [];
    try {
      await started(daemon);
      for (let outage = 0; outage < 3; outage++) {
        // 6 s: long enough for the receive back-off to reach its cap (0.1 s doubling to 1 s).
        const rule = sqsProxy.inject({ fault: { kind: 'refuse' }, forMs: 6_000 });
        // After the long polls that were in flight when the window opened have returned (--poll-for 1).
        await delay(2_500);
        const ids = await sendMessages(q.url, bodies(3, `outage-${outage}`));
        sent.push(...ids);
        await rule.ended; // the proxy accepts connections again
        const back = Date.now();
        await until(
          () => ids.every((id) => succeededIds(endpoint, q.arn).has(id)),
          15_000,
          `the messages of outage ${outage} processed`,
          20,
        );
        const runs = runsByMessage(endpoint, q.arn);
        const first = Math.min(...ids.map((id) => runs.get(id)?.[0]?.startedAt ?? Infinity));
        assert.ok(first >= back, 'nothing was received while SQS refused connections');
        latencies.push(first - back);
        // Deleted before the next outage: a delete caught by an outage is another case (see src/settle/delete-batcher.ts).
        await until(async () => (await countMessages(q.url)) === 0, 10_000, `the messages of outage ${outage} deleted`, 50);
      }
      assert.equal(await stopDaemon(daemon), 0);
      const refused = sqsProxy.calls().filter((c) => c.fault === 'refuse').length;
      console.log(
        `refused connections: first invocation ${latencies.join(' / ')} ms after SQS answered again (${refused} requests reset on open connections)`,
      );
      for (const ms of latencies) assert.ok(ms < 2_000, `first invocation ${ms} ms after the outage (latencies ${latencies.join(', ')})`);
      const runs = runsByMessage(endpoint, q.arn);
      assert.deepEqual([...runs.keys()].sort(), [...sent].sort());
      assert.ok([...runs.values()].every((list) => list.length === 1 && list[0]!.status === 'success'));
      assert.deepEqual(await messageCounts(q.url), { visible: 0, notVisible: 0, delayed: 0 }, problems(daemon));
      assert.ok(daemon.logs().some((l) => l['msg'] === 'ReceiveMessage works again'));
    } finally {
      if (daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
      await sqsProxy.close();
    }
  });
});
