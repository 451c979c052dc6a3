// The real CLI with Temporal spillover only (no SQS queues): configured by flags and WORKERLESS_TEMPORAL_* env,
// it invokes the example worker through the test Lambda endpoint, and SIGTERM stops it promptly with exit 0.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { startLambdaEndpoint, type LambdaEndpoint } from '../../support/lambda-endpoint/server.ts';
import { startTemporalDevServer, type TemporalDevServer } from '../../support/temporal.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const EXAMPLE = join(ROOT, 'examples/temporal-lambda-worker');
const TASK_QUEUE = 'cli-spillover';

let server: TemporalDevServer;
let endpoint: LambdaEndpoint;
let connection: Connection;
let workDir: string;

const silent = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

before(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'workerless-temporal-cli-'));
  const bundlePath = join(workDir, 'workflow-bundle.js');
  const [devServer, bundle] = await Promise.all([
    startTemporalDevServer({ dynamicConfig: { 'matching.TaskQueueInfoByBuildIdTTL': '500ms' } }),
    bundleWorkflowCode({ workflowsPath: join(EXAMPLE, 'workflows.ts'), logger: silent }),
  ]);
  server = devServer;
  await writeFile(bundlePath, bundle.code);
  endpoint = await startLambdaEndpoint({
    functions: {
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
  await connection?.close();
  await endpoint?.stop();
  await server?.stop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

describe('workerless CLI with Temporal spillover only', { timeout: 120_000 }, () => {
  it('runs without SQS queues, completes the workflows through Lambda workers, and stops on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'src/main.ts'),
        '--temporal-task-queues', TASK_QUEUE,
        '--temporal-function', 'temporal-worker',
        '--temporal-poll-interval', '500ms',
        '--temporal-cool-off', '1s',
        '--temporal-tasks-per-worker', '5',
        '--region', 'us-east-1',
        '--endpoint-url', endpoint.url,
        '--metrics', 'off',
      ],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          AWS_ACCESS_KEY_ID: 'test',
          AWS_SECRET_ACCESS_KEY: 'test',
          // From the environment, as a deployment would set them.
          WORKERLESS_TEMPORAL_ADDRESS: server.address,
          WORKERLESS_TEMPORAL_MAX_WORKERS: '2',
          WORKERLESS_TEMPORAL_WORKER_LIFETIME: '15s',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      const client = new Client({ connection });
      const handles = await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          client.workflow.start('orderWorkflow', {
            taskQueue: TASK_QUEUE,
            workflowId: `cli-${i}-${Date.now()}`,
            args: [{ orderId: `cli-${i}`, workMs: 100 }],
            workflowExecutionTimeout: '1 minute',
          }),
        ),
      );
      const results = await Promise.all(handles.map((h) => h.result()));
      assert.equal(results.length, 4);
      const invoked = endpoint.invocations.filter((r) => r.functionName === 'temporal-worker');
      assert.ok(invoked.length >= 1 && invoked.length <= 2, `invocations: ${invoked.length}`);
    } finally {
      const stopAt = Date.now();
      child.kill('SIGTERM');
      const [code] = await exited;
      const stopMs = Date.now() - stopAt;
      assert.equal(code, 0, `exit ${String(code)}\n${stderr}\n${stdout.slice(-4000)}`);
      assert.ok(stopMs < 3_000, `stopped in ${stopMs} ms`);
    }
    const lines = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const started = lines.find((l) => l['msg'] === 'workerless started');
    assert.equal((started?.['temporal'] as { maxWorkers?: unknown } | undefined)?.maxWorkers, 2, 'env var applied');
    assert.ok(lines.some((l) => l['msg'] === 'workers invoked' && l['taskQueue'] === TASK_QUEUE));
    assert.ok(lines.some((l) => l['msg'] === 'temporal spillover stopped'));
  });
});
