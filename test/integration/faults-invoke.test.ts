// Issue 8, case 4: an Invoke whose outcome is unknown (the connection reset after the request was sent, a
// Lambda 5xx) must not be retried while the first invocation may still run. Documented policy (docs/failure-modes.md, "When
// AWS misbehaves"): the batch is held, invisible, for one visibility timeout and then invoked again; after 3
// such holds it is left to the queue's redrive rules. Faults sit between the real CLI and the test Lambda
// endpoint; SQS goes through a fault proxy without faults, so every delete is seen.
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { after, afterEach, before, describe, it } from 'node:test';
import { countMessages, createQueue, localstackEndpoint, sendMessages, type TestQueue } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { problems, startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { startFaultProxy, type CallRecord, type FaultProxy } from '../support/fault-proxy.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { describeRuns, overlappingRuns, runsByMessage } from '../support/message-runs.ts';

const gaps = (calls: readonly CallRecord[]) => calls.slice(1).map((c, i) => c.at - calls[i]!.at);
/** Timers may fire a millisecond or two early against Date.now(). */
const CLOCK_SLACK_MS = 20;

describe('fault injection: Invoke outcomes that are unknown', () => {
  let endpoint: LambdaEndpoint;
  let sqsProxy: FaultProxy;
  let lambdaProxy: FaultProxy;
  let daemon: CliRun | undefined;
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({ functions: { slow: { handler: functionFixture('slow.mjs'), timeoutSec: 30 } } });
  });
  after(() => endpoint.stop());
  afterEach(async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    daemon = undefined;
    await sqsProxy.close();
    await lambdaProxy.close();
  });

  /** A queue with one message, and the daemon (2 loops, so a spare one polls) started against both proxies. */
  const setUp = async (prefix: string, visibilitySec: number, body: string): Promise<{ q: TestQueue; id: string; daemon: CliRun }> => {
    sqsProxy = await startFaultProxy({ upstream: localstackEndpoint() });
    lambdaProxy = await startFaultProxy({ upstream: endpoint.url });
    const q = await createQueue(prefix, { VisibilityTimeout: String(visibilitySec) });
    const [id] = await sendMessages(q.url, [body]);
    const run = startDaemon(lambdaProxy.url, ['--function', 'slow', '--queues', q.name, '--concurrency', '2'], {
      AWS_ENDPOINT_URL_SQS: sqsProxy.url,
    });
    daemon = run;
    return { q, id: id!, daemon: run };
  };
  const invokes = () => lambdaProxy.calls('Invoke').filter((c) => c.invocationType === 'RequestResponse');
  const deletes = () => sqsProxy.calls('DeleteMessageBatch').filter((c) => c.status === 200);

  it('4a. a connection reset after the Invoke was sent: held for one visibility timeout while the first run goes on, then invoked again and deleted once', async () => {
    const visibilitySec = 3;
    const { q, id, daemon } = await setUp('wl-fault-invoke-reset', visibilitySec, JSON.stringify({ sleepMs: 1_500 }));
    // Reset as soon as the request has reached the endpoint: the function is running when the daemon sees it.
    lambdaProxy.inject({
      operation: 'Invoke',
      invocationType: 'RequestResponse',
      fault: { kind: 'reset-after-send', when: 'sent' },
      count: 1,
    });
    await started(daemon);
    await until(
      () =>
        runsByMessage(endpoint, q.arn)
          .get(id)
          ?.filter((r) => r.status === 'success').length === 2,
      20_000,
      'two runs',
      50,
    );
    await until(async () => (await countMessages(q.url)) === 0, 5_000, 'the message deleted', 50);
    await delay(500);
    assert.equal(await stopDaemon(daemon), 0);

    const runs = runsByMessage(endpoint, q.arn);
    const [first, second] = runs.get(id)!;
    const summary = describeRuns(runs, first!.startedAt);
    assert.equal(runs.get(id)!.length, 2, `the reset run really ran, and one more: ${summary}`);
    assert.deepEqual(overlappingRuns(runs), [], summary);
    assert.equal(second!.receiveCount, 1, 'held, not handed back to the queue');
    const [reset, retry] = invokes();
    assert.equal(reset?.fault, 'reset-after-send');
    assert.equal(retry?.status, 200);
    const gapMs = retry.at - reset.at;
    assert.ok(
      gapMs >= visibilitySec * 1000 - CLOCK_SLACK_MS,
      `invoked again ${gapMs} ms after the reset one, under the ${visibilitySec} s visibility timeout`,
    );
    assert.equal(invokes().length, 2);
    assert.equal(deletes().length, 1, 'deleted once');
    const hold = daemon
      .logs()
      .find(
        (l) => l['msg'] === 'Invoke outcome unknown (the function may still be running); holding the messages before invoking them again',
      );
    assert.equal(hold?.['holdMs'], visibilitySec * 1000, problems(daemon));
    assert.deepEqual(hold?.['messageIds'], [id]);
    console.log(
      `unknown outcome (reset after send): invoked again ${gapMs} ms later; first run ${first!.endedAt! - first!.startedAt} ms, ended ${second!.startedAt - first!.endedAt!} ms before the second`,
    );
  });

  it('4b. a Lambda 500: held for one visibility timeout, then invoked again and deleted once', async () => {
    const visibilitySec = 2;
    const { q, id, daemon } = await setUp('wl-fault-invoke-5xx', visibilitySec, JSON.stringify({ sleepMs: 100 }));
    lambdaProxy.inject({
      operation: 'Invoke',
      invocationType: 'RequestResponse',
      fault: { kind: 'status', status: 500, errorType: 'ServiceException' },
      count: 1,
    });
    await started(daemon);
    await until(() => runsByMessage(endpoint, q.arn).get(id)?.[0]?.status === 'success', 15_000, 'the run', 50);
    await until(async () => (await countMessages(q.url)) === 0, 5_000, 'the message deleted', 50);
    await delay(visibilitySec * 1000);
    assert.equal(await stopDaemon(daemon), 0);

    const runs = runsByMessage(endpoint, q.arn);
    assert.equal(runs.get(id)?.length, 1, describeRuns(runs, 0));
    assert.equal(runs.get(id)![0]!.receiveCount, 1);
    const calls = invokes();
    assert.deepEqual(
      calls.map((c) => c.status),
      [500, 200],
    );
    const [gapMs] = gaps(calls);
    assert.ok(gapMs! >= visibilitySec * 1000 - CLOCK_SLACK_MS, `invoked again ${gapMs} ms after the 500`);
    assert.equal(deletes().length, 1, 'deleted once');
    console.log(`unknown outcome (500): invoked again ${gapMs} ms later`);
  });

  it('4c. after 3 holds the batch is left to the queue: it comes back with a higher receive count and is processed once', async () => {
    const visibilitySec = 1;
    const { q, id, daemon } = await setUp('wl-fault-invoke-give-up', visibilitySec, JSON.stringify({ sleepMs: 100 }));
    lambdaProxy.inject({
      operation: 'Invoke',
      invocationType: 'RequestResponse',
      fault: { kind: 'status', status: 502, errorType: 'ServiceException' },
      count: 4,
    });
    await started(daemon);
    await until(() => runsByMessage(endpoint, q.arn).get(id)?.[0]?.status === 'success', 20_000, 'the run', 50);
    await until(async () => (await countMessages(q.url)) === 0, 5_000, 'the message deleted', 50);
    await delay(visibilitySec * 1000);
    assert.equal(await stopDaemon(daemon), 0);

    const calls = invokes();
    assert.deepEqual(
      calls.map((c) => c.status),
      [502, 502, 502, 502, 200],
      problems(daemon),
    );
    const held = gaps(calls.slice(0, 4));
    assert.ok(
      held.every((ms) => ms >= visibilitySec * 1000 - CLOCK_SLACK_MS),
      `holds ${held.join(', ')} ms`,
    );
    const runs = runsByMessage(endpoint, q.arn);
    assert.equal(runs.get(id)?.length, 1);
    assert.equal(runs.get(id)![0]!.receiveCount, 2, 'given back to the queue after the 4th unknown outcome, then received again');
    const gaveUp = daemon.logs().filter((l) => l['msg'] === 'Invoke failed; messages stay on the queue');
    assert.equal(gaveUp.length, 1);
    assert.deepEqual(gaveUp[0]!['messageIds'], [id]);
    assert.equal(deletes().length, 1, 'deleted once');
    console.log(
      `unknown outcome x4: holds of ${held.join(' / ')} ms, then back on the queue; received again and invoked ${calls[4]!.at - calls[3]!.at} ms after the 4th`,
    );
  });
});
