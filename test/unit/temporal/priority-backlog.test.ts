import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backlogUpTo, reportsPriorityBacklog } from '../../../src/temporal/priority-backlog.ts';
import { toTargets, type TaskTypeStats } from '../../../src/temporal/task-queue-stats.ts';
import { type BacklogStats } from '../../../src/temporal/priority-backlog.ts';

const b = (backlog: number, backlogAgeMs = 0, addRatePerSec = 0): BacklogStats => ({
  backlog,
  backlogAgeMs,
  addRatePerSec,
  dispatchRatePerSec: 0,
});

describe('backlogUpTo', () => {
  it('sums the counts and rates of priority keys 1 to K and takes the oldest age among them', () => {
    const byPriority = new Map([
      [1, b(2, 4_000, 1)],
      [3, b(1, 9_000, 0.5)],
      [5, b(30, 60_000, 3)],
    ]);
    assert.deepEqual(backlogUpTo(byPriority, 1), b(2, 4_000, 1));
    assert.deepEqual(backlogUpTo(byPriority, 2), b(2, 4_000, 1));
    assert.deepEqual(backlogUpTo(byPriority, 3), b(3, 9_000, 1.5));
    assert.deepEqual(backlogUpTo(byPriority, 5), b(33, 60_000, 4.5));
    assert.deepEqual(backlogUpTo(new Map(), 2), b(0));
  });
});

describe('reportsPriorityBacklog', () => {
  it('is true only when a key other than the default (3) holds waiting tasks', () => {
    // The new matcher (server 1.29.1, matching.useNewMatcher=true): tasks at 1 and 5 counted under their keys.
    assert.equal(
      reportsPriorityBacklog(
        new Map([
          [1, b(2)],
          [3, b(1)],
          [5, b(3)],
        ]),
      ),
      true,
    );
    assert.equal(reportsPriorityBacklog(new Map([[5, b(3)]])), true);
    // The classic matcher (the same server without it): every waiting task under 3, only the add rates split.
    assert.equal(
      reportsPriorityBacklog(
        new Map([
          [1, b(0, 0, 1.3)],
          [3, b(6)],
          [5, b(0, 0, 2)],
        ]),
      ),
      false,
    );
    assert.equal(reportsPriorityBacklog(new Map()), false);
  });
});

describe('toTargets with --temporal-spill-priority', () => {
  const type = (byPriority: ReadonlyMap<number, BacklogStats>, rateLimitPerSec?: number): TaskTypeStats => {
    let total = b(0);
    for (const s of byPriority.values()) total = b(total.backlog + s.backlog, Math.max(total.backlogAgeMs, s.backlogAgeMs));
    return { ...total, known: true, byPriority, rateLimitPerSec, pollers: 0, lastPollAt: undefined, pollerInfos: [] };
  };

  it('observes only the backlog at priorities 1 to K, and all of it without K', () => {
    const stats = {
      workflow: type(
        new Map([
          [1, b(2, 3_000)],
          [5, b(40, 90_000)],
        ]),
        4000,
      ),
      activity: type(new Map([[2, b(1, 1_000)]]), 0.5),
      versions: [],
    };
    const [only] = toTargets(stats, 2);
    assert.equal(only?.observation.backlog, 3);
    assert.equal(only?.observation.backlogAgeMs, 3_000);
    assert.deepEqual(
      only?.observation.byType.map((t) => [t.backlog, t.rateLimitPerSec]),
      [
        [2, 4000],
        [1, 0.5],
      ],
    );
    assert.equal(toTargets(stats, 1)[0]?.observation.backlog, 2);
    assert.equal(toTargets(stats)[0]?.observation.backlog, 43);
    assert.equal(toTargets(stats)[0]?.observation.backlogAgeMs, 90_000);
  });

  it('marks the observation unknown when either task type came without statistics', () => {
    const known = type(new Map([[1, b(2)]]));
    assert.equal(toTargets({ workflow: known, activity: known, versions: [] })[0]?.observation.statsKnown, true);
    const absent = { ...type(new Map()), known: false };
    assert.equal(toTargets({ workflow: known, activity: absent, versions: [] })[0]?.observation.statsKnown, false);
  });
});
