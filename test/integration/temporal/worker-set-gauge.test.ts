// Worker sets against a real server (`temporal server start-dev`, server 1.29.1): with --temporal-worker-set-max the
// desired-workers gauge on /metrics (what deploy/keda/temporal-worker-set-scaledobject.yaml follows) rises while a
// backlog grows, and falls back to the minimum once the Lambda workers drained it and the scale-down cool-down passed.
// The burst is also the measurement docs/temporal.md quotes: the time from the backlog to the first Lambda worker and
// to the first desired set worker, and both counts over the burst.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../support/http.ts';
import {
  spilloverOnlyArgs,
  startOrderWorkflows,
  startTemporalFixture,
  startWorkerless,
  type TemporalFixture,
} from '../../support/temporal.ts';

const TASK_QUEUE = 'worker-set';

let fixture: TemporalFixture;

before(async () => {
  fixture = await startTemporalFixture({ taskQueues: [TASK_QUEUE], tmpPrefix: 'workerless-temporal-worker-set-', workerTimeoutSec: 20 });
});

after(async () => {
  await fixture?.stop();
});

/** The gauge's value for the task queue in a /metrics exposition; undefined when absent. */
function desired(exposition: string): number | undefined {
  const line = exposition.split('\n').find((l) => l.startsWith(`workerless_temporal_desired_workers{task_queue="${TASK_QUEUE}"}`));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('worker sets: the desired-workers gauge (real server)', { timeout: 120_000 }, () => {
  it('rises while the backlog grows and comes down once it drained, each step after its cool-down', async () => {
    const httpPort = await freePort();
    const workerless = startWorkerless(
      [
        ...spilloverOnlyArgs(fixture, TASK_QUEUE),
        '--temporal-max-workers',
        '3',
        '--temporal-worker-lifetime',
        '20s',
        '--temporal-worker-set-max',
        '10',
        '--temporal-worker-capacity',
        '2',
        '--temporal-worker-set-max-step',
        '3',
        '--temporal-scale-up-cooldown',
        '1s',
        '--temporal-scale-down-cooldown',
        '4s',
        '--temporal-max-backlog-age',
        '10s',
        '--http-port',
        String(httpPort),
      ],
      { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', WORKERLESS_TEMPORAL_ADDRESS: fixture.server.address },
    );
    const series: { at: number; desired: number | undefined; lambda: number }[] = [];
    const sampling = new AbortController();
    const sampler = (async () => {
      while (!sampling.signal.aborted) {
        const text = await fetch(`http://127.0.0.1:${httpPort}/metrics`).then(
          (r) => r.text(),
          () => '',
        );
        const lambda = fixture.endpoint.invocations.filter((r) => r.functionName === 'temporal-worker').length;
        series.push({ at: Date.now(), desired: desired(text), lambda });
        await sleep(250, undefined, { signal: sampling.signal }).catch(() => undefined);
      }
    })();
    try {
      await until(() => workerless.logs().some((l) => l['msg'] === 'connected to temporal'), 20_000, workerless.output);
      await until(() => series.at(-1)?.desired === 0, 10_000, workerless.output);
      const t0 = Date.now();
      const handles = await startOrderWorkflows(fixture.client, { taskQueue: TASK_QUEUE, count: 40, workMs: 200, idPrefix: 'set' });
      await until(() => series.some((s) => s.at > t0 && (s.desired ?? 0) > 0), 20_000, workerless.output);
      await Promise.all(handles.map((h) => h.result()));
      const drainedAt = Date.now();
      // Down again, step by step after the scale-down cool-down. Not to 0 here: the server's add rate is an average
      // over a window and decays for a while after a burst, and a stream at that rate would need a worker.
      const high = Math.max(...series.map((s) => s.desired ?? 0));
      await until(() => (series.at(-1)?.desired ?? 99) <= high / 3, 30_000, workerless.output);
      const peak = Math.max(...series.map((s) => s.desired ?? 0));
      const firstSet = series.find((s) => s.at > t0 && (s.desired ?? 0) > 0)!.at - t0;
      const firstLambda = (fixture.endpoint.invocations.find((r) => r.functionName === 'temporal-worker')?.startedAt ?? NaN) - t0;
      assert.ok(peak >= 2 && peak <= 10, `peak ${peak}`);
      const zeroAt = series.find((s) => s.at > drainedAt && (s.desired ?? 99) <= high / 3)?.at ?? NaN;
      const lastUp = series.filter((s) => (s.desired ?? 0) > 0).at(-1)?.at ?? NaN;
      const resized = workerless.logs().filter((l) => l['msg'] === 'worker set resized');
      for (const [i, l] of resized.entries()) {
        if (i === 0 || l['reason'] !== 'scale-down') continue;
        const gap = Number(l['time']) - Number(resized[i - 1]?.['time']);
        assert.ok(gap >= 4_000, `a scale-down ${gap} ms after the previous change, within the 4 s cool-down`);
      }
      assert.ok(resized.some((l) => l['reason'] === 'scale-down'));
      assert.ok(resized.length >= 2, `resized ${resized.length} times`);
      const steps = resized.map((l) => Number(l['desiredWorkers']) - Number(l['previousWorkers'] ?? 0));
      assert.ok(
        steps.every((d) => Math.abs(d) <= 3),
        `steps within --temporal-worker-set-max-step: ${steps.join(', ')}`,
      );
      // The burst, second by second: the Lambda workers invoked so far and the set's desired size.
      const bySecond = new Map<number, { desired: number | undefined; lambda: number }>();
      for (const s of series) if (s.at >= t0) bySecond.set(Math.floor((s.at - t0) / 1000), s);
      console.log(
        `# worker set: first Lambda worker ${firstLambda} ms, first set worker ${firstSet} ms after the backlog; peak ${peak}; set at a third of its peak ${zeroAt - drainedAt} ms after the drain (last > 0 at ${lastUp - t0} ms)`,
      );
      console.log(`# t(s) lambda-invoked desired-set: ${[...bySecond].map(([t, s]) => `${t}:${s.lambda}/${String(s.desired)}`).join(' ')}`);
    } finally {
      sampling.abort();
      await sampler;
      const { code } = await workerless.stop();
      assert.equal(code, 0, `exit ${String(code)}\n${workerless.output()}`);
    }
  });
});

async function until(probe: () => boolean, timeoutMs: number, output: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms:\n${output().slice(-6_000)}`);
    await sleep(100);
  }
}
