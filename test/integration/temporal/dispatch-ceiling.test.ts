// No workers bought at a ceiling, against a real server: `temporal server start-dev` (CLI v1.5.1, server 1.29.1) with
// fairness on, a per-fairness-key rate limit on the activity task queue (`temporal task-queue config set
// --fairness-key-rps-limit-default`, Temporal's docs page develop/task-queue-priority-fairness: "each individual
// fairness key will be limited to this rate"), and every task under one key. The queue's effective rate limit stays the
// server's default, so the rate cap (rate-cap.ts) does not bind: only the dispatch rate shows that workers do not help.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { NativeConnection, Worker } from '@temporalio/worker';
import * as activities from '../../../examples/temporal-lambda-worker/activities.ts';
import { spilloverOnlyArgs, startTemporalFixture, startWorkerless, temporalCliPath, type TemporalFixture } from '../../support/temporal.ts';

const TASK_QUEUE = 'ceiling-spill';
const HELD =
  'dispatch rate flat at a ceiling: the workers added last did not raise it while the backlog grew; adding no workers until it moves';
const RESUMED = 'dispatch rate moved off the ceiling; scaling up again';
const MAX_WORKERS = 10;

let fixture: TemporalFixture;

before(async () => {
  fixture = await startTemporalFixture({
    taskQueues: [TASK_QUEUE],
    tmpPrefix: 'workerless-temporal-ceiling-',
    workerTimeoutSec: 60,
    dynamicConfig: { 'matching.useNewMatcher': true, 'matching.enableFairness': true },
  });
});

after(async () => {
  await fixture?.stop();
});

const setKeyLimit = (value: string) =>
  promisify(execFile)(temporalCliPath(), [
    'task-queue',
    'config',
    'set',
    '--address',
    fixture.server.address,
    '--task-queue',
    TASK_QUEUE,
    '--task-queue-type',
    'activity',
    '--fairness-key-rps-limit-default',
    value,
    '--fairness-key-rps-limit-reason',
    'workerless test',
  ]);

function invocations() {
  return fixture.endpoint.invocations.filter((r) => r.functionName === 'temporal-worker');
}

describe('spillover at a dispatch ceiling (real server, a fairness-key rate limit)', { timeout: 150_000 }, () => {
  it('stops adding workers once more did not raise the dispatch rate while the backlog grew, and resumes when the limit is lifted', async () => {
    await setKeyLimit('2');
    // A long-lived worker serves the workflow tasks and the activities from the first one, so the activities (2 per
    // second at most) are the backlog and are dispatched at the key's limit before the first spillover worker starts.
    // The server's tasksDispatchRate is an average since the queue's first task, not the rate now: with no activity
    // dispatched until a spillover worker had started (5.5 s after its invocation on a loaded host), it counted those
    // seconds as zeros and climbed for half a minute at a flat true rate (a loaded run read 0.95, 1.23, 1.45, then 1.85
    // per second 14, 20, 28 and 35 s in), so each scale-up seemed to raise it: the ceiling was found only after 4 or
    // all 6 workers, and the climb out of the 20% band even read as the limit lifted.
    const connection = await NativeConnection.connect({ address: fixture.server.address });
    const worker = await Worker.create({
      connection,
      namespace: fixture.server.namespace,
      taskQueue: TASK_QUEUE,
      workflowBundle: { codePath: fixture.bundlePath },
      activities,
    });
    const workerless = startWorkerless(
      [
        // One worker per 20 waiting tasks: the fleet grows step by step with a backlog growing at ~3 tasks/s.
        ...spilloverOnlyArgs(fixture, TASK_QUEUE, 20),
        '--temporal-max-workers',
        String(MAX_WORKERS),
        '--temporal-worker-lifetime',
        '60s',
      ],
      {
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        WORKERLESS_TEMPORAL_ADDRESS: fixture.server.address,
        WORKERLESS_LOG_LEVEL: 'debug',
      },
    );
    const feeding = new AbortController();
    try {
      await worker.runUntil(async () => {
        // 5 workflows a second, every one under the same fairness key, until the end of the test.
        let n = 0;
        const feed = (async () => {
          while (!feeding.signal.aborted) {
            await Promise.all(
              Array.from({ length: 5 }, () =>
                fixture.client.workflow.start('orderWorkflow', {
                  taskQueue: TASK_QUEUE,
                  workflowId: `ceiling-${n++}-${Date.now()}`,
                  args: [{ orderId: `order-${n}`, workMs: 50 }],
                  workflowExecutionTimeout: 120_000,
                  priority: { fairnessKey: 'tenant-a' },
                }),
              ),
            );
            await sleep(1_000, undefined, { signal: feeding.signal }).catch(() => undefined);
          }
        })();
        const held = await until(() => workerless.logs().find((l) => l['msg'] === HELD), 60_000, workerless.output);
        const atHold = invocations().length;
        assert.ok(Number(held['workersBefore']) >= 1, JSON.stringify(held));
        // The activities' rate, before and after the workers that did not help: the key's limit of 2 per second, near
        // it, and well below the 5 per second fed. The server's average counts the limiter's first burst (about 4
        // tasks) over the seconds since the first task: measured 3.41 at 1.8 s, 3.06 at 4.5 s and 2.1 to 2.45 from
        // 10 s on, and the scale-up judged comes after the first one (over 20 tasks at 5 a second, then a cool-off),
        // so 3.5 bounds it from above. On two loaded cores the workers reach less than the limit (a CI run read 1.41).
        for (const rate of [held['dispatchRatePerSec'], held['dispatchRateBefore']])
          assert.ok(Number(rate) > 1 && Number(rate) < 3.5, JSON.stringify(held));
        // Held: the backlog keeps growing, and the count wants more workers than were bought (the maximum leaves room).
        await sleep(8_000);
        const observed = workerless.logs().filter((l) => l['msg'] === 'task queue observed');
        const last = observed.at(-1);
        assert.ok(
          Number(last?.['backlog']) > Number(held['backlog']),
          `backlog grew: ${String(last?.['backlog'])} > ${String(held['backlog'])}`,
        );
        assert.ok(Number(last?.['desiredWorkers']) > atHold, `the count wants more: ${String(last?.['desiredWorkers'])}`);
        assert.equal(invocations().length, atHold, 'no worker bought while held');
        assert.ok(atHold < MAX_WORKERS, `held below the maximum: ${atHold}`);
        assert.equal(workerless.logs().filter((l) => l['msg'] === HELD).length, 1, 'logged once');
        console.log(
          `# ceiling: held at ${atHold} workers, dispatch ${String(held['dispatchRatePerSec'])}/s, backlog ${String(held['backlog'])} -> ${String(last?.['backlog'])}`,
        );

        // Lifted: the rate moves off the ceiling (the workers held drain the backlog at once, so none is needed).
        await setKeyLimit('default');
        await until(() => workerless.logs().find((l) => l['msg'] === RESUMED), 30_000, workerless.output);
        feeding.abort();
        await feed;
      });
    } finally {
      feeding.abort();
      const { code } = await workerless.stop();
      await connection.close();
      assert.equal(code, 0, `exit ${String(code)}\n${workerless.output()}`);
    }
  });
});

async function until<T>(probe: () => T | undefined, timeoutMs: number, output: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms:\n${output().slice(-6_000)}`);
    await sleep(200);
  }
}
