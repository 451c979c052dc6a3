import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { pino } from 'pino';
import type { MetricDatum } from '../../../src/core/telemetry/metrics-sink.ts';
import type { TemporalConfig } from '../../../src/temporal/options.ts';
import { runTemporalSpillover, type SpilloverDeps } from '../../../src/temporal/spillover.ts';
import type { TemporalStatsConnection } from '../../../src/temporal/connection.ts';
import type { TaskQueueStats, TaskTypeStats } from '../../../src/temporal/task-queue-stats.ts';
import type { InvokeOutcome, WorkerInvocationPayload } from '../../../src/temporal/worker-invoker.ts';

const T0 = 1_700_000_000_000;

function config(overrides: Partial<TemporalConfig> = {}): TemporalConfig {
  return {
    address: 'localhost:7233',
    namespace: 'default',
    taskQueues: ['orders'],
    functionName: 'temporal-worker',
    maxWorkers: 3,
    maxWorkersTotal: undefined,
    workerLifetimeMs: 60_000,
    workerStartTimeoutMs: 60_000,
    pollIntervalMs: 1_000,
    backlogThreshold: 0,
    maxBacklogAgeMs: undefined,
    coolOffMs: 2_000,
    tasksPerWorker: 10,
    spillPriority: undefined,
    fairness: false,
    versionFunctions: {},
    workerSet: undefined,
    tls: undefined,
    apiKey: undefined,
    ...overrides,
  };
}

function typeStats(backlog: number, lastPollAt?: number, pollerInfos: TaskTypeStats['pollerInfos'] = []): TaskTypeStats {
  const polls = [lastPollAt, ...pollerInfos.map((p) => p.lastAccessAt)].filter((at): at is number => at !== undefined);
  return {
    backlog,
    backlogAgeMs: 0,
    addRatePerSec: 0,
    dispatchRatePerSec: 0,
    known: true,
    byPriority: new Map(),
    rateLimitPerSec: undefined,
    pollers: polls.length,
    lastPollAt: polls.length > 0 ? Math.max(...polls) : undefined,
    pollerInfos:
      lastPollAt === undefined ? pollerInfos : [{ identity: 'long-lived', lastAccessAt: lastPollAt, buildId: undefined }, ...pollerInfos],
  };
}

/** A reading as the tests write it: versions default to none (an unversioned queue). */
type Reading = Omit<TaskQueueStats, 'versions'> & { versions?: TaskQueueStats['versions'] };

/**
 * A fake world with a fake clock: every sleep advances time and lets the loop run again; the test script
 * decides what each read returns and what each invocation answers, and stops the controller after `ticks`.
 */
function harness(options: {
  ticks: number;
  read: (taskQueue: string, now: number) => Reading | Error;
  invoke?: (payload: WorkerInvocationPayload, now: number, functionName: string) => InvokeOutcome;
  connect?: (attempt: number) => Promise<TemporalStatsConnection>;
}) {
  let now = T0;
  let sleeps = 0;
  const controller = new AbortController();
  const metrics: MetricDatum[] = [];
  const invocations: Array<{ at: number; payload: WorkerInvocationPayload; functionName: string }> = [];
  const reads: Array<{ at: number; taskQueue: string }> = [];
  const logs: Array<Record<string, unknown>> = [];
  let closed = 0;
  let connectAttempts = 0;
  const stream = { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) };
  const deps: SpilloverDeps = {
    logger: pino({ level: 'debug' }, stream),
    metrics: { record: (datum) => metrics.push(datum) },
    lambda: new LambdaClient({ region: 'us-east-1' }),
    random: () => 0.5,
    clock: {
      now: () => now,
      sleep: async (ms) => {
        now += ms;
        if (++sleeps >= options.ticks) controller.abort();
        await new Promise((resolve) => setImmediate(resolve));
      },
    },
    invoker: {
      invoke: async (functionName, payload) => {
        invocations.push({ at: now, payload, functionName });
        return options.invoke?.(payload, now, functionName) ?? { kind: 'invoked', requestId: `req-${invocations.length}` };
      },
    },
    connect: async () => {
      connectAttempts++;
      if (options.connect) return options.connect(connectAttempts);
      return {
        read: async (taskQueue) => {
          reads.push({ at: now, taskQueue });
          const result = options.read(taskQueue, now);
          if (result instanceof Error) throw result;
          return { versions: [], ...result };
        },
        close: async () => {
          closed++;
        },
      };
    },
  };
  return {
    deps,
    controller,
    metrics,
    invocations,
    reads,
    logs,
    closed: () => closed,
    connectAttempts: () => connectAttempts,
    now: () => now,
  };
}

