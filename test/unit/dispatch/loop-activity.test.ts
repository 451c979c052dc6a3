// Each worker loop's activity for liveness (src/dispatch/loop-activity.ts): what checkLiveness reads.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LoopActivities } from '../../../src/dispatch/loop-activity.ts';
import { checkLiveness } from '../../../src/operator/health.ts';

describe('LoopActivities', () => {
  it('an activity starts its deadline when it is marked, with 10 s of grace on top', () => {
    let now = 1_000;
    const activities = new LoopActivities(2, () => now);
    activities.mark(1, 'invoke', 5_000);
    assert.deepEqual(activities.snapshot(), [undefined, { activity: 'invoke', since: 1_000, deadlineAt: 16_000 }]);
    now = 20_000;
    activities.mark(1, 'delete', 5_000);
    assert.deepEqual(activities.snapshot()[1], { activity: 'delete', since: 20_000, deadlineAt: 35_000 });
  });

  it('an idle loop (undefined) and a wait for capacity (Infinity) are never stuck', () => {
    let now = 0;
    const activities = new LoopActivities(2, () => now);
    activities.mark(0, 'receive', 1_000);
    activities.mark(0, undefined);
    activities.mark(1, 'waiting for capacity', Infinity);
    now = 3_600_000;
    assert.deepEqual(checkLiveness({ lagMs: 0, maxLagMs: 10_000, loops: activities.snapshot(), now, graceMs: 0 }), {
      ok: true,
      reasons: [],
    });
  });

  it('a loop past its deadline is stuck, named by its activity', () => {
    let now = 0;
    const activities = new LoopActivities(1, () => now);
    activities.mark(0, 'gather', 1_000);
    now = 11_001;
    assert.deepEqual(checkLiveness({ lagMs: 0, maxLagMs: 10_000, loops: activities.snapshot(), now, graceMs: 0 }), {
      ok: false,
      reasons: ['worker loop 0 stuck in gather for 11 s, past its deadline'],
    });
  });

  it('a snapshot is a copy: later marks do not change what a probe already read', () => {
    const activities = new LoopActivities(1, () => 0);
    activities.mark(0, 'invoke', 1_000);
    const read = activities.snapshot();
    activities.mark(0, undefined);
    assert.equal(read[0]?.activity, 'invoke');
  });
});
