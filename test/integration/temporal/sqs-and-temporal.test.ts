// SQS dispatching and Temporal spillover in one workerless process (LocalStack for SQS, the test Lambda
// endpoint for both functions): both work side by side, and a Temporal outage never stops SQS dispatching.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { awsTestEnv, countMessages, createQueue, deleteQueue, sendMessages, type TestQueue } from '../../support/aws.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../../support/lambda-endpoint/server.ts';
import { freePort, startTemporalDevServer, type TemporalDevServer } from '../../support/temporal.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const EXAMPLE = join(ROOT, 'examples/temporal-lambda-worker');
const TASK_QUEUE = 'sqs-and-temporal';

let server: TemporalDevServer;
let endpoint: LambdaEndpoint;
let connection: Connection;
let workDir: string;
const queues: TestQueue[] = [];

const silent = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

before(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'workerless-sqs-temporal-'));
  const bundlePath = join(workDir, 'workflow-bundle.js');
  const [devServer, bundle] = await Promise.all([
    startTemporalDevServer({ dynamicConfig: { 'matching.TaskQueueInfoByBuildIdTTL': '500ms' } }),
    bundleWorkflowCode({ workflowsPath: join(EXAMPLE, 'workflows.ts'), logger: silent }),
  ]);
  server = devServer;
  await writeFile(bundlePath, bundle.code);
  endpoint = await startLambdaEndpoint({
    functions: {
      echo: { handler: join(ROOT, 'test/fixtures/functions/echo.mjs'), timeoutSec: 5 },
      'temporal-worker': {
        handler: join(EXAMPLE, 'handler.ts'),
        timeoutSec: 15,
        memoryMb: 512,
        env: {
          TEMPORAL_ADDRESS: server.address,
          TEMPORAL_TASK_QUEUE: TASK_QUEUE,
          TEMPORAL_WORKFLOW_BUNDLE: bundlePath,
          WORKER_SHUTDOWN_BUFFER_MS: '3000',
          WORKER_STOP_TIMEOUT_MS: '2000',
        },
      },
    },
    handlerOutput: process.env['WORKERLESS_TEST_VERBOSE'] ? 'stderr' : 'ignore',
  });
  connection = await Connection.connect({ address: server.address });
});

after(async () => {
  await Promise.all(queues.map((q) => deleteQueue(q.url).catch(() => undefined)));
  await connection?.close();
  await endpoint?.stop();
  await server?.stop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** Starts the CLI; returns its JSON log lines so far and a stop() that sends SIGTERM and awaits the exit. */
function startWorkerless(args: string[]) {
  const child = spawn(process.execPath, [join(ROOT, 'src/main.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...awsTestEnv({ lambdaEndpoint: endpoint.url }) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  return {
    logs: () => stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>),
    output: () => `${stderr}\n${stdout.slice(-4000)}`,
    async stop(): Promise<{ code: number | null; stopMs: number }> {
      const at = Date.now();
      child.kill('SIGTERM');
      const [code] = await exited;
      return { code, stopMs: Date.now() - at };
    },
  };
}

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
    await sendMessages(queue.url, Array.from({ length: 5 }, (_, i) => ({ body: `m${i}` })));
    const workerless = startWorkerless([
      '--queues', queue.name,
      '--function', 'echo',
      '--poll-for', '1',
      '--temporal-address', server.address,
      '--temporal-task-queues', TASK_QUEUE,
      '--temporal-function', 'temporal-worker',
      '--temporal-poll-interval', '500ms',
      '--temporal-cool-off', '1s',
      '--temporal-worker-lifetime', '15s',
      '--temporal-max-workers', '2',
      '--metrics', 'off',
    ]);
    let result: { code: number | null; stopMs: number } | undefined;
    try {
      const client = new Client({ connection });
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
    assert.equal(endpoint.invocations.filter((r) => r.functionName === 'echo').length, 5);
    assert.ok(endpoint.invocations.some((r) => r.functionName === 'temporal-worker'));
  });

  it('keeps dispatching SQS messages while Temporal is unreachable', async () => {
    const queue = await createQueue('wl-temporal-down');
    queues.push(queue);
    const closedPort = await freePort();
    const workerless = startWorkerless([
      '--queues', queue.name,
      '--function', 'echo',
      '--poll-for', '1',
      '--temporal-address', `127.0.0.1:${closedPort}`,
      '--temporal-task-queues', TASK_QUEUE,
      '--temporal-function', 'temporal-worker',
      '--temporal-poll-interval', '500ms',
      '--metrics', 'off',
    ]);
    let result: { code: number | null; stopMs: number } | undefined;
    const echoBefore = endpoint.invocations.filter((r) => r.functionName === 'echo').length;
    try {
      await sendMessages(queue.url, Array.from({ length: 4 }, (_, i) => ({ body: `down-${i}` })));
      await waitUntil(async () => (await countMessages(queue.url)) === 0, 30_000, 'the SQS queue to drain');
      // The client gives up connecting after its 10 s connect timeout; SQS did not wait for it.
      await waitUntil(() => workerless.logs().some((l) => l['msg'] === 'could not connect to temporal; retrying'), 30_000, 'a Temporal connection failure');
    } finally {
      result = await workerless.stop();
    }
    assert.equal(result.code, 0, workerless.output());
    assert.ok(result.stopMs < 5_000, `stopped in ${result.stopMs} ms`);
    assert.equal(endpoint.invocations.filter((r) => r.functionName === 'echo').length - echoBefore, 4);
    const failure = workerless.logs().find((l) => l['msg'] === 'could not connect to temporal; retrying');
    assert.equal(failure?.['address'], `127.0.0.1:${closedPort}`);
    assert.ok(typeof failure?.['retryInMs'] === 'number');
  });
});
