// SQS dispatching and Temporal spillover in one workerless process (LocalStack for SQS, the test Lambda
// endpoint for both functions): both work side by side, and a Temporal outage never stops SQS dispatching.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { awsTestEnv, countMessages, createQueue, deleteQueue, sendMessages, type TestQueue } from '../../support/aws.ts';
import { freePort } from '../../support/http.ts';
import { startTemporalFixture, startWorkerless, type TemporalFixture } from '../../support/temporal.ts';

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

async function waitUntil(condition: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

describe('SQS dispatching and Temporal spillover in one process', { timeout: 120_000 }, () => {
  it('dispatches SQS messages and completes Temporal workflows side by side', async () => {
    const queue = await createQueue('wl-temporal-both');
    queues.push(queue);
    await sendMessages(
      queue.url,
      Array.from({ length: 5 }, (_, i) => ({ body: `m${i}` })),
    );
    const workerless = startWorkerless(
      [
        '--queues',
        queue.name,
        '--function',
        'echo',
        '--poll-for',
        '1',
        '--temporal-address',
        fixture.server.address,
        '--temporal-task-queues',
        TASK_QUEUE,
        '--temporal-function',
        'temporal-worker',
        '--temporal-poll-interval',
        '500ms',
        '--temporal-cool-off',
        '1s',
        '--temporal-worker-lifetime',
        '15s',
        '--temporal-max-workers',
        '2',
        '--metrics',
        'off',
      ],
      awsTestEnv({ lambdaEndpoint: fixture.endpoint.url }),
    );
    let result: { code: number | null; stopMs: number } | undefined;
    try {
      const client = new Client({ connection: fixture.connection });
      const handles = await Promise.all(
        Array.from({ length: 3 }, (_, i) =>
          client.workflow.start('orderWorkflow', {
            taskQueue: TASK_QUEUE,
            workflowId: `both-${i}-${Date.now()}`,
            args: [{ orderId: `both-${i}`, workMs: 100 }],
            workflowExecutionTimeout: '1 minute',
          }),
        ),
      );
      await Promise.all(handles.map((h) => h.result()));
      await waitUntil(async () => (await countMessages(queue.url)) === 0, 30_000, 'the SQS queue to drain');
    } finally {
      result = await workerless.stop();
    }
    assert.equal(result.code, 0, workerless.output());
    assert.equal(fixture.endpoint.invocations.filter((r) => r.functionName === 'echo').length, 5);
    assert.ok(fixture.endpoint.invocations.some((r) => r.functionName === 'temporal-worker'));
  });

  it('keeps dispatching SQS messages while Temporal is unreachable', async () => {
    const queue = await createQueue('wl-temporal-down');
    queues.push(queue);
    const closedPort = await freePort();
    const workerless = startWorkerless(
      [
        '--queues',
        queue.name,
        '--function',
        'echo',
        '--poll-for',
        '1',
        '--temporal-address',
        `127.0.0.1:${closedPort}`,
        '--temporal-task-queues',
        TASK_QUEUE,
        '--temporal-function',
        'temporal-worker',
        '--temporal-poll-interval',
        '500ms',
        '--metrics',
        'off',
      ],
      awsTestEnv({ lambdaEndpoint: fixture.endpoint.url }),
    );
    let result: { code: number | null; stopMs: number } | undefined;
    const echoBefore = fixture.endpoint.invocations.filter((r) => r.functionName === 'echo').length;
    try {
      await sendMessages(
        queue.url,
        Array.from({ length: 4 }, (_, i) => ({ body: `down-${i}` })),
      );
      await waitUntil(async () => (await countMessages(queue.url)) === 0, 30_000, 'the SQS queue to drain');
      // The client gives up connecting after its 10 s connect timeout; SQS did not wait for it.
      await waitUntil(
        () => workerless.logs().some((l) => l['msg'] === 'could not connect to temporal; retrying'),
        30_000,
        'a Temporal connection failure',
      );
    } finally {
      result = await workerless.stop();
    }
    assert.equal(result.code, 0, workerless.output());
    assert.ok(result.stopMs < 5_000, `stopped in ${result.stopMs} ms`);
    assert.equal(fixture.endpoint.invocations.filter((r) => r.functionName === 'echo').length - echoBefore, 4);
    const failure = workerless.logs().find((l) => l['msg'] === 'could not connect to temporal; retrying');
    assert.equal(failure?.['address'], `127.0.0.1:${closedPort}`);
    assert.ok(typeof failure?.['retryInMs'] === 'number');
  });
});
