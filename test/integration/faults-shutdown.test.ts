// Issue 8, case 6: SIGTERM while long polls are in flight. The polls are no longer aborted, so what SQS hands
// them after the signal is invoked and deleted before the daemon exits 0; nothing is left invisible for a
// visibility timeout. SQS goes through a fault proxy without faults, to see which receives are in flight.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bodies, createQueue, drainQueue, localstackEndpoint, messageCounts, sendMessages } from '../support/aws.ts';
import { startDaemon, started } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { describeRuns, overlappingRuns, runsByMessage, succeededIds } from '../support/message-runs.ts';

describe('fault injection: SIGTERM during long polls', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({ functions: { slow: { handler: functionFixture('slow.mjs'), env: { SLOW_MS: '300' } } } });
  });
  after(() => endpoint.stop());

  it('6. messages that reach the long polls after SIGTERM are invoked and deleted, or made visible again at once, before exit 0; none is left invisible', async () => {
    const pollForSec = 10;
    const concurrency = 3;
    const q = await createQueue('wl-fault-sigterm-poll', { VisibilityTimeout: '30' });
    const sqsProxy = await startFaultProxy({ upstream: localstackEndpoint() });
    const daemon = startDaemon(
      endpoint.url,
      ['--function', 'slow', '--queues', q.name, '--concurrency', String(concurrency), '--poll-for', String(pollForSec)],
      {
        AWS_ENDPOINT_URL_SQS: sqsProxy.url,
      },
    );
    try {
      await started(daemon);
      // Idle: the loops share one long poll per queue (issue 24; before, each loop sat in its own), and short
      // receives answer in milliseconds.
      const pending = () => sqsProxy.calls('ReceiveMessage').filter((c) => c.endedAt === undefined);
      // A fresh poll (at most 3 s old), so it is still open after the messages are sent on a loaded machine; and
      // open for half a second already: a short receive of the start-up passes answers in milliseconds.
      await until(
        () => pending().length === 1 && pending().every((c) => Date.now() - c.at > 500 && Date.now() - c.at < 3_000),
        25_000,
        "the idle loops' fresh long poll",
        20,
      );
      const polling = pending();
      const sigtermAt = Date.now();
      daemon.child.kill('SIGTERM');
      // A long poll answers as soon as the first message lands, possibly before SendMessageBatch returns.
      const sendingAt = Date.now();
      const ids = await sendMessages(q.url, bodies(10, 'after-sigterm'));
      const { code } = await daemon.exited;
      const exitMs = Date.now() - sigtermAt;

      assert.equal(code, 0, daemon.stderr());
      assert.ok(
        polling.some((c) => c.endedAt === undefined || c.endedAt > sendingAt),
        'a long poll was still open when the messages were sent',
      );
      const counts = await messageCounts(q.url);
      assert.equal(counts.notVisible, 0, `no message left invisible: ${JSON.stringify(counts)}`);

      const runs = runsByMessage(endpoint, q.arn);
      const done = succeededIds(endpoint, q.arn);
      const left = (await drainQueue(q.url, { waitTimeSec: 0 })).map((m) => m.MessageId!);
      const summary = `${describeRuns(runs, sigtermAt)}; left visible: ${left.length}`;
      // What a poll returns after the stop is released at once (docs/delivery.md, Idle), or invoked if a loop took it.
      assert.ok(done.size + left.length === ids.length, `every message invoked or visible again: ${summary}`);
      for (const id of ids)
        assert.ok(done.has(id) !== left.includes(id), `${id}: either invoked and deleted, or still visible: ${summary}`);
      assert.deepEqual(
        [...runs.keys()].filter((id) => !ids.includes(id)),
        [],
      );
      assert.ok(
        [...runs.values()].every((list) => list.length === 1 && list[0]!.startedAt >= sigtermAt),
        summary,
      );
      assert.deepEqual(overlappingRuns(runs), []);
      assert.ok(exitMs < pollForSec * 1000 + 3_000, `exited ${exitMs} ms after SIGTERM`);
      const states = daemon
        .logs()
        .filter((l) => l['msg'] === 'dispatcher state')
        .map((l) => l['state']);
      assert.deepEqual(states, ['running', 'draining', 'stopped']);
      console.log(
        `SIGTERM during ${polling.length} long polls: ${done.size} of ${ids.length} messages sent after it invoked and deleted, ${left.length} left visible, exit 0 after ${exitMs} ms`,
      );
    } finally {
      if (daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
      await sqsProxy.close();
    }
  });
});
