import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  aliveWorkers,
  decideScaling,
  initialScalingState,
  recordInvocations,
  workerLiveness,
  type ScalingLimits,
  type ScalingState,
  type TaskQueueObservation,
  type TrackedWorker,
} from '../../../src/temporal/scaling.ts';

const T0 = 1_700_000_000_000;

function limits(overrides: Partial<ScalingLimits> = {}): ScalingLimits {
  return {
    maxWorkers: 5,
    workerLifetimeMs: 60_000,
    backlogThreshold: 0,
    coolOffMs: 10_000,
    tasksPerWorker: 10,
    horizonMs: 10_000,
    pollerRecentMs: 75_000,
    maxBacklogAgeMs: undefined,
    urgency: 'count',
    workerStartTimeoutMs: 30_000,
    pollerStaleMs: 10_000,
    ...overrides,
  };
}

/** Someone polled a second ago unless said otherwise. */
function obs(overrides: Partial<TaskQueueObservation> = {}, now = T0): TaskQueueObservation {
  return {
    statsKnown: true,
    backlog: 0,
    backlogAgeMs: 0,
    addRatePerSec: 0,
    dispatchRatePerSec: 0,
    lastPollAt: now - 1_000,
    pollers: [],
    byType: [],
    ...overrides,
  };
}

function state(overrides: Partial<ScalingState> & { invokedAt?: readonly number[] } = {}): ScalingState {
  const { invokedAt, ...rest } = overrides;
  return { ...initialScalingState, ...(invokedAt ? { workers: invokedAt.map((at) => untracked(at)) } : {}), ...rest };
}

/** A worker Lambda gave no request id for: it counts for its whole lifetime, as before poller tracking. */
function untracked(invokedAt: number): TrackedWorker {
  return { requestId: undefined, invokedAt, lastSeenAt: undefined, goneAt: undefined };
}

function tracked(requestId: string, invokedAt: number, lastSeenAt?: number): TrackedWorker {
  return { requestId, invokedAt, lastSeenAt, goneAt: undefined };
}

/** n invocations without request ids. */
function ids(n: number): undefined[] {
  return Array.from({ length: n }, () => undefined);
}

