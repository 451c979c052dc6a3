// The real CLI with Temporal spillover only (no SQS queues): configured by flags and WORKERLESS_TEMPORAL_* env,
// it invokes the example worker through the test Lambda endpoint, and SIGTERM stops it promptly with exit 0.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  spilloverOnlyArgs,
  startOrderWorkflows,
  startTemporalFixture,
  startWorkerless,
  type TemporalFixture,
} from '../../support/temporal.ts';

const TASK_QUEUE = 'cli-spillover';

let fixture: TemporalFixture;

before(async () => {
  fixture = await startTemporalFixture({ taskQueues: [TASK_QUEUE], tmpPrefix: 'workerless-temporal-cli-' });
});

after(async () => {
  await fixture?.stop();
});

describe('workerless CLI with Temporal spillover only', { timeout: 120_000 }, () => {
  it('runs without SQS queues, completes the workflows through Lambda workers, and stops on SIGTERM', async () => {
    const workerless = startWorkerless(spilloverOnlyArgs(fixture, TASK_QUEUE), {
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      // From the environment, as a deployment would set them.
      WORKERLESS_TEMPORAL_ADDRESS: fixture.server.address,
      WORKERLESS_TEMPORAL_MAX_WORKERS: '2',
      WORKERLESS_TEMPORAL_WORKER_LIFETIME: '15s',
    });
    try {
      const handles = await startOrderWorkflows(fixture.client, {
        taskQueue: TASK_QUEUE,
        count: 4,
        workMs: 100,
        idPrefix: 'cli',
        executionTimeoutMs: 60_000,
      });
      const results = await Promise.all(handles.map((h) => h.result()));
      assert.equal(results.length, 4);
      const invoked = fixture.endpoint.invocations.filter((r) => r.functionName === 'temporal-worker');
      assert.ok(invoked.length >= 1 && invoked.length <= 2, `invocations: ${invoked.length}`);
    } finally {
      const { code, stopMs } = await workerless.stop();
      assert.equal(code, 0, `exit ${String(code)}\n${workerless.output()}`);
      assert.ok(stopMs < 3_000, `stopped in ${stopMs} ms`);
    }
    const lines = workerless.logs();
    const started = lines.find((l) => l['msg'] === 'workerless started');
    assert.equal((started?.['temporal'] as { maxWorkers?: unknown } | undefined)?.maxWorkers, 2, 'env var applied');
    assert.ok(lines.some((l) => l['msg'] === 'workers invoked' && l['taskQueue'] === TASK_QUEUE));
    assert.ok(lines.some((l) => l['msg'] === 'temporal spillover stopped'));
  });
});
