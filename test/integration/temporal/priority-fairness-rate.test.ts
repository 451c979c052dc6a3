// Task Queue Priority, Fairness and rate limits against a real server: `temporal server start-dev` (CLI v1.5.1, server
// 1.29.1) with the new matcher and fairness on (dynamic config), the workerless CLI, and the test Lambda endpoint
// running the example worker. Behaviour from Temporal's docs page develop/task-queue-priority-fairness (priority
// keys 1-5, 1 the highest; rate limits with `temporal task-queue config set`, activity task queues only).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { StatusSnapshot } from '../../../src/operator/status/snapshot.ts';
import { freePort } from '../../support/http.ts';
import {
  spilloverOnlyArgs,
  startOrderWorkflows,
  startTemporalFixture,
  startWorkerless,
  temporalCliPath,
  type TemporalFixture,
} from '../../support/temporal.ts';

const PRIORITY_QUEUE = 'prio-spill';
const CONTROL_QUEUE = 'prio-control';
const RATE_QUEUE = 'rate-spill';
const FAIR_QUEUE = 'fair-spill';
const PER_PRIORITY_LOG = 'the server reports the backlog per priority; spilling over for priorities 1 to spillPriority only';
const CAPPED_LOG = 'workers capped by what the task queue rate limit can keep busy';

let fixture: TemporalFixture;

before(async () => {
  fixture = await startTemporalFixture({
    taskQueues: [PRIORITY_QUEUE, CONTROL_QUEUE, RATE_QUEUE, FAIR_QUEUE],
    tmpPrefix: 'workerless-temporal-priority-',
    workerTimeoutSec: 15,
    // Self-hosted servers turn Priority and Fairness on with these (Temporal's docs, as above).
    dynamicConfig: { 'matching.useNewMatcher': true, 'matching.enableFairness': true },
  });
});

after(async () => {
  await fixture?.stop();
});

/** The CLI, spillover only, on one task queue of the fixture; `args` come after the shared ones. */
function cli(taskQueue: string, args: readonly string[] = []) {
  return startWorkerless([...spilloverOnlyArgs(fixture, taskQueue), ...args], {
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    WORKERLESS_TEMPORAL_ADDRESS: fixture.server.address,
    WORKERLESS_TEMPORAL_MAX_WORKERS: '3',
    WORKERLESS_TEMPORAL_WORKER_LIFETIME: '15s',
    WORKERLESS_LOG_LEVEL: 'debug',
  });
}

type Cli = ReturnType<typeof cli>;

async function waitForLog(workerless: Cli, predicate: (line: Record<string, unknown>) => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!workerless.logs().some(predicate)) {
    if (Date.now() > deadline) throw new Error(`no such log line after ${timeoutMs} ms:\n${workerless.output()}`);
    await sleep(100);
  }
}

function invocations(taskQueue: string) {
  return fixture.endpoint.invocations.filter(
    (r) => r.functionName === 'temporal-worker' && (r.payload as { taskQueue?: unknown } | null)?.taskQueue === taskQueue,
  );
}

async function stopCli(workerless: Cli): Promise<void> {
  const { code } = await workerless.stop();
  assert.equal(code, 0, `exit ${String(code)}\n${workerless.output()}`);
}

/** A long-lived worker for workflow tasks only, so that the activities are the backlog that waits. */
async function workflowOnlyWorker(taskQueue: string) {
  const connection = await NativeConnection.connect({ address: fixture.server.address });
  const worker = await Worker.create({
    connection,
    namespace: fixture.server.namespace,
    taskQueue,
    workflowBundle: { codePath: fixture.bundlePath },
    enableNonLocalActivities: false,
  });
  return { worker, close: () => connection.close() };
}