describe('decideScaling', () => {
  it('does nothing when nothing waits, with or without pollers', () => {
    for (const lastPollAt of [undefined, T0 - 1_000]) {
      const d = decideScaling(initialScalingState, obs({ backlog: 0, lastPollAt }), limits(), T0);
      assert.equal(d.invoke, 0);
      assert.equal(d.reason, 'idle');
      assert.equal(d.state.backlogSince, undefined);
    }
  });

  it('invokes at once when tasks wait and no worker has ever polled', () => {
    const d = decideScaling(initialScalingState, obs({ backlog: 3, lastPollAt: undefined }), limits(), T0);
    assert.equal(d.reason, 'no-poller');
    assert.equal(d.invoke, 1);
    assert.equal(d.desiredWorkers, 1);
  });

  it('treats a poller last seen longer ago than the window as no poller', () => {
    const l = limits({ pollerRecentMs: 75_000 });
    assert.equal(decideScaling(initialScalingState, obs({ backlog: 1, lastPollAt: T0 - 75_001 }), l, T0).reason, 'no-poller');
    assert.equal(decideScaling(initialScalingState, obs({ backlog: 1, lastPollAt: T0 - 75_000 }), l, T0).reason, 'sustaining');
  });

  it('invokes for a waiting task below the threshold when nobody polls', () => {
    const d = decideScaling(initialScalingState, obs({ backlog: 2, lastPollAt: undefined }), limits({ backlogThreshold: 5 }), T0);
    assert.equal(d.reason, 'no-poller');
    assert.equal(d.invoke, 1);
  });

  it('leaves a backlog at or below the threshold to the polling workers', () => {
    const d = decideScaling(initialScalingState, obs({ backlog: 5 }), limits({ backlogThreshold: 5 }), T0);
    assert.equal(d.reason, 'below-threshold');
    assert.equal(d.invoke, 0);
    assert.equal(d.state.backlogSince, undefined);
  });

  it('sizes the fleet from the backlog: ceil(backlog / tasksPerWorker), capped at maxWorkers', () => {
    const cases: Array<[backlog: number, expected: number]> = [
      [1, 1],
      [10, 1],
      [11, 2],
      [40, 4],
      [50, 5],
      [51, 5],
      [10_000, 5],
    ];
    for (const [backlog, expected] of cases) {
      const d = decideScaling(initialScalingState, obs({ backlog, lastPollAt: undefined }), limits(), T0);
      assert.equal(d.desiredWorkers, expected, `backlog ${backlog}`);
      assert.equal(d.invoke, expected, `backlog ${backlog}`);
    }
  });

  it('adds the growth projected over the horizon to the backlog', () => {
    // 5 waiting + (3 - 1) tasks/s * 10 s = 25 -> 3 workers of 10 tasks
    const d = decideScaling(
      initialScalingState,
      obs({ backlog: 5, addRatePerSec: 3, dispatchRatePerSec: 1, lastPollAt: undefined }),
      limits(),
      T0,
    );
    assert.equal(d.desiredWorkers, 3);
    assert.equal(d.invoke, 3);
  });

  it('ignores a shrinking backlog in the projection but still serves an unserved queue', () => {
    const d = decideScaling(
      initialScalingState,
      obs({ backlog: 15, addRatePerSec: 0, dispatchRatePerSec: 100, lastPollAt: undefined }),
      limits(),
      T0,
    );
    assert.equal(d.desiredWorkers, 2);
    assert.equal(d.reason, 'no-poller');
  });

  it('waits while polling workers drain the backlog within the horizon', () => {
    // 20 waiting, draining at 5/s net -> empty in 4 s < 10 s horizon
    const s = state({ backlogSince: T0 - 60_000 });
    const d = decideScaling(s, obs({ backlog: 20, addRatePerSec: 1, dispatchRatePerSec: 6 }), limits(), T0);
    assert.equal(d.reason, 'draining');
    assert.equal(d.invoke, 0);
    // the streak continues: a drain that stalls is acted on without a new cool-off
    assert.equal(d.state.backlogSince, T0 - 60_000);
  });

  it('joins in when the polling workers drain too slowly', () => {
    // 100 waiting at 1/s net -> 100 s > 10 s horizon
    const s = state({ backlogSince: T0 - 20_000 });
    const d = decideScaling(s, obs({ backlog: 100, addRatePerSec: 1, dispatchRatePerSec: 2 }), limits(), T0);
    assert.equal(d.reason, 'backlog');
    assert.equal(d.invoke, 5);
  });

  it('requires the backlog to persist for the cool-off while other workers poll (spillover only)', () => {
    const l = limits({ coolOffMs: 10_000 });
    let d = decideScaling(initialScalingState, obs({ backlog: 4 }), l, T0);
    assert.equal(d.reason, 'sustaining');
    assert.equal(d.state.backlogSince, T0);
    d = decideScaling(d.state, obs({ backlog: 4 }, T0 + 9_999), l, T0 + 9_999);
    assert.equal(d.reason, 'sustaining');
    d = decideScaling(d.state, obs({ backlog: 4 }, T0 + 10_000), l, T0 + 10_000);
    assert.equal(d.reason, 'backlog');
    assert.equal(d.invoke, 1);
  });

  it('restarts the streak when the backlog drops to the threshold in between', () => {
    const l = limits({ coolOffMs: 10_000 });
    let d = decideScaling(initialScalingState, obs({ backlog: 4 }), l, T0);
    d = decideScaling(d.state, obs({ backlog: 0 }, T0 + 5_000), l, T0 + 5_000);
    assert.equal(d.state.backlogSince, undefined);
    d = decideScaling(d.state, obs({ backlog: 4 }, T0 + 12_000), l, T0 + 12_000);
    assert.equal(d.reason, 'sustaining');
    assert.equal(d.state.backlogSince, T0 + 12_000);
  });

  it('acts on the first reading with a zero cool-off', () => {
    const d = decideScaling(initialScalingState, obs({ backlog: 4 }), limits({ coolOffMs: 0 }), T0);
    assert.equal(d.reason, 'backlog');
    assert.equal(d.invoke, 1);
  });

  it('counts workers invoked within their lifetime and only invokes the difference', () => {
    const s = state({ invokedAt: [T0 - 59_999, T0 - 30_000], lastScaleUpAt: T0 - 30_000 });
    const d = decideScaling(s, obs({ backlog: 40, lastPollAt: undefined }), limits({ workerLifetimeMs: 60_000 }), T0);
    assert.equal(d.liveWorkers, 2);
    assert.equal(d.desiredWorkers, 4);
    assert.equal(d.invoke, 2);
  });

  it('forgets workers whose lifetime has passed and replaces them', () => {
    const s = state({ invokedAt: [T0 - 60_000, T0 - 70_000], lastScaleUpAt: T0 - 60_000 });
    const d = decideScaling(s, obs({ backlog: 20, lastPollAt: undefined }), limits({ workerLifetimeMs: 60_000 }), T0);
    assert.equal(d.liveWorkers, 0);
    assert.deepEqual(d.state.workers, []);
    assert.equal(d.invoke, 2);
  });

  it('does not invoke while enough workers are alive, even if they have not polled yet', () => {
    const s = state({ invokedAt: [T0 - 2_000], lastScaleUpAt: T0 - 2_000 });
    const d = decideScaling(s, obs({ backlog: 3, lastPollAt: undefined }), limits(), T0);
    assert.equal(d.reason, 'enough-workers');
    assert.equal(d.invoke, 0);
  });

  it('never goes above maxWorkers alive', () => {
    const s = state({ invokedAt: [T0 - 50_000, T0 - 40_000, T0 - 30_000], lastScaleUpAt: T0 - 30_000 });
    let d = decideScaling(s, obs({ backlog: 1_000, lastPollAt: undefined }), limits({ maxWorkers: 3 }), T0);
    assert.equal(d.reason, 'at-capacity');
    assert.equal(d.invoke, 0);
    d = decideScaling(s, obs({ backlog: 1_000, lastPollAt: undefined }), limits({ maxWorkers: 4 }), T0);
    assert.equal(d.invoke, 1);
  });

  it('waits for the cool-off after a scale-up before the next one', () => {
    const s = state({ invokedAt: [T0 - 5_000], lastScaleUpAt: T0 - 5_000 });
    let d = decideScaling(s, obs({ backlog: 40, lastPollAt: undefined }), limits({ coolOffMs: 10_000 }), T0);
    assert.equal(d.reason, 'cooling-off');
    assert.equal(d.invoke, 0);
    d = decideScaling(s, obs({ backlog: 40, lastPollAt: undefined }, T0 + 5_000), limits({ coolOffMs: 10_000 }), T0 + 5_000);
    assert.equal(d.invoke, 3);
  });

  it('treats negative, NaN and infinite readings as zero', () => {
    const d = decideScaling(
      initialScalingState,
      obs({ backlog: Number.NaN, addRatePerSec: Number.POSITIVE_INFINITY, dispatchRatePerSec: -3, lastPollAt: undefined }),
      limits(),
      T0,
    );
    assert.equal(d.reason, 'idle');
    const e = decideScaling(initialScalingState, obs({ backlog: 1, addRatePerSec: Number.NaN, lastPollAt: undefined }), limits(), T0);
    assert.equal(e.desiredWorkers, 1);
  });

  it('never invokes more than maxWorkers minus live, over any combination of inputs', () => {
    const backlogs = [0, 1, 5, 9, 10, 11, 99, 1_000];
    const rates = [0, 0.5, 3, 50];
    const lives = [0, 1, 2, 5, 7];
    const polls = [undefined, T0 - 1_000, T0 - 100_000];
    const thresholds = [0, 5];
    let combinations = 0;
    for (const backlog of backlogs)
      for (const add of rates)
        for (const dispatch of rates)
          for (const live of lives)
            for (const lastPollAt of polls)
              for (const backlogThreshold of thresholds) {
                const l = limits({ maxWorkers: 5, backlogThreshold, coolOffMs: 0 });
                const s = state({ invokedAt: Array.from({ length: live }, () => T0 - 1_000) });
                const d = decideScaling(s, obs({ backlog, addRatePerSec: add, dispatchRatePerSec: dispatch, lastPollAt }), l, T0);
                combinations++;
                assert.ok(d.invoke >= 0 && Number.isInteger(d.invoke));
                assert.ok(d.liveWorkers + d.invoke <= Math.max(5, live), `over max: ${JSON.stringify({ backlog, add, dispatch, live })}`);
                assert.ok(d.desiredWorkers <= 5);
                if (backlog === 0) assert.equal(d.invoke, 0);
                if (d.invoke > 0) assert.equal(d.liveWorkers + d.invoke, d.desiredWorkers);
              }
    assert.equal(combinations, backlogs.length * rates.length ** 2 * lives.length * polls.length * thresholds.length);
  });
});