describe('runTemporalSpillover', () => {
  it('invokes workers for a backlog nobody serves, up to maxWorkers, and replaces them after their lifetime', async () => {
    const h = harness({
      ticks: 70,
      read: () => ({ workflow: typeStats(100), activity: typeStats(0) }),
    });
    await runTemporalSpillover(config({ maxWorkers: 3, workerLifetimeMs: 60_000 }), h.deps, h.controller.signal);
    // 3 at the first reading, then nothing while they live, then 3 again after 60 s
    assert.deepEqual(
      h.invocations.map((i) => i.at - T0),
      [0, 0, 0, 60_000, 60_000, 60_000],
    );
    assert.deepEqual(h.invocations[0]?.payload, {
      source: 'workerless.temporal-spillover',
      namespace: 'default',
      taskQueue: 'orders',
      requestedAt: T0,
      expiresAt: T0 + 60_000,
      startBy: T0 + 60_000,
    });
    const invoked = h.metrics.filter((m) => m.name === 'WorkersInvoked').reduce((sum, m) => sum + m.value, 0);
    assert.equal(invoked, 6);
    assert.ok(h.metrics.some((m) => m.name === 'Backlog' && m.value === 100 && m.dimensions['TaskQueue'] === 'orders'));
    assert.equal(h.closed(), 1);
  });

  it('invokes nothing while polling workers keep the backlog at zero', async () => {
    const h = harness({ ticks: 30, read: (_q, now) => ({ workflow: typeStats(0, now - 500), activity: typeStats(0, now - 500) }) });
    await runTemporalSpillover(config(), h.deps, h.controller.signal);
    assert.equal(h.invocations.length, 0);
    assert.equal(h.reads.length, 30);
    assert.ok(h.metrics.filter((m) => m.name === 'WorkersInvoked').every((m) => m.value === 0));
  });

  it('ignores a short blip of backlog while workers poll (spillover only)', async () => {
    const h = harness({
      ticks: 20,
      read: (_q, now) => ({ workflow: typeStats(now - T0 === 5_000 ? 4 : 0, now - 200), activity: typeStats(0) }),
    });
    await runTemporalSpillover(config({ coolOffMs: 2_000 }), h.deps, h.controller.signal);
    assert.equal(h.invocations.length, 0);
  });

  it('watches every task queue independently', async () => {
    const h = harness({
      ticks: 6,
      read: (taskQueue) => ({ workflow: typeStats(taskQueue === 'busy' ? 25 : 0), activity: typeStats(0) }),
    });
    await runTemporalSpillover(config({ taskQueues: ['busy', 'quiet'] }), h.deps, h.controller.signal);
    assert.deepEqual(new Set(h.reads.map((r) => r.taskQueue)), new Set(['busy', 'quiet']));
    assert.equal(h.invocations.length, 3);
    assert.ok(h.invocations.every((i) => i.payload.taskQueue === 'busy'));
  });

  it('keeps all task queues together within --temporal-max-workers-total, split evenly', async () => {
    const invokedIds: string[] = [];
    const h = harness({
      ticks: 20,
      // Every worker invoked so far polls the queue it was invoked for: all stay alive.
      read: (taskQueue, now) => ({
        workflow: typeStats(100),
        activity: typeStats(
          0,
          undefined,
          invokedIds
            .filter((id) => id.startsWith(taskQueue))
            .map((id) => ({ identity: `${id}@arn`, lastAccessAt: now - 100, buildId: undefined })),
        ),
      }),
      invoke: (payload) => {
        const requestId = `${payload.taskQueue}-${invokedIds.length}`;
        invokedIds.push(requestId);
        return { kind: 'invoked', requestId };
      },
    });
    await runTemporalSpillover(config({ taskQueues: ['a', 'b'], maxWorkers: 5, maxWorkersTotal: 4 }), h.deps, h.controller.signal);
    assert.equal(h.invocations.length, 4);
    assert.equal(h.invocations.filter((i) => i.payload.taskQueue === 'a').length, 2);
    assert.ok(h.logs.some((l) => l['msg'] === 'scale-up held back by the worker limits' && l['maxWorkersTotal'] === 4));
  });

  it('replaces a worker that stops polling while tasks wait, long before its lifetime, and counts it lost', async () => {
    let crashed = false;
    const h = harness({
      ticks: 40,
      read: (_q, now) => {
        // req-1 polls for 5 s after its invocation, then dies; later workers keep polling.
        if (now - T0 > 5_000) crashed = true;
        const ids = h.invocations.map((_, i) => `req-${i + 1}`).filter((id) => !(crashed && id === 'req-1'));
        const seen = ids.map((id) => ({
          identity: `${id}@arn`,
          lastAccessAt: id === 'req-1' ? Math.min(now, T0 + 5_000) : now - 100,
          buildId: undefined,
        }));
        if (crashed) seen.push({ identity: 'req-1@arn', lastAccessAt: T0 + 5_000, buildId: undefined });
        return { workflow: typeStats(5), activity: typeStats(0, undefined, seen) };
      },
    });
    await runTemporalSpillover(config({ maxWorkers: 1, pollIntervalMs: 1_000, workerLifetimeMs: 600_000 }), h.deps, h.controller.signal);
    const times = h.invocations.map((i) => i.at - T0);
    // stale after 2 poll intervals + 5 s of server caching = 7 s after its last poll (T0 + 5 s)
    assert.deepEqual(times, [0, 13_000]);
    assert.equal(
      h.metrics.filter((m) => m.name === 'WorkersLost').reduce((sum, m) => sum + m.value, 0),
      1,
    );
    assert.ok(h.logs.some((l) => l['msg'] === 'workers stopped polling before their lifetime ended'));
  });

  it('invokes each current and ramping version through the function mapped to its Build ID, with the version in the payload', async () => {
    const version = (buildId: string, role: 'current' | 'ramping', backlog: number) => ({
      version: { deploymentName: 'orders', buildId },
      role,
      workflow: { backlog, backlogAgeMs: 0, addRatePerSec: 0, dispatchRatePerSec: 0, known: true, byPriority: new Map() },
      activity: { backlog: 0, backlogAgeMs: 0, addRatePerSec: 0, dispatchRatePerSec: 0, known: true, byPriority: new Map() },
    });
    const h = harness({
      ticks: 3,
      read: () => ({
        workflow: typeStats(25),
        activity: typeStats(0),
        versions: [version('v1', 'current', 20), version('v2', 'ramping', 5), version('v3', 'ramping', 5)],
      }),
    });
    await runTemporalSpillover(
      config({ maxWorkers: 10, versionFunctions: { v1: 'temporal-worker:v1', v2: 'temporal-worker:v2' } }),
      h.deps,
      h.controller.signal,
    );
    const by = (fn: string) => h.invocations.filter((i) => i.functionName === fn);
    assert.equal(by('temporal-worker:v1').length, 2, 'ceil(20 / 10)');
    assert.equal(by('temporal-worker:v2').length, 1);
    assert.ok(by('temporal-worker:v1').every((i) => i.payload.buildId === 'v1' && i.payload.deploymentName === 'orders'));
    assert.ok(by('temporal-worker:v2').every((i) => i.payload.buildId === 'v2'));
    assert.equal(h.invocations.length, 3, 'v3 has no function mapped: no spillover for it');
    assert.equal(
      h.logs.filter((l) => l['msg'] === '--temporal-versions maps no function to this Build ID; no spillover for it').length,
      1,
      'warned once',
    );
  });

  it('backs off after a throttled invocation, counts it as refused, and recovers', async () => {
    let throttled = true;
    const h = harness({
      ticks: 60,
      read: (_q, now) => {
        if (now - T0 >= 20_000) throttled = false;
        return { workflow: typeStats(5), activity: typeStats(0) };
      },
      invoke: () =>
        throttled ? { kind: 'throttled', code: 'TooManyRequestsException', message: 'Rate exceeded' } : { kind: 'invoked', requestId: 'r' },
    });
    await runTemporalSpillover(config({ maxWorkers: 1 }), h.deps, h.controller.signal);
    const attempts = h.invocations.filter((i) => i.at - T0 < 20_000).length;
    // back-off: far fewer attempts than the 20 readings in those 20 s, but more than one
    assert.ok(attempts >= 2 && attempts <= 8, `attempts while throttled: ${attempts}`);
    const refused = h.metrics.filter((m) => m.name === 'InvocationsRefused').reduce((sum, m) => sum + m.value, 0);
    assert.equal(refused, attempts);
    const successes = h.invocations.filter((i) => i.at - T0 >= 20_000);
    assert.equal(successes.length, 1, 'one worker once capacity returns');
    assert.ok(
      h.logs.some(
        (l) =>
          l['msg'] === 'worker invocations failed; retrying later' &&
          l['code'] === 'TooManyRequestsException' &&
          l['taskQueue'] === 'orders',
      ),
    );
  });

  it('logs a missing function as an error and keeps retrying, slowly', async () => {
    const h = harness({
      ticks: 120,
      read: () => ({ workflow: typeStats(5), activity: typeStats(0) }),
      invoke: () => ({ kind: 'refused', code: 'ResourceNotFoundException', message: 'Function not found' }),
    });
    await runTemporalSpillover(config(), h.deps, h.controller.signal);
    assert.ok(h.invocations.length >= 2 && h.invocations.length <= 10, `attempts: ${h.invocations.length}`);
    const error = h.logs.find((l) => l['msg'] === 'the worker function refused the invocation; retrying later');
    assert.equal(error?.['level'], 50);
    assert.equal(error?.['function'], 'temporal-worker');
    assert.equal(error?.['errorMessage'], 'Function not found');
  });

  it("caps Lambda's refusal text in the log (src/util/cap-text.ts)", async () => {
    const message = `Could not parse request body: ${'x'.repeat(8192)}MARKER`;
    const h = harness({
      ticks: 5,
      read: () => ({ workflow: typeStats(5), activity: typeStats(0) }),
      invoke: () => ({ kind: 'refused', code: 'InvalidRequestContentException', message }),
    });
    await runTemporalSpillover(config(), h.deps, h.controller.signal);
    const error = h.logs.find((l) => l['msg'] === 'the worker function refused the invocation; retrying later');
    assert.match(String(error?.['errorMessage']), /^Could not parse request body: x+…\[\d+ bytes cut\]$/);
    assert.ok(!JSON.stringify(h.logs).includes('MARKER'));
  });

  it('keeps running and backs off while Temporal is unreachable', async () => {
    let down = true;
    const h = harness({
      ticks: 40,
      read: (_q, now) => {
        if (now - T0 > 60_000) down = false;
        return down ? new Error('14 UNAVAILABLE: No connection established') : { workflow: typeStats(1), activity: typeStats(0) };
      },
    });
    await runTemporalSpillover(config(), h.deps, h.controller.signal);
    const failedReads = h.reads.filter((r) => r.at - T0 <= 60_000).length;
    assert.ok(failedReads < 30, `reads while down: ${failedReads}`);
    assert.ok(h.logs.some((l) => l['msg'] === 'could not read task queue statistics; retrying'));
    assert.ok(h.invocations.length >= 1, 'invokes once Temporal answers again');
  });

  it('retries the initial connection and stops promptly when aborted while connecting', async () => {
    const h = harness({
      ticks: 1_000,
      read: () => ({ workflow: typeStats(0), activity: typeStats(0) }),
      connect: (attempt) => (attempt < 3 ? Promise.reject(new Error('connect ECONNREFUSED')) : new Promise<never>(() => {})),
    });
    const running = runTemporalSpillover(config(), h.deps, h.controller.signal);
    while (h.connectAttempts() < 3) await new Promise((resolve) => setImmediate(resolve));
    h.controller.abort();
    await running;
    assert.equal(h.connectAttempts(), 3);
    assert.equal(h.logs.filter((l) => l['msg'] === 'could not connect to temporal; retrying').length, 2);
  });

  it('resolves at once when the signal is already aborted', async () => {
    const h = harness({ ticks: 1, read: () => ({ workflow: typeStats(0), activity: typeStats(0) }) });
    h.controller.abort();
    await runTemporalSpillover(config(), h.deps, h.controller.signal);
    assert.equal(h.reads.length, 0);
  });
});

