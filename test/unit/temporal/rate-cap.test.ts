import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rateCapWorkers, type TypeLoad } from '../../../src/temporal/rate-cap.ts';
import {
  decideScaling,
  initialScalingState,
  recordInvocations,
  type ScalingLimits,
  type TaskQueueObservation,
} from '../../../src/temporal/scaling.ts';

const T0 = 1_700_000_000_000;

function load(overrides: Partial<TypeLoad> = {}): TypeLoad {
  return { backlog: 0, addRatePerSec: 0, dispatchRatePerSec: 0, rateLimitPerSec: undefined, ...overrides };
}

describe('rateCapWorkers', () => {
  it('is undefined when no task type reports a rate limit', () => {
    assert.equal(rateCapWorkers([load({ backlog: 100 }), load({ backlog: 50 })], 10_000, 10), undefined);
  });

  it('counts at most rate x horizon tasks of a limited type: ceil(min(projected, R x H) / tasksPerWorker)', () => {
    // activity limit 0.5 tasks/s over 10 s: 5 of its 100 tasks can be dispatched -> 1 worker
    assert.equal(rateCapWorkers([load(), load({ backlog: 100, rateLimitPerSec: 0.5 })], 10_000, 10), 1);
    // 2 tasks/s over 10 s: 20 tasks -> 2 workers; 20 s horizon: 40 -> 4
    assert.equal(rateCapWorkers([load(), load({ backlog: 100, rateLimitPerSec: 2 })], 10_000, 10), 2);
    assert.equal(rateCapWorkers([load(), load({ backlog: 100, rateLimitPerSec: 2 })], 20_000, 10), 4);
    // under the limit, the projected backlog counts as it is (growth included)
    assert.equal(rateCapWorkers([load(), load({ backlog: 15, addRatePerSec: 1, rateLimitPerSec: 100 })], 10_000, 10), 3);
  });

  it('counts a type without a limit in full, so workflow tasks are not held back by an activity limit', () => {
    assert.equal(rateCapWorkers([load({ backlog: 30 }), load({ backlog: 100, rateLimitPerSec: 0.5 })], 10_000, 10), 4);
  });

  it("never binds on the server's default limit (4000 tasks/s) for a realistic backlog", () => {
    assert.equal(rateCapWorkers([load({ backlog: 500, rateLimitPerSec: 4000 }), load({ rateLimitPerSec: 4000 })], 10_000, 10), 50);
  });

  it('is 0 when the only waiting tasks are behind a zero rate', () => {
    assert.equal(rateCapWorkers([load(), load({ backlog: 100, rateLimitPerSec: 0 })], 10_000, 10), 0);
  });
});

describe('decideScaling under a rate limit', () => {
  const limits: ScalingLimits = {
    maxWorkers: 10,
    workerLifetimeMs: 600_000,
    backlogThreshold: 0,
    maxBacklogAgeMs: undefined,
    urgency: 'count',
    coolOffMs: 10_000,
    tasksPerWorker: 10,
    horizonMs: 10_000,
    pollerRecentMs: 75_000,
    workerStartTimeoutMs: 30_000,
    pollerStaleMs: 10_000,
  };
  const observation = (rateLimitPerSec: number | undefined, backlog = 100): TaskQueueObservation => ({
    statsKnown: true,
    backlog,
    backlogAgeMs: 0,
    addRatePerSec: 0,
    dispatchRatePerSec: 0,
    lastPollAt: undefined,
    pollers: [],
    byType: [
      // The server reports its default for workflow tasks whenever it reports a limit at all.
      { backlog: 0, addRatePerSec: 0, dispatchRatePerSec: 0, rateLimitPerSec: rateLimitPerSec === undefined ? undefined : 4000 },
      { backlog, addRatePerSec: 0, dispatchRatePerSec: 0, rateLimitPerSec },
    ],
  });

  it('invokes only the workers the rate can keep busy, and says the cap binds', () => {
    const free = decideScaling(initialScalingState, observation(undefined), limits, T0);
    assert.equal(free.invoke, 10);
    assert.equal(free.rateCap, undefined);
    const capped = decideScaling(initialScalingState, observation(2), limits, T0);
    assert.equal(capped.invoke, 2);
    assert.equal(capped.desiredWorkers, 2);
    assert.deepEqual(capped.rateCap, { workers: 2, binds: true });
  });

  it('adds none while the capped number is alive, with the reason rate-limited, through time', () => {
    let state = decideScaling(initialScalingState, observation(2), limits, T0).state;
    state = recordInvocations(state, T0, [undefined, undefined]);
    for (const at of [T0 + 5_000, T0 + 60_000, T0 + 300_000]) {
      const d = decideScaling(state, observation(2), limits, at);
      assert.equal(d.invoke, 0, `at +${at - T0} ms`);
      assert.equal(d.reason, 'rate-limited');
      state = d.state;
    }
    // The limit is raised to 5 tasks/s: three more (past the cool-off).
    const raised = decideScaling(state, observation(5), limits, T0 + 310_000);
    assert.equal(raised.invoke, 3);
    assert.deepEqual(raised.rateCap, { workers: 5, binds: true });
  });

  it('reports a cap that does not bind when the backlog is within the rate', () => {
    const d = decideScaling(initialScalingState, observation(4000, 30), limits, T0);
    assert.equal(d.invoke, 3);
    assert.deepEqual(d.rateCap, { workers: 3, binds: false });
  });
});