describe('recordInvocations', () => {
  it('adds one live worker per invocation and starts the cool-off', () => {
    const s = recordInvocations(state({ invokedAt: [T0 - 1] }), T0, ['a', undefined]);
    assert.deepEqual(
      s.workers.map((w) => [w.requestId, w.invokedAt]),
      [
        [undefined, T0 - 1],
        ['a', T0],
        [undefined, T0],
      ],
    );
    assert.equal(s.lastScaleUpAt, T0);
  });

  it('changes nothing when no invocation succeeded', () => {
    const before = state({ lastScaleUpAt: T0 - 100 });
    assert.equal(recordInvocations(before, T0, []), before);
  });

  it('walks a burst end to end: invoke, wait for the workers, replace them after their lifetime', () => {
    const l = limits({ maxWorkers: 2, workerLifetimeMs: 30_000, coolOffMs: 5_000 });
    let s: ScalingState = initialScalingState;
    const steps: Array<{ at: number; backlog: number; lastPollAt?: number }> = [
      { at: 0, backlog: 25 },
      { at: 5_000, backlog: 25, lastPollAt: 4_000 },
      { at: 20_000, backlog: 10, lastPollAt: 19_000 },
      { at: 31_000, backlog: 10, lastPollAt: 29_000 },
    ];
    const invoked: number[] = [];
    for (const step of steps) {
      const now = T0 + step.at;
      const d = decideScaling(
        s,
        obs({ backlog: step.backlog, lastPollAt: step.lastPollAt === undefined ? undefined : T0 + step.lastPollAt }),
        l,
        now,
      );
      s = recordInvocations(d.state, now, ids(d.invoke));
      invoked.push(d.invoke);
    }
    // 2 at once (capped), none while they live, 2 again once their 30 s lifetime has passed.
    assert.deepEqual(invoked, [2, 0, 0, 1]);
  });
});

