// Issue 8, case 5: errors that make the function unusable (a policy change, a deleted alias, KMS, an update in
// progress) are held like throttles: the messages are kept invisible (their receive count does not climb
// towards the DLQ), receiving pauses, the pause is logged, and processing resumes on its own. A 413 stays a
// failure of its own messages. Faults sit between the real CLI and the test Lambda endpoint.
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { after, afterEach, before, describe, it } from 'node:test';
import { bodies, countMessages, createQueue, createQueueWithDlq, localstackEndpoint, sendMessages } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { problems, startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { describeRuns, overlappingRuns, runsByMessage, succeededIds } from '../support/message-runs.ts';

const PAUSED = 'the function cannot be invoked; pausing it, messages are kept invisible';
const RESUMED = 'the function can be invoked again; resuming';

describe('fault injection: a function that cannot be invoked', () => {
  let endpoint: LambdaEndpoint;
  let sqsProxy: FaultProxy | undefined;
  let lambdaProxy: FaultProxy | undefined;
  let daemon: CliRun | undefined;
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({ functions: { record: { handler: functionFixture('record.mjs') } } });
  });
  after(() => endpoint.stop());
  afterEach(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    daemon = undefined;
    await sqsProxy?.close();
    await lambdaProxy?.close();
  });

  const start = async (queueName: string): Promise<CliRun> => {
    sqsProxy = await startFaultProxy({ upstream: localstackEndpoint() });
    lambdaProxy = await startFaultProxy({ upstream: endpoint.url });
    daemon = startDaemon(
      lambdaProxy.url,
      ['--function', 'record', '--queues', queueName, '--concurrency', '3', '--batch-size', '2', '--poll-for', '1'],
      {
        AWS_ENDPOINT_URL_SQS: sqsProxy.url,
      },
    );
    await started(daemon);
    return daemon;
  };

  const cases = [
    { status: 403, errorType: 'AccessDeniedException' },
    { status: 404, errorType: 'ResourceNotFoundException' },
    { status: 502, errorType: 'KMSDisabledException' },
    { status: 409, errorType: 'ResourceConflictException' },
  ] as const;
  for (const { status, errorType } of cases) {
    it(`5. ${status} ${errorType} for 4 s: messages kept (empty DLQ), receiving paused, logged, resumed on its own`, async () => {
      // Visibility 2 s and maxReceiveCount 2: a message given back even once during the window would climb.
      const { queue: q, dlq } = await createQueueWithDlq(`wl-fault-unusable-${status}`, 2, { VisibilityTimeout: '2' });
      const daemon = await start(q.name);
      const early = await sendMessages(q.url, bodies(4, 'before'));
      await until(() => early.every((id) => succeededIds(endpoint, q.arn).has(id)), 10_000, 'the first messages processed', 50);

      // The idle receive rate (3 loops, 1 s long polls) as the baseline.
      const baselineStart = Date.now();
      await delay(2_000);
      const receivesIn = (from: number, to: number) => sqsProxy!.calls('ReceiveMessage').filter((c) => c.at >= from && c.at < to).length;
      const baselineRate = receivesIn(baselineStart, Date.now()) / 2;

      const rule = lambdaProxy!.inject({
        operation: 'Invoke',
        invocationType: 'RequestResponse',
        fault: { kind: 'status', status, errorType },
        forMs: 4_000,
      });
      const windowStart = Date.now();
      const late = await sendMessages(q.url, bodies(6, 'during'));
      await rule.ended;
      const windowEnd = Date.now();
      const windowRate = receivesIn(windowStart, windowEnd) / ((windowEnd - windowStart) / 1000);
      await until(() => late.every((id) => succeededIds(endpoint, q.arn).has(id)), 20_000, 'processing resumed', 50);
      const runs = runsByMessage(endpoint, q.arn);
      const resumedAt = Math.min(...late.map((id) => runs.get(id)!.find((r) => r.status === 'success')!.startedAt));
      await until(async () => (await countMessages(q.url)) === 0, 5_000, 'the queue empty', 50);
      assert.equal(await stopDaemon(daemon), 0);

      const summary = describeRuns(runs, windowStart);
      const faulted = lambdaProxy!.calls('Invoke').filter((c) => c.fault === 'status');
      assert.ok(faulted.length > 0, 'the window was really met');
      assert.equal(await countMessages(dlq.url), 0, `nothing reached the DLQ\n${problems(daemon)}`);
      // Only the endpoint's runs count as runs: a faulted Invoke never reached it.
      for (const id of [...early, ...late]) {
        assert.deepEqual(
          runs.get(id)?.map((r) => [r.status, r.receiveCount]),
          [['success', 1]],
          `${id}: processed once, never given back: ${summary}`,
        );
      }
      assert.deepEqual(overlappingRuns(runs), []);
      const paused = daemon.logs().filter((l) => l['msg'] === PAUSED);
      // Receiving paused: no ReceiveMessage starts while a pause lasts (100 ms of slack for one sent just before
      // the pause and still on its way). Before issue 24 this compared with the idle rate (3 loops, each with its
      // own 1 s long poll), which the idle loops' one shared poll per queue now brings down to the paused rate.
      const pauses = paused.map((l) => [Number(l['time']), Number(l['time']) + Number(l['pauseMs'])] as const);
      const whilePaused = sqsProxy!.calls('ReceiveMessage').filter((c) => pauses.some(([from, to]) => c.at > from + 100 && c.at < to));
      assert.deepEqual(
        whilePaused.map((c) => c.at),
        [],
        `receives started while paused (${JSON.stringify(pauses)}); per second: ${baselineRate} before, ${windowRate.toFixed(2)} in the window`,
      );

      assert.ok(paused.length >= 1, problems(daemon));
      assert.ok(paused.every((l) => (l['err'] as { code?: string }).code === errorType));
      // Logged once per pause (1 s doubling), not once per loop or per call.
      assert.ok(paused.length <= 4, `${paused.length} pause lines for ${faulted.length} refused calls`);
      assert.ok(daemon.logs().some((l) => l['msg'] === RESUMED));
      console.log(
        `${errorType}: receives ${baselineRate}/s before, ${windowRate.toFixed(2)}/s while paused; ${faulted.length} refused Invokes, ` +
          `${paused.length} pause lines; first run ${resumedAt - windowEnd} ms after the window`,
      );
    });
  }

  it('5. a 413 stays a failure of its own messages: no pause, the message returns and the next works', async () => {
    const q = await createQueue('wl-fault-unusable-413', { VisibilityTimeout: '1' });
    const daemon = await start(q.name);
    lambdaProxy!.inject({
      operation: 'Invoke',
      invocationType: 'RequestResponse',
      fault: { kind: 'status', status: 413, errorType: 'RequestTooLargeException' },
      count: 1,
    });
    const [id] = await sendMessages(q.url, ['too-large-once']);
    await until(() => succeededIds(endpoint, q.arn).has(id!), 10_000, 'the message processed on its second delivery', 50);
    await until(async () => (await countMessages(q.url)) === 0, 5_000, 'the queue empty', 50);
    assert.equal(await stopDaemon(daemon), 0);
    assert.deepEqual(
      runsByMessage(endpoint, q.arn)
        .get(id!)
        ?.map((r) => r.receiveCount),
      [2],
      'given back once, then processed',
    );
    assert.ok(
      daemon
        .logs()
        .some((l) => l['msg'] === 'Invoke failed; messages stay on the queue' && (l['err'] as { kind?: string }).kind === 'rejected'),
    );
    assert.ok(!daemon.logs().some((l) => l['msg'] === PAUSED), 'the function was not paused');
  });
});
