// Issue 11 against a real server and the test Lambda endpoint: spillover on backlog age, replacement of a crashed
// worker from the task queue's pollers, the total worker limit across task queues, and versioned queues whose
// Build IDs map to function aliases. Each test prints what it measured.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startOrderWorkflows } from '../../support/temporal.ts';
import { startSpilloverBed, type SpilloverBed } from '../../support/temporal-spillover.ts';

const TIMEOUT_SEC = 20;
const CRASHING = fileURLToPath(new URL('./crashing-worker.ts', import.meta.url));
const QUEUES = ['v2-age', 'v2-crash', 'v2-cap-a', 'v2-cap-b', 'v2-versioned'];

let bed: SpilloverBed;

before(async () => {
  bed = await startSpilloverBed({
    taskQueues: QUEUES,
    tmpPrefix: 'workerless-temporal-v2-',
    workerTimeoutSec: TIMEOUT_SEC,
    workerStartTimeoutMs: 10_000,
    extraFunctions: (worker) => ({
      // Many activity slots: until it crashes it never stops polling because its slots are full.
      'temporal-worker-crashing': {
        ...worker,
        handler: CRASHING,
        timeoutSec: 60,
        env: { ...worker.env, CRASH_AFTER_MS: '2500', WORKER_MAX_CONCURRENT_ACTIVITIES: '100' },
      },
      'temporal-worker-capped': { ...worker },
      // One function, invoked as :v1 and :v2 (aliases); the version comes from the payload, as runWorker takes it.
      'temporal-worker-versioned': { ...worker },
    }),
  });
});

after(async () => {
  await bed?.stop();
});

