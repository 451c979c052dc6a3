// `workerless check` against LocalStack (SQS, CloudWatch) and the test Lambda endpoint: one test per failing
// AWS check (missing queue, SQS access denied, missing function, refused PutMetricData) and one all-ok run.
// Each asserts the exit code and the exact lines, and that the other checks still ran.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { after, afterEach, before, describe, it } from 'node:test';
import { ListMetricsCommand } from '@aws-sdk/client-cloudwatch';
import {
  cloudWatchClient,
  countMessages,
  createQueue,
  deleteQueue,
  localstackEndpoint,
  sendMessages,
  type TestQueue,
} from '../support/aws.ts';
import { runCli, type CliRun } from '../support/cli.ts';
import { awsTestEnv } from '../support/aws.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';

const record = fileURLToPath(new URL('../fixtures/functions/record.mjs', import.meta.url));
const NOTE =
  'note sqs:ReceiveMessage, sqs:DeleteMessage, sqs:ChangeMessageVisibility are needed by a run but not checked: only receiving (which hides messages) or changing messages could prove them';

/** Exit code and stdout lines; stderr must be empty (no stack trace, no log lines). */
async function outcome(run: CliRun): Promise<{ code: number | null; lines: string[] }> {
  const { code } = await run.exited;
  assert.equal(run.stderr(), '', 'nothing on stderr');
  return { code, lines: run.stdout().trimEnd().split('\n') };
}

describe('workerless check against LocalStack and the test Lambda endpoint', { timeout: 60_000 }, () => {
  let endpoint: LambdaEndpoint;
  let queue: TestQueue;
  let proxy: FaultProxy | undefined;
  /** A namespace of its own per test, so the CloudWatch assertion reads only this run's datum. */
  let name: string;
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({ handlerOutput: 'ignore', functions: { record: { handler: record } } });
    queue = await createQueue('wl-check');
  });
  after(async () => {
    await endpoint.stop();
    await deleteQueue(queue.url);
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
    endpoint.reset();
  });
  const check = (args: string[], env: Record<string, string> = {}): CliRun => {
    name = `check-${randomUUID().slice(0, 8)}`;
    return runCli(['check', '--name', name, ...args], { ...awsTestEnv({ lambdaEndpoint: endpoint.url }), ...env });
  };
  const queueOk = () => `ok   queue ${queue.name} (${queue.url}, fifo: no, visibility 30 s)`;

  it('all ok: exit 0, one line per check, the CheckRun datum in CloudWatch, and no message received', async () => {
    await sendMessages(queue.url, ['stays']);
    const { code, lines } = await outcome(check(['--function', 'record', '--queues', queue.name]));
    assert.equal(code, 0, lines.join('\n'));
    assert.deepEqual(lines, [
      queueOk(),
      'ok   function record (DryRun invoke allowed)',
      `ok   metrics Workerless-${name} (PutMetricData allowed; sent CheckRun = 1)`,
      NOTE,
    ]);
    // DryRun ran nothing; the message is still there and visible: the check received nothing.
    assert.equal(endpoint.invocations.length, 0);
    assert.deepEqual(
      endpoint.rejected.map((r) => [r.functionName, r.statusCode]),
      [['record', 204]],
    );
    assert.equal(await countMessages(queue.url), 1);
    const metrics = await cloudWatchClient().send(new ListMetricsCommand({ Namespace: `Workerless-${name}` }));
    assert.deepEqual(
      metrics.Metrics?.map((m) => m.MetricName),
      ['CheckRun'],
    );
  });

  it('a missing queue: exit 1, the queue named with the SQS error, every other check still run', async () => {
    const missing = `wl-check-missing-${randomUUID().slice(0, 8)}`;
    const { code, lines } = await outcome(check(['--function', 'record', '--queues', `${queue.name},${missing}`]));
    assert.equal(code, 1);
    assert.deepEqual(lines, [
      queueOk(),
      `FAIL queue ${missing}: does not exist (QueueDoesNotExist)`,
      'ok   function record (DryRun invoke allowed)',
      `ok   metrics Workerless-${name} (PutMetricData allowed; sent CheckRun = 1)`,
      NOTE,
    ]);
  });

  it('SQS access denied: exit 1, naming the IAM actions the queue needs', async () => {
    proxy = await startFaultProxy({ upstream: localstackEndpoint() });
    proxy.inject({ operation: 'GetQueueUrl', fault: { kind: 'status', status: 403, errorType: 'AccessDenied' } });
    const { code, lines } = await outcome(
      check(['--function', 'record', '--queues', queue.name, '--metrics', 'off'], { AWS_ENDPOINT_URL_SQS: proxy.url }),
    );
    assert.equal(code, 1);
    assert.deepEqual(lines, [
      `FAIL queue ${queue.name}: access denied (needs sqs:GetQueueUrl, sqs:GetQueueAttributes)`,
      'ok   function record (DryRun invoke allowed)',
      NOTE,
    ]);
    assert.equal(proxy.calls('GetQueueUrl').length, 1);
    assert.equal(proxy.calls('GetQueueAttributes').length, 0);
  });

  it('a missing function: exit 1 (the endpoint answered 404), the queue and metrics checks still ok', async () => {
    const { code, lines } = await outcome(check(['--function', 'no-such-fn', '--queues', queue.name]));
    assert.equal(code, 1);
    assert.deepEqual(lines, [
      queueOk(),
      'FAIL function no-such-fn: does not exist (ResourceNotFoundException)',
      `ok   metrics Workerless-${name} (PutMetricData allowed; sent CheckRun = 1)`,
      NOTE,
    ]);
    assert.deepEqual(
      endpoint.rejected.map((r) => [r.functionName, r.statusCode]),
      [['no-such-fn', 404]],
    );
  });

  it('PutMetricData refused (403 AccessDeniedException): exit 1, naming cloudwatch:PutMetricData', async () => {
    proxy = await startFaultProxy({ upstream: localstackEndpoint() });
    proxy.inject({ operation: 'PutMetricData', fault: { kind: 'status', status: 403, errorType: 'AccessDeniedException' } });
    const { code, lines } = await outcome(
      check(['--function', 'record', '--queues', queue.name], { AWS_ENDPOINT_URL_CLOUDWATCH: proxy.url }),
    );
    assert.equal(code, 1);
    assert.deepEqual(lines, [
      queueOk(),
      'ok   function record (DryRun invoke allowed)',
      `FAIL metrics Workerless-${name}: access denied (needs cloudwatch:PutMetricData)`,
      NOTE,
    ]);
    assert.deepEqual(
      proxy.calls('PutMetricData').map((c) => c.status),
      [403],
    );
  });
});