describe('runTemporalSpillover: unknown statistics, rate limits and priorities', () => {
  const msgs = (logs: Array<Record<string, unknown>>, msg: string) => logs.filter((l) => l['msg'] === msg);

  it('invokes nothing while the statistics are unknown, says so once in logs and metrics, and acts once they return', async () => {
    const h = harness({
      ticks: 12,
      // Unloaded for the first 5 s: no stats in the responses (zeros in the reading, known: false).
      read: (_, now) =>
        now - T0 < 5_000
          ? { workflow: { ...typeStats(0), known: false }, activity: { ...typeStats(0), known: false } }
          : { workflow: typeStats(30), activity: typeStats(0) },
    });
    await runTemporalSpillover(config({ coolOffMs: 0 }), h.deps, h.controller.signal);
    assert.ok(h.invocations.length > 0);
    assert.ok(
      h.invocations.every((i) => i.at - T0 >= 5_000),
      `invoked at ${h.invocations.map((i) => i.at - T0).join(',')}`,
    );
    assert.equal(
      msgs(
        h.logs,
        'task queue statistics unknown (the server sent none; Temporal Cloud unloads a task queue without pollers for 5 minutes); no workers invoked on them',
      ).length,
      1,
    );
    assert.equal(msgs(h.logs, 'task queue statistics known again').length, 1);
    const known = h.metrics.filter((m) => m.name === 'BacklogKnown').map((m) => m.value);
    assert.deepEqual(known.slice(0, 6), [0, 0, 0, 0, 0, 1]);
    const backlog = h.metrics.filter((m) => m.name === 'Backlog').map((m) => m.value);
    assert.ok(backlog.slice(0, 5).every(Number.isNaN), 'the backlog gauge has no value while unknown');
    assert.equal(backlog[5], 30);
    assert.equal(h.metrics.filter((m) => m.name === 'BacklogAge').length, 7, 'no age sample while unknown');
  });

  it('in a fleet, reads and buys workers only for the task queues this replica handles, and takes one over when it moves here', async () => {
    // Two task queues with a backlog; "orders" is another replica's for the first 5 s, then this one's.
    const h = harness({ ticks: 10, read: () => ({ workflow: typeStats(100), activity: typeStats(0) }) });
    const deps = { ...h.deps, serves: (taskQueue: string) => taskQueue !== 'orders' || h.now() - T0 >= 5_000 };
    await runTemporalSpillover(config({ taskQueues: ['orders', 'refunds'], maxWorkers: 2 }), deps, h.controller.signal);
    const at = (tq: string) => h.reads.filter((r) => r.taskQueue === tq).map((r) => r.at - T0);
    assert.ok(
      at('orders').every((t) => t >= 5_000),
      `orders read only once handled here: ${at('orders').join(',')}`,
    );
    assert.ok(at('orders').length > 0, 'orders read once it moved here');
    assert.ok(
      at('refunds').some((t) => t < 5_000),
      'refunds read from the start',
    );
    const invokedFor = (tq: string) => h.invocations.filter((i) => i.payload.taskQueue === tq).map((i) => i.at - T0);
    // The loops share the fake clock, so each reading is at the time the other's sleep left it.
    const first = (tq: string) => at(tq)[0]!;
    assert.deepEqual(invokedFor('refunds'), [first('refunds'), first('refunds')], 'maxWorkers for the queue handled here');
    assert.deepEqual(invokedFor('orders'), [first('orders'), first('orders')], 'bought only once it moved here');
    const told = (m: string) => h.logs.filter((l) => l['msg'] === m && l['taskQueue'] === 'orders').length;
    assert.equal(told('task queue handled by another replica of the fleet: no workers bought here while it is'), 1);
    assert.equal(told('task queue handled here again: its backlog is read and its workers bought by this replica'), 1);
    const known = h.metrics.filter((m) => m.name === 'BacklogKnown' && m.dimensions['TaskQueue'] === 'orders').map((m) => m.value);
    assert.equal(known[0], 0, 'not known here while another replica handles it');
  });

  it('caps the workers by the rate limit and logs the cap once per change', async () => {
    const h = harness({
      ticks: 40,
      read: (_, now) => ({
        workflow: { ...typeStats(0), rateLimitPerSec: 4000 },
        // Over the 2 s horizon, 1 task per worker: 0.2 tasks/s feeds 1 worker, 0.4 still 1 (0.8 tasks), 1.5 feeds 3.
        activity: { ...typeStats(200), rateLimitPerSec: now - T0 < 20_000 ? 0.2 : now - T0 < 30_000 ? 0.4 : 1.5 },
      }),
    });
    await runTemporalSpillover(config({ maxWorkers: 10, tasksPerWorker: 1, coolOffMs: 2_000 }), h.deps, h.controller.signal);
    const capped = msgs(h.logs, 'workers capped by what the task queue rate limit can keep busy');
    assert.deepEqual(
      capped.map((l) => [l['rateCapWorkers'], l['activityRateLimitPerSec']]),
      [
        [1, 0.2],
        [3, 1.5],
      ],
    );
    assert.deepEqual(
      h.invocations.map((i) => i.at - T0),
      [0, 30_000, 30_000],
    );
  });

  it('spills over only for priorities 1 to K once the server reports the backlog per priority', async () => {
    const byPriority = (p1: number, p5: number) =>
      new Map([
        [1, { backlog: p1, backlogAgeMs: 0, addRatePerSec: 0, dispatchRatePerSec: 0 }],
        [5, { backlog: p5, backlogAgeMs: 0, addRatePerSec: 0, dispatchRatePerSec: 0 }],
      ]);
    const h = harness({
      ticks: 20,
      read: (_, now) => {
        const p1 = now - T0 >= 10_000 ? 4 : 0;
        return { workflow: { ...typeStats(p1 + 50), byPriority: byPriority(p1, 50) }, activity: typeStats(0) };
      },
    });
    await runTemporalSpillover(config({ spillPriority: 2, maxWorkers: 5, tasksPerWorker: 2, coolOffMs: 0 }), h.deps, h.controller.signal);
    // 50 priority-5 tasks for 10 s: nothing; then 4 priority-1 tasks: 2 workers, not 5
    assert.deepEqual(
      h.invocations.map((i) => i.at - T0),
      [10_000, 10_000],
    );
    assert.equal(
      msgs(h.logs, 'the server reports the backlog per priority; spilling over for priorities 1 to spillPriority only').length,
      1,
    );
  });

  it('falls back to the whole backlog, logging once, where the server files every task under the default priority', async () => {
    const h = harness({
      ticks: 5,
      read: () => ({
        workflow: { ...typeStats(6), byPriority: new Map([[3, { backlog: 6, backlogAgeMs: 0, addRatePerSec: 0, dispatchRatePerSec: 0 }]]) },
        activity: typeStats(0),
      }),
    });
    await runTemporalSpillover(config({ spillPriority: 1, maxWorkers: 5, tasksPerWorker: 2, coolOffMs: 0 }), h.deps, h.controller.signal);
    assert.equal(h.invocations.filter((i) => i.at === T0).length, 3);
    assert.equal(
      msgs(
        h.logs,
        'no backlog reported outside the default priority yet (the classic matcher files every task there); spilling over for the whole backlog',
      ).length,
      1,
    );
  });
});