describe('Temporal spillover v2 (issue 11) against a real server', { timeout: 150_000 }, () => {
  it('spills over on backlog age while a long-lived worker keeps the count under the threshold', async () => {
    const taskQueue = 'v2-age';
    // One activity slot, 5 s activities: at most a few tasks wait, but each waits about 5 s.
    const { worker, close } = await bed.startLongLivedWorker(taskQueue, { maxConcurrentActivityTaskExecutions: 1 });
    const spillover = bed.run(bed.config({ taskQueues: [taskQueue], backlogThreshold: 10, maxBacklogAgeMs: 2_000, maxWorkers: 1 }));
    try {
      let startedAt = 0;
      await worker.runUntil(async () => {
        await sleep(1_000);
        startedAt = Date.now();
        const handles = await startOrderWorkflows(bed.client, { taskQueue, count: 3, workMs: 5_000 });
        await bed.endpoint.waitFor(() => bed.invocations('temporal-worker', taskQueue).length > 0, 20_000);
        await Promise.all(handles.map((h) => h.result()));
      });
      const first = bed.invocations('temporal-worker', taskQueue)[0];
      const firstMs = (first?.startedAt ?? 0) - startedAt;
      const log = spillover.logs.find((l) => l['msg'] === 'workers invoked');
      assert.equal(log?.['reason'], 'backlog-age', 'spilled over on age, not on count');
      assert.ok(Number(log?.['backlog']) <= 10, `backlog under the threshold: ${String(log?.['backlog'])}`);
      // The second task's age passes 2 s about 2 s after the start; then a reading (0.5 s) and no cool-off wait.
      const afterLimitMs = firstMs - 2_000;
      console.log(
        `# backlog age: first invocation ${firstMs} ms after the start, ${afterLimitMs} ms after the oldest task passed 2 s (poll 500 ms + cool-off 1500 ms = 2000 ms), backlog ${String(log?.['backlog'])}, age ${String(log?.['backlogAgeMs'])} ms`,
      );
      assert.ok(afterLimitMs <= 2_000 + 1_500, `spilled over ${afterLimitMs} ms after the age limit`);
      assert.ok(
        spillover.metrics.some((m) => m.name === 'BacklogAge' && m.value > 2_000 && m.dimensions['TaskQueue'] === taskQueue),
        'age in the metrics',
      );
    } finally {
      await spillover.stop();
      await close();
    }
  });

  it('replaces a crashed worker from the pollers within poll interval + stale window + cool-off, not after its lifetime', async () => {
    const taskQueue = 'v2-crash';
    const functionName = 'temporal-worker-crashing';
    const config = bed.config({ taskQueues: [taskQueue], functionName, maxWorkers: 1, tasksPerWorker: 100, workerLifetimeMs: 60_000 });
    const spillover = bed.run(config);
    // A steady trickle of workflows: after the crash, tasks wait again, as they would in production.
    let trickling = true;
    const trickle = (async () => {
      for (let i = 0; trickling; i++) {
        await startOrderWorkflows(bed.client, { taskQueue, count: 1, workMs: 100, idPrefix: `${taskQueue}-${i}` });
        await sleep(250);
      }
    })();
    try {
      await bed.endpoint
        .waitFor(() => bed.invocations(functionName).length >= 2, 40_000)
        .catch((err: unknown) => {
          const seen = spillover.logs.filter((l) => l['msg'] !== 'task queue observed' || Number(l['backlog']) > 0).slice(-15);
          throw new Error(
            `${String(err)}; invocations ${JSON.stringify(bed.invocations(functionName).map((r) => [r.status, r.startedAt, r.endedAt]))}; logs ${JSON.stringify(seen)}`,
          );
        });
      const [crashed, replacement] = bed.invocations(functionName);
      assert.equal(crashed?.status, 'crash', 'the first worker died');
      const crashAt = crashed?.endedAt ?? 0;
      const replacedMs = (replacement?.startedAt ?? 0) - crashAt;
      // stale after 2 x 500 ms + 5 s of server caching = 6 s since its last poll, then the next reading; no cool-off wait (last scale-up long ago).
      console.log(
        `# crash: replacement invoked ${replacedMs} ms after the worker died (lifetime 60000 ms; stale window 6000 ms + poll 500 ms + cool-off 1500 ms)`,
      );
      assert.ok(replacedMs < 6_000 + 500 + 1_500 + 1_500, `replaced after ${replacedMs} ms`);
      assert.ok(
        spillover.metrics.some((m) => m.name === 'WorkersLost' && m.value >= 1),
        'counted as lost',
      );
    } finally {
      trickling = false;
      await trickle;
      await spillover.stop();
    }
  });

  it('never has more workers alive on two busy task queues together than --temporal-max-workers-total', async () => {
    const functionName = 'temporal-worker-capped';
    // Start timeout = lifetime: on a loaded machine a cold start can outlast a short one (see the crash test for losses).
    const config = bed.config({
      taskQueues: ['v2-cap-a', 'v2-cap-b'],
      functionName,
      maxWorkers: 3,
      maxWorkersTotal: 2,
      tasksPerWorker: 1,
      workerStartTimeoutMs: TIMEOUT_SEC * 1000,
    });
    const spillover = bed.run(config);
    try {
      const handles = [
        ...(await startOrderWorkflows(bed.client, { taskQueue: 'v2-cap-a', count: 6, workMs: 1_000 })),
        ...(await startOrderWorkflows(bed.client, { taskQueue: 'v2-cap-b', count: 6, workMs: 1_000 })),
      ];
      await Promise.all(handles.map((h) => h.result()));
      const peak = bed.endpoint.peakConcurrency(functionName);
      const perQueue = ['v2-cap-a', 'v2-cap-b'].map((q) => bed.invocations(functionName, q).length);
      console.log(
        `# global cap: peak ${peak} workers alive together (limit 2, per-queue limit 3), invocations per queue ${perQueue.join(' + ')}`,
      );
      assert.ok(peak <= 2, `peak ${peak}`);
      assert.ok(
        perQueue.every((n) => n >= 1),
        'both queues got a worker',
      );
    } finally {
      await spillover.stop();
    }
  });

  it("invokes the alias mapped to each Build ID for its own version's tasks (current v1, ramping v2)", async () => {
    const taskQueue = 'v2-versioned';
    const deploymentName = 'orders-v2e2e';
    // Register both versions as a deploy pipeline would, then make v1 current and ramp 50 % to v2.
    for (const buildId of ['v1', 'v2']) {
      const { worker, close } = await bed.startLongLivedWorker(taskQueue, {
        workerDeploymentOptions: {
          useWorkerVersioning: true,
          version: { deploymentName, buildId },
          defaultVersioningBehavior: 'AUTO_UPGRADE',
        },
      });
      await worker.runUntil(async () => {
        for (const deadline = Date.now() + 20_000; ;) {
          try {
            const described = await bed.connection.workflowService.describeWorkerDeployment({
              namespace: bed.server.namespace,
              deploymentName,
            });
            if (described.workerDeploymentInfo?.versionSummaries?.some((v) => v.deploymentVersion?.buildId === buildId)) return;
          } catch (err) {
            if (Date.now() > deadline) throw err;
          }
          await sleep(250);
        }
      });
      await close();
    }
    const update = async (fn: (token: Uint8Array | null | undefined) => Promise<unknown>) => {
      const { conflictToken } = await bed.connection.workflowService.describeWorkerDeployment({
        namespace: bed.server.namespace,
        deploymentName,
      });
      await fn(conflictToken);
    };
    await update((conflictToken) =>
      bed.connection.workflowService.setWorkerDeploymentCurrentVersion({
        namespace: bed.server.namespace,
        deploymentName,
        buildId: 'v1',
        conflictToken,
        identity: 'test',
      }),
    );
    await update((conflictToken) =>
      bed.connection.workflowService.setWorkerDeploymentRampingVersion({
        namespace: bed.server.namespace,
        deploymentName,
        buildId: 'v2',
        percentage: 50,
        conflictToken,
        identity: 'test',
      }),
    );

    const functionName = 'temporal-worker-versioned';
    const config = bed.config({
      taskQueues: [taskQueue],
      functionName: 'temporal-worker',
      maxWorkers: 4,
      versionFunctions: { v1: `${functionName}:v1`, v2: `${functionName}:v2` },
    });
    const spillover = bed.run(config);
    try {
      const handles = await startOrderWorkflows(bed.client, { taskQueue, count: 12, workMs: 300 });
      await Promise.all(handles.map((h) => h.result()));
      const ranOn = await Promise.all(
        handles.map(async (h) => (await h.describe()).raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId),
      );
      const invoked = bed.invocations(functionName, taskQueue);
      const byAlias = (alias: string) => invoked.filter((r) => r.qualifier === alias);
      console.log(
        `# versioned: workflows on v1 ${ranOn.filter((b) => b === 'v1').length}, on v2 ${ranOn.filter((b) => b === 'v2').length}; invocations :v1 ${byAlias('v1').length}, :v2 ${byAlias('v2').length}`,
      );
      assert.equal(bed.invocations('temporal-worker', taskQueue).length, 0, 'the unqualified function was not used');
      for (const alias of ['v1', 'v2']) {
        assert.ok(byAlias(alias).length >= 1, `alias ${alias} invoked`);
        assert.ok(
          byAlias(alias).every(
            (r) =>
              (r.payload as { buildId?: unknown }).buildId === alias &&
              (r.payload as { deploymentName?: unknown }).deploymentName === deploymentName,
          ),
        );
        assert.ok(ranOn.includes(alias), `some workflow ran on ${alias}`);
      }
    } finally {
      await spillover.stop();
    }
  });
});
