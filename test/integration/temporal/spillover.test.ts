// End to end: a real Temporal server (temporal server start-dev), the test Lambda endpoint running the example
// worker handler for Event invocations, and the spillover controller in between.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MetricDatum } from '../../../src/core/telemetry/metrics-sink.ts';
import { startOrderWorkflows } from '../../support/temporal.ts';
import { startSpilloverBed, type SpilloverBed } from '../../support/temporal-spillover.ts';

/** The function timeout, and so the worker lifetime workerless assumes. */
const TIMEOUT_SEC = 20;
const QUEUES = ['spill-no-worker', 'spill-long-lived', 'spill-saturated', 'spill-throttled', 'spill-missing', 'spill-versioned'];
/** Worker Versioning: the versioned function serves this deployment version. */
const DEPLOYMENT = { deploymentName: 'orders-e2e', buildId: 'v1' };

let bed: SpilloverBed;

before(async () => {
  bed = await startSpilloverBed({
    taskQueues: QUEUES,
    tmpPrefix: 'workerless-temporal-',
    workerTimeoutSec: TIMEOUT_SEC,
    // As long as the lifetime: these tests are about the backlog; losing workers that never started (a
    // throttled function, a slow cold start on a loaded machine) is proven in spillover-v2.test.ts.
    workerStartTimeoutMs: TIMEOUT_SEC * 1000,
    extraFunctions: (worker) => ({
      'temporal-worker-throttled': { ...worker, reservedConcurrency: 0 },
      'temporal-worker-v1': {
        ...worker,
        env: { ...worker.env, TEMPORAL_DEPLOYMENT_NAME: DEPLOYMENT.deploymentName, TEMPORAL_WORKER_BUILD_ID: DEPLOYMENT.buildId },
      },
    }),
  });
});

after(async () => {
  await bed?.stop();
});

function total(metrics: readonly MetricDatum[], name: string): number {
  return metrics.filter((m) => m.name === name).reduce((sum, m) => sum + m.value, 0);
}