describe('decideScaling on backlog age (--temporal-max-backlog-age)', () => {
  const l = limits({ backlogThreshold: 100, maxBacklogAgeMs: 2_000, coolOffMs: 10_000 });

  it('spills over at once when the oldest task is older than the limit, although the count is under the threshold', () => {
    // A long-lived worker polls and keeps up on count (add = dispatch), but tasks wait 5 s.
    const d = decideScaling(initialScalingState, obs({ backlog: 3, backlogAgeMs: 5_000, addRatePerSec: 2, dispatchRatePerSec: 2 }), l, T0);
    assert.equal(d.reason, 'backlog-age');
    assert.equal(d.invoke, 1);
    assert.equal(d.state.backlogSince, T0);
  });

  it('does nothing at or under the age limit, or with the age check off', () => {
    assert.equal(decideScaling(initialScalingState, obs({ backlog: 3, backlogAgeMs: 2_000 }), l, T0).reason, 'below-threshold');
    const off = limits({ backlogThreshold: 100 });
    assert.equal(decideScaling(initialScalingState, obs({ backlog: 3, backlogAgeMs: 60_000 }), off, T0).reason, 'below-threshold');
  });

  it('ignores an age reported with an empty backlog', () => {
    assert.equal(decideScaling(initialScalingState, obs({ backlog: 0, backlogAgeMs: 9_000 }), l, T0).reason, 'idle');
  });

  it('acts on old tasks even while the backlog drains', () => {
    const d = decideScaling(initialScalingState, obs({ backlog: 3, backlogAgeMs: 5_000, addRatePerSec: 0, dispatchRatePerSec: 3 }), l, T0);
    assert.equal(d.reason, 'backlog-age');
  });

  it('adds one worker per cool-off while tasks stay too old, up to maxWorkers', () => {
    const reading = obs({ backlog: 2, backlogAgeMs: 5_000 });
    let s: ScalingState = initialScalingState;
    const invoked: number[] = [];
    for (let at = 0; at < 60_000; at += 5_000) {
      const d = decideScaling(s, { ...reading, lastPollAt: T0 + at - 500 }, limits({ ...l, maxWorkers: 3 }), T0 + at);
      s = recordInvocations(d.state, T0 + at, ids(d.invoke));
      invoked.push(d.invoke);
    }
    assert.deepEqual(invoked, [1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
  });

  it('still respects the cool-off after a scale-up', () => {
    const s = state({ invokedAt: [T0 - 1_000], lastScaleUpAt: T0 - 1_000 });
    assert.equal(decideScaling(s, obs({ backlog: 2, backlogAgeMs: 5_000 }), l, T0).reason, 'cooling-off');
  });
});

describe('crash-aware worker counts (pollers)', () => {
  const l = limits({ workerLifetimeMs: 600_000, workerStartTimeoutMs: 20_000, pollerStaleMs: 3_000, coolOffMs: 1_000 });
  const poller = (identity: string, lastAccessAt: number) => ({ identity, lastAccessAt });

  it('recognises its workers by the request id in the poller identity (runWorker: <request id>@<function ARN>)', () => {
    const s = state({ workers: [tracked('req-1', T0 - 5_000)] });
    const d = decideScaling(
      s,
      obs({ backlog: 1, pollers: [poller('req-1@arn:aws:lambda:us-east-1:1:function:w', T0 - 500), poller('someone', T0)] }),
      l,
      T0,
    );
    assert.equal(d.state.workers[0]?.lastSeenAt, T0 - 500);
    assert.equal(d.liveWorkers, 1);
    assert.equal(d.lostWorkers, 0);
  });

  it('counts a worker that has not polled yet as starting until the start timeout, then as lost', () => {
    const w = tracked('req-1', T0);
    assert.equal(workerLiveness(w, true, l, T0 + 19_999), 'starting');
    assert.equal(workerLiveness(w, true, l, T0 + 20_000), 'never-started');
    const d = decideScaling(state({ workers: [w] }), obs({ backlog: 5, lastPollAt: undefined }), l, T0 + 20_000);
    assert.equal(d.liveWorkers, 0);
    assert.equal(d.lostWorkers, 1);
    assert.equal(d.invoke, 1, 'replaced at once');
  });

  it('replaces a worker that stopped polling while tasks wait, within the stale window, not after its lifetime', () => {
    // Invoked at T0, polled until T0 + 4 s, then crashed. Tasks keep waiting.
    let s: ScalingState = state({ workers: [tracked('req-1', T0)], lastScaleUpAt: T0 });
    const seen = [poller('req-1@arn', T0 + 4_000)];
    const results: Array<[number, number, number]> = [];
    for (let at = 5_000; at <= 9_000; at += 1_000) {
      const d = decideScaling(s, obs({ backlog: 4, lastPollAt: T0 + 4_000, pollers: seen }, T0 + at), l, T0 + at);
      s = recordInvocations(d.state, T0 + at, d.invoke > 0 ? ['req-2'] : []);
      results.push([at, d.liveWorkers, d.invoke]);
    }
    // alive while its latest poll is at most 3 s old (until T0 + 7 s), lost and replaced at the next reading
    assert.deepEqual(results, [
      [5_000, 1, 0],
      [6_000, 1, 0],
      [7_000, 1, 0],
      [8_000, 0, 1],
      [9_000, 1, 0],
    ]);
  });

  it('keeps an idle worker in a long poll alive while nothing waits (up to the poller window)', () => {
    const w = tracked('req-1', T0, T0 + 1_000);
    assert.equal(workerLiveness(w, false, l, T0 + 60_000), 'polling');
    assert.equal(workerLiveness(w, false, l, T0 + 76_001), 'stopped-polling');
    assert.equal(workerLiveness(w, true, l, T0 + 4_001), 'stopped-polling');
  });

  it('counts a loss once, and takes a worker back if it polls again (every slot was busy)', () => {
    let d = decideScaling(state({ workers: [tracked('req-1', T0, T0)] }), obs({ backlog: 2 }, T0 + 10_000), l, T0 + 10_000);
    assert.equal(d.lostWorkers, 1);
    assert.equal(d.state.workers[0]?.goneAt, T0 + 10_000);
    d = decideScaling(d.state, obs({ backlog: 2 }, T0 + 11_000), l, T0 + 11_000);
    assert.equal(d.lostWorkers, 0, 'not counted twice');
    d = decideScaling(d.state, obs({ backlog: 2, pollers: [poller('req-1@x', T0 + 11_500)] }, T0 + 12_000), l, T0 + 12_000);
    assert.equal(d.liveWorkers, 1);
    assert.equal(d.state.workers[0]?.goneAt, undefined);
    assert.equal(aliveWorkers(d.state), 1);
  });

  it('keeps the lifetime as the upper bound: a polling worker past its lifetime no longer counts', () => {
    const w = tracked('req-1', T0 - 600_000, T0 - 100);
    const d = decideScaling(state({ workers: [w] }), obs({ backlog: 2, pollers: [poller('req-1@x', T0 - 100)] }), l, T0);
    assert.equal(d.liveWorkers, 0);
    assert.deepEqual(d.state.workers, []);
    assert.equal(d.lostWorkers, 0, 'an expired worker is not a lost one');
  });
});

describe('decideScaling with unknown statistics (unloaded task queue)', () => {
  const unknown = (overrides: Partial<TaskQueueObservation> = {}) =>
    obs({ statsKnown: false, backlog: 0, lastPollAt: undefined, ...overrides });

  it('invokes nothing, whatever the numbers say, and calls the reason unknown', () => {
    // Zeros that mean "not reported", and even numbers a buggy reading might carry: none decide anything.
    for (const o of [unknown(), unknown({ backlog: 500, backlogAgeMs: 600_000 })]) {
      const d = decideScaling(initialScalingState, o, limits({ maxBacklogAgeMs: 1_000 }), T0);
      assert.equal(d.invoke, 0);
      assert.equal(d.reason, 'unknown');
    }
  });

  it('keeps the workers alive and the backlog streak as they were, and acts on the next known reading', () => {
    const before = decideScaling(initialScalingState, obs({ backlog: 30 }), limits(), T0).state;
    assert.equal(before.backlogSince, T0);
    const during = decideScaling(state({ backlogSince: before.backlogSince, invokedAt: [T0] }), unknown(), limits(), T0 + 5_000);
    assert.equal(during.liveWorkers, 1);
    assert.equal(during.desiredWorkers, 1);
    assert.equal(during.state.backlogSince, T0);
    // Known again, the streak has lasted the cool-off: it acts now rather than starting over.
    const after = decideScaling(during.state, obs({ backlog: 30 }, T0 + 10_000), limits(), T0 + 10_000);
    assert.equal(after.reason, 'backlog');
    assert.equal(after.invoke, 2);
  });

  it('does not judge a silent worker gone for a stale poll while unknown: only the no-poll-at-all window applies', () => {
    const worker = tracked('req-1', T0, T0 + 1_000);
    const d = decideScaling(state({ workers: [worker] }), unknown(), limits({ pollerStaleMs: 5_000 }), T0 + 30_000);
    assert.equal(d.liveWorkers, 1);
    assert.equal(d.lostWorkers, 0);
  });
});

describe('decideScaling on backlog age with fairness (urgency: age)', () => {
  const age = (overrides: Partial<ScalingLimits> = {}) => limits({ urgency: 'age', maxBacklogAgeMs: 10_000, maxWorkers: 20, ...overrides });

  it('ignores the count: a huge young backlog served by pollers invokes nothing', () => {
    const d = decideScaling(initialScalingState, obs({ backlog: 10_000, backlogAgeMs: 2_000, addRatePerSec: 50 }), age(), T0);
    assert.equal(d.invoke, 0);
    assert.equal(d.reason, 'below-threshold');
  });

  it('adds one worker when the oldest task passes the limit, not backlog / tasksPerWorker', () => {
    const d = decideScaling(initialScalingState, obs({ backlog: 10_000, backlogAgeMs: 12_000 }), age(), T0);
    assert.equal(d.invoke, 1);
    assert.equal(d.reason, 'backlog-age');
  });

  it('grows the fleet in proportion to how far past the limit the oldest task is', () => {
    const s = state({ invokedAt: [T0 - 20_000, T0 - 20_000, T0 - 20_000, T0 - 20_000] });
    // 4 alive, oldest task at 3x the limit: 12 wanted, 8 more
    const d = decideScaling(s, obs({ backlog: 50, backlogAgeMs: 30_000 }), age(), T0);
    assert.equal(d.desiredWorkers, 12);
    assert.equal(d.invoke, 8);
  });

  it('starts one worker for a queue nobody serves, even with a young backlog', () => {
    const d = decideScaling(initialScalingState, obs({ backlog: 5, backlogAgeMs: 100, lastPollAt: undefined }), age(), T0);
    assert.equal(d.invoke, 1);
    assert.equal(d.reason, 'no-poller');
  });
});