describe('spillover with Task Queue Priority, Fairness and rate limits (real server)', { timeout: 240_000 }, () => {
  it('with --temporal-spill-priority 2, invokes no worker for a priority-5 backlog and one as soon as priority-1 work waits', async () => {
    const httpPort = await freePort();
    const workerless = cli(PRIORITY_QUEUE, ['--temporal-spill-priority', '2', '--http-port', String(httpPort)]);
    try {
      await waitForLog(workerless, (l) => l['msg'] === 'connected to temporal', 20_000);
      await startOrderWorkflows(fixture.client, { taskQueue: PRIORITY_QUEUE, count: 20, workMs: 200, idPrefix: 'p5', priorityKey: 5 });
      // The readings see the priority-5 backlog under its own key...
      await waitForLog(workerless, (l) => l['msg'] === PER_PRIORITY_LOG, 20_000);
      // ...and several more readings (every 500 ms, cool-off 1 s) decide nothing from it.
      await sleep(4_000);
      assert.equal(invocations(PRIORITY_QUEUE).length, 0, 'no worker for priority-5 work');
      assert.ok(
        workerless.logs().some((l) => l['msg'] === 'task queue observed' && l['reason'] === 'idle'),
        'readings with only priority-5 backlog are idle',
      );
      // The status page shows the whole backlog, known, with no worker.
      const status = (await (await fetch(`http://127.0.0.1:${httpPort}/status.json`)).json()) as StatusSnapshot;
      assert.deepEqual(status.taskQueues, [{ name: PRIORITY_QUEUE, stats: 'known', backlog: 20, workersAlive: 0 }]);

      const urgentAt = Date.now();
      const urgent = await startOrderWorkflows(fixture.client, {
        taskQueue: PRIORITY_QUEUE,
        count: 2,
        workMs: 200,
        idPrefix: 'p1',
        priorityKey: 1,
      });
      await fixture.endpoint.waitFor(() => invocations(PRIORITY_QUEUE).length > 0, 20_000);
      const firstMs = (invocations(PRIORITY_QUEUE)[0]?.startedAt ?? 0) - urgentAt;
      assert.deepEqual((await Promise.all(urgent.map((h) => h.result()))).sort(), ['processed order-0', 'processed order-1']);
      await sleep(2_000);
      const invoked = invocations(PRIORITY_QUEUE);
      // At most --temporal-max-workers (3) alive, plus one more for each worker the daemon counted lost and replaced:
      // on two loaded cores a cold worker can miss its polls (CI once saw 4 invocations).
      const lost = workerless
        .logs()
        .filter((l) => l['msg'] === 'workers stopped polling before their lifetime ended')
        .reduce((n, l) => n + Number(l['workersLost']), 0);
      const decided = workerless.logs().filter((l) => l['msg'] === 'workers invoked');
      assert.ok(
        invoked.length >= 1 && invoked.length <= 3 + lost,
        `invocations: ${invoked.length}, workers lost and replaced: ${lost}; decisions: ${JSON.stringify(decided)}`,
      );
      assert.ok(invoked.every((r) => r.startedAt >= urgentAt));
      const first = workerless.logs().find((l) => l['msg'] === 'workers invoked');
      // Sized on the priority-1 tasks (and their add rate), not on the 22 waiting. The two workflows are two
      // StartWorkflowExecution calls, and a reading (every 500 ms) may fall between them: CI once saw 1.
      const sizedOn = first?.['backlog'];
      assert.ok(sizedOn === 1 || sizedOn === 2, `sized on the priority-1 backlog only, 1 or 2 tasks: ${String(sizedOn)}`);

      // Once the priority-1 work is done and the worker's 15 s lifetime is over, priority-5 work buys nothing again.
      await sleep(Math.max(0, (invoked[0]?.startedAt ?? 0) + 16_000 - Date.now()));
      await startOrderWorkflows(fixture.client, {
        taskQueue: PRIORITY_QUEUE,
        count: 20,
        workMs: 200,
        idPrefix: 'p5-again',
        priorityKey: 5,
      });
      await sleep(4_000);
      assert.equal(invocations(PRIORITY_QUEUE).length, invoked.length, 'no worker for priority-5 work after the priority-1 work');
      console.log(`# priority: no worker for 20 priority-5 workflows; first worker ${firstMs} ms after 2 priority-1 workflows started`);
    } finally {
      await stopCli(workerless);
    }
  });

  it('without the option, the same priority-5 backlog invokes workers (the control)', async () => {
    const workerless = cli(CONTROL_QUEUE);
    try {
      await waitForLog(workerless, (l) => l['msg'] === 'connected to temporal', 20_000);
      await startOrderWorkflows(fixture.client, { taskQueue: CONTROL_QUEUE, count: 20, workMs: 200, idPrefix: 'c5', priorityKey: 5 });
      await fixture.endpoint.waitFor(() => invocations(CONTROL_QUEUE).length > 0, 20_000);
      assert.ok(invocations(CONTROL_QUEUE).length >= 1);
    } finally {
      await stopCli(workerless);
    }
  });

  it('caps the workers invoked by the rate limit set with `temporal task-queue config set`, and adds more once it is lifted', async () => {
    const run = promisify(execFile);
    const setLimit = (value: string) =>
      run(temporalCliPath(), [
        'task-queue',
        'config',
        'set',
        '--address',
        fixture.server.address,
        '--task-queue',
        RATE_QUEUE,
        '--task-queue-type',
        'activity',
        '--queue-rps-limit',
        value,
        '--queue-rps-limit-reason',
        'workerless test',
      ]);
    await setLimit('0.2');
    // The backlog that waits is the rate-limited activities.
    const { worker, close } = await workflowOnlyWorker(RATE_QUEUE);
    const workerless = cli(RATE_QUEUE, ['--temporal-max-workers', '5']);
    try {
      await worker.runUntil(async () => {
        await startOrderWorkflows(fixture.client, { taskQueue: RATE_QUEUE, count: 20, workMs: 100, idPrefix: 'rate' });
        await waitForLog(workerless, (l) => l['msg'] === CAPPED_LOG, 30_000);
        // 0.2 tasks/s over the 1 s horizon feeds ceil(0.2 / 5) = 1 worker; 20 activities alone would ask for 4.
        await sleep(6_000);
        assert.equal(invocations(RATE_QUEUE).length, 1, `invocations: ${invocations(RATE_QUEUE).length}`);
        const capped = workerless.logs().filter((l) => l['msg'] === CAPPED_LOG);
        assert.equal(capped.length, 1, 'logged once while the cap stays the same');
        assert.equal(capped[0]?.['rateCapWorkers'], 1);
        // The server holds the limit as a float32: 0.2 comes back as 0.20000000298023224.
        assert.ok(Math.abs(Number(capped[0]?.['activityRateLimitPerSec']) - 0.2) < 1e-6, String(capped[0]?.['activityRateLimitPerSec']));
        assert.equal(capped[0]?.['workflowRateLimitPerSec'], 4000, "workflow tasks keep the server's default");
        assert.ok(workerless.logs().some((l) => l['msg'] === 'task queue observed' && l['reason'] === 'rate-limited'));

        // Lifted ('default': the server's own 4000/s again): the backlog's own size decides.
        await setLimit('default');
        await fixture.endpoint.waitFor(() => invocations(RATE_QUEUE).length >= 3, 20_000);
        console.log(`# rate limit: 1 worker while 0.2 tasks/s; ${invocations(RATE_QUEUE).length} once lifted`);
      });
    } finally {
      await stopCli(workerless);
      await close();
    }
  });

  it('with --temporal-fairness, waits for the oldest task to pass the age limit however many tasks wait, then adds one worker', async () => {
    const { worker, close } = await workflowOnlyWorker(FAIR_QUEUE);
    const workerless = cli(FAIR_QUEUE, ['--temporal-fairness', '--temporal-max-backlog-age', '6s']);
    try {
      await worker.runUntil(async () => {
        await waitForLog(workerless, (l) => l['msg'] === 'connected to temporal', 20_000);
        // 30 activities of one tenant (fairness key): on the count (5 per worker, cool-off 1 s) this asks for the maximum, 3, at once.
        const startedAt = Date.now();
        await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            fixture.client.workflow.start('orderWorkflow', {
              taskQueue: FAIR_QUEUE,
              workflowId: `fair-${i}-${Date.now()}`,
              args: [{ orderId: `order-${i}`, workMs: 100 }],
              workflowExecutionTimeout: 120_000,
              priority: { fairnessKey: 'tenant-a', fairnessWeight: 1 },
            }),
          ),
        );
        await fixture.endpoint.waitFor(() => invocations(FAIR_QUEUE).length > 0, 30_000);
        const firstMs = (invocations(FAIR_QUEUE)[0]?.startedAt ?? 0) - startedAt;
        assert.ok(firstMs >= 5_500, `first worker ${firstMs} ms after the backlog formed, before the 6 s age limit`);
        // The log line follows Lambda's answer to the Invoke.
        await waitForLog(workerless, (l) => l['msg'] === 'workers invoked', 10_000);
        const first = workerless.logs().find((l) => l['msg'] === 'workers invoked');
        assert.equal(first?.['reason'], 'backlog-age');
        assert.equal(first?.['workersInvoked'], 1, 'one worker, not backlog / tasks-per-worker');
        assert.ok(
          workerless
            .logs()
            .some((l) => l['msg'] === 'task queue observed' && l['reason'] === 'below-threshold' && Number(l['backlog']) >= 30),
          'young backlog of 30 read as not urgent',
        );
        console.log(`# fairness: 30 waiting tasks, first worker after ${firstMs} ms (age limit 6 s)`);
      });
    } finally {
      await stopCli(workerless);
      await close();
    }
  });
});