describe('Temporal spillover against a real server and Lambda endpoint', { timeout: 180_000 }, () => {
  it('invokes workers for a queue with no worker until every workflow completes, never above the maximum', async () => {
    const taskQueue = 'spill-no-worker';
    const spillover = bed.run(bed.config({ taskQueues: [taskQueue], maxWorkers: 2 }));
    try {
      const startedAt = Date.now();
      const handles = await startOrderWorkflows(bed.client, { taskQueue, count: 8, workMs: 300 });
      await bed.endpoint.waitFor(() => bed.invocations('temporal-worker', taskQueue).length > 0, 15_000);
      const firstInvocationMs = (bed.invocations('temporal-worker', taskQueue)[0]?.startedAt ?? 0) - startedAt;
      const results = await Promise.all(handles.map((h) => h.result()));
      const completedMs = Date.now() - startedAt;
      assert.deepEqual(results.sort(), Array.from({ length: 8 }, (_, i) => `processed order-${i}`).sort());

      const invoked = bed.invocations('temporal-worker', taskQueue);
      assert.ok(invoked.length >= 1 && invoked.length <= 2, `invocations: ${invoked.length}`);
      assert.ok(invoked.every((r) => r.invocationType === 'Event' && r.statusCode === 202));
      assert.ok(bed.endpoint.peakConcurrency('temporal-worker') <= 2);
      assert.equal(total(spillover.metrics, 'WorkersInvoked'), invoked.length);
      assert.ok(spillover.metrics.some((m) => m.name === 'Backlog' && m.value > 0 && m.dimensions['TaskQueue'] === taskQueue));
      const firstLog = spillover.logs.find((l) => l['msg'] === 'workers invoked');
      assert.equal(firstLog?.['reason'], 'no-poller');
      console.log(
        `# no worker: first invocation after ${firstInvocationMs} ms, all 8 done after ${completedMs} ms, ${invoked.length} invocations (max 2)`,
      );
    } finally {
      const stopMs = await spillover.stop();
      assert.ok(stopMs < 1_000, `controller stopped in ${stopMs} ms`);
    }
  });

  it('invokes nothing while a long-lived worker keeps up', async () => {
    const taskQueue = 'spill-long-lived';
    const { worker, close } = await bed.startLongLivedWorker(taskQueue);
    const spillover = bed.run(bed.config({ taskQueues: [taskQueue] }));
    try {
      await worker.runUntil(async () => {
        // Let the worker's polls register before the first reading, as with a fleet that is already up.
        await sleep(1_000);
        const handles = await startOrderWorkflows(bed.client, { taskQueue, count: 8, workMs: 200 });
        await Promise.all(handles.map((h) => h.result()));
        // Keep watching longer than the cool-off: a late reading must not trigger anything either.
        await sleep(3_000);
      });
      assert.equal(bed.invocations('temporal-worker', taskQueue).length, 0);
      assert.equal(total(spillover.metrics, 'WorkersInvoked'), 0);
      assert.ok(spillover.metrics.filter((m) => m.name === 'Backlog').length >= 5, 'kept reading the queue');
    } finally {
      await spillover.stop();
      await close();
    }
  });

  it('joins a long-lived worker that cannot keep up, once the backlog outlasts the cool-off', async () => {
    const taskQueue = 'spill-saturated';
    // One activity at a time: 6 activities of 1.5 s would take 9 s on this worker alone.
    const { worker, close } = await bed.startLongLivedWorker(taskQueue, { maxConcurrentActivityTaskExecutions: 1 });
    const spillover = bed.run(bed.config({ taskQueues: [taskQueue], maxWorkers: 2 }));
    try {
      let startedAt = 0;
      let doneMs = 0;
      await worker.runUntil(async () => {
        await sleep(1_000);
        startedAt = Date.now();
        const handles = await startOrderWorkflows(bed.client, { taskQueue, count: 6, workMs: 1_500 });
        await Promise.all(handles.map((h) => h.result()));
        doneMs = Date.now() - startedAt;
      });
      const invoked = bed.invocations('temporal-worker', taskQueue);
      const firstMs = (invoked[0]?.startedAt ?? 0) - startedAt;
      console.log(
        `# saturated: first invocation after ${firstMs} ms, all 6 done after ${doneMs} ms (9 s+ alone), ${invoked.length} invocations (max 2)`,
      );
      assert.ok(invoked.length >= 1 && invoked.length <= 2, `invocations: ${invoked.length}`);
      const logged = spillover.logs.find((l) => l['msg'] === 'workers invoked');
      assert.equal(logged?.['reason'], 'backlog', 'spilled over because of the backlog, not for lack of pollers');
    } finally {
      await spillover.stop();
      await close();
    }
  });

  it('completes the workflows once a throttled function gets capacity back', async () => {
    const taskQueue = 'spill-throttled';
    const functionName = 'temporal-worker-throttled';
    const spillover = bed.run(bed.config({ taskQueues: [taskQueue], functionName, maxWorkers: 2 }));
    try {
      const handles = await startOrderWorkflows(bed.client, { taskQueue, count: 4, workMs: 200 });
      // Lambda accepts Event invocations (202) and queues them while reserved concurrency is exhausted.
      await bed.endpoint.waitFor(() => bed.invocations(functionName, taskQueue).length > 0, 15_000);
      await sleep(3_000);
      assert.equal(bed.endpoint.inFlight(functionName), 0, 'nothing runs while throttled');
      const described = await Promise.all(handles.map((h) => h.describe()));
      assert.ok(
        described.every((d) => d.status.name === 'RUNNING'),
        'no workflow progressed while throttled',
      );
      const queued = bed.invocations(functionName, taskQueue).length;
      assert.ok(queued <= 2, `invocations while throttled: ${queued}`);

      const restoredAt = Date.now();
      bed.endpoint.setReservedConcurrency(functionName, 2);
      await Promise.all(handles.map((h) => h.result()));
      const invoked = bed.invocations(functionName, taskQueue);
      assert.ok(invoked.length <= 2, `invocations: ${invoked.length}`);
      assert.ok(bed.endpoint.peakConcurrency(functionName) <= 2);
      console.log(`# throttled: all done ${Date.now() - restoredAt} ms after capacity returned, ${invoked.length} invocations (max 2)`);
    } finally {
      await spillover.stop();
    }
  });

  it('serves a versioned task queue (Worker Versioning) the same way', async () => {
    const taskQueue = 'spill-versioned';
    const functionName = 'temporal-worker-v1';
    // Register the deployment version with a short-lived worker and make it current, as a deploy pipeline would.
    const { worker, close } = await bed.startLongLivedWorker(taskQueue, {
      workerDeploymentOptions: { useWorkerVersioning: true, version: DEPLOYMENT, defaultVersioningBehavior: 'AUTO_UPGRADE' },
    });
    await worker.runUntil(async () => {
      const deadline = Date.now() + 20_000;
      for (;;) {
        try {
          const { conflictToken } = await bed.connection.workflowService.describeWorkerDeployment({
            namespace: bed.server.namespace,
            deploymentName: DEPLOYMENT.deploymentName,
          });
          await bed.connection.workflowService.setWorkerDeploymentCurrentVersion({
            namespace: bed.server.namespace,
            deploymentName: DEPLOYMENT.deploymentName,
            buildId: DEPLOYMENT.buildId,
            conflictToken,
            identity: 'workerless-test',
          });
          return;
        } catch (err) {
          if (Date.now() > deadline) throw err;
          await sleep(250);
        }
      }
    });
    await close();

    const spillover = bed.run(bed.config({ taskQueues: [taskQueue], functionName, maxWorkers: 2 }));
    try {
      const handles = await startOrderWorkflows(bed.client, { taskQueue, count: 4, workMs: 200 });
      const results = await Promise.all(handles.map((h) => h.result()));
      assert.equal(results.length, 4);
      const invoked = bed.invocations(functionName, taskQueue);
      assert.ok(invoked.length >= 1 && invoked.length <= 2, `invocations: ${invoked.length}`);
      const described = await handles[0]?.describe();
      const versioning = described?.raw.workflowExecutionInfo?.versioningInfo;
      assert.equal(versioning?.deploymentVersion?.buildId, DEPLOYMENT.buildId, 'ran on the versioned Lambda worker');
    } finally {
      await spillover.stop();
    }
  });

  it('logs and counts refused invocations of a missing function, keeps watching, and stops promptly', async () => {
    const taskQueue = 'spill-missing';
    const spillover = bed.run(bed.config({ taskQueues: [taskQueue], functionName: 'no-such-function' }));
    let stopMs = Number.NaN;
    try {
      await startOrderWorkflows(bed.client, { taskQueue, count: 1, workMs: 0 });
      const deadline = Date.now() + 15_000;
      while (total(spillover.metrics, 'InvocationsRefused') === 0 && Date.now() < deadline) await sleep(100);
      await sleep(2_000);
    } finally {
      stopMs = await spillover.stop();
    }
    assert.ok(total(spillover.metrics, 'InvocationsRefused') >= 1);
    assert.equal(total(spillover.metrics, 'WorkersInvoked'), 0);
    const error = spillover.logs.find((l) => l['msg'] === 'the worker function refused the invocation; retrying later');
    assert.equal(error?.['code'], 'ResourceNotFoundException');
    assert.equal(error?.['function'], 'no-such-function');
    assert.equal(error?.['taskQueue'], taskQueue);
    const readsAfterRefusal = spillover.metrics.filter((m) => m.name === 'Backlog').length;
    assert.ok(readsAfterRefusal >= 3, 'kept reading the queue after the refusal');
    assert.ok(stopMs < 1_000, `controller stopped in ${stopMs} ms`);
  });
});
