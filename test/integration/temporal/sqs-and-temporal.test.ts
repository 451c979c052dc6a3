// SQS dispatching and Temporal spillover in one workerless process (LocalStack for SQS, the test Lambda
// endpoint for both functions): both work side by side, and a Temporal outage never stops SQS dispatching.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { awsTestEnv, countMessages, createQueue, deleteQueue, sendMessages, type TestQueue } from '../../support/aws.ts';
import { until } from '../../support/factories.ts';
import { freePort } from '../../support/http.ts';
import { startOrderWorkflows, startTemporalFixture, startWorkerless, type TemporalFixture } from '../../support/temporal.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const TASK_QUEUE = 'sqs-and-temporal';

let fixture: TemporalFixture;
const queues: TestQueue[] = [];

before(async () => {
  fixture = await startTemporalFixture({
    taskQueues: [TASK_QUEUE],
    tmpPrefix: 'workerless-sqs-temporal-',
    extraFunctions: () => ({ echo: { handler: join(ROOT, 'test/fixtures/functions/echo.mjs'), timeoutSec: 5 } }),
  });
});

after(async () => {
  await Promise.all(queues.map((q) => deleteQueue(q.url).catch(() => undefined)));
  await fixture?.stop();
});

/** The CLI with SQS (`queueName` to 'echo') and spillover (TASK_QUEUE to 'temporal-worker' at `temporalAddress`). */
function startSqsAndTemporal(queueName: string, temporalAddress: string, extraArgs: string[]) {
  return startWorkerless(
    [
      '--queues',
      queueName,
      '--function',
      'echo',
      '--poll-for',
      '1',
      '--temporal-address',
      temporalAddress,
      '--temporal-task-queues',
      TASK_QUEUE,
      '--temporal-function',
      'temporal-worker',
      '--temporal-poll-interval',
      '500ms',
      '--metrics',
      'off',
      ...extraArgs,
    ],
    awsTestEnv({ lambdaEndpoint: fixture.endpoint.url }),
  );
}

/** How many times the SQS side has invoked 'echo' so far. */
const echoInvocations = () => fixture.endpoint.invocations.filter((r) => r.functionName === 'echo').length;

describe('SQS dispatching and Temporal spillover in one process', { timeout: 120_000 }, () => {
  it('dispatches SQS messages and completes Temporal workflows side by side', async () => {
    const queue = await createQueue('wl-temporal-both');
    queues.push(queue);
    await sendMessages(
      queue.url,
      Array.from({ length: 5 }, (_, i) => ({ body: `m${i}` })),
    );
    const workerless = startSqsAndTemporal(queue.name, fixture.server.address, [
      '--temporal-cool-off',
      '1s',
      '--temporal-worker-lifetime',
      '15s',
      '--temporal-max-workers',
      '2',
    ]);
    let result: { code: number | null; stopMs: number } | undefined;
    try {
      const handles = await startOrderWorkflows(fixture.client, {
        taskQueue: TASK_QUEUE,
        count: 3,
        workMs: 100,
        idPrefix: 'both',
        executionTimeoutMs: 60_000,
      });
      await Promise.all(handles.map((h) => h.result()));
      await until(async () => (await countMessages(queue.url)) === 0, 30_000, 'the SQS queue to drain', 200);
    } finally {
      result = await workerless.stop();
    }
    assert.equal(result.code, 0, workerless.output());
    assert.equal(echoInvocations(), 5);
    assert.ok(fixture.endpoint.invocations.some((r) => r.functionName === 'temporal-worker'));
  });

  it('keeps dispatching SQS messages while Temporal is unreachable', async () => {
    const queue = await createQueue('wl-temporal-down');
    queues.push(queue);
    const closedPort = await freePort();
    const workerless = startSqsAndTemporal(queue.name, `127.0.0.1:${closedPort}`, []);
    let result: { code: number | null; stopMs: number } | undefined;
    const echoBefore = echoInvocations();
    try {
      await sendMessages(
        queue.url,
        Array.from({ length: 4 }, (_, i) => ({ body: `down-${i}` })),
      );
      await until(async () => (await countMessages(queue.url)) === 0, 30_000, 'the SQS queue to drain', 200);
      // The client gives up connecting after its 10 s connect timeout; SQS did not wait for it.
      await until(
        () => workerless.logs().some((l) => l['msg'] === 'could not connect to temporal; retrying'),
        30_000,
        'a Temporal connection failure',
        200,
      );
    } finally {
      result = await workerless.stop();
    }
    assert.equal(result.code, 0, workerless.output());
    assert.ok(result.stopMs < 5_000, `stopped in ${result.stopMs} ms`);
    assert.equal(echoInvocations() - echoBefore, 4);
    const failure = workerless.logs().find((l) => l['msg'] === 'could not connect to temporal; retrying');
    assert.equal(failure?.['address'], `127.0.0.1:${closedPort}`);
    assert.ok(typeof failure?.['retryInMs'] === 'number');
  });
});
