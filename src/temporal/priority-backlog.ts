// --temporal-spill-priority: the backlog at priority keys 1 to K, from DescribeTaskQueue's stats_by_priority_key
// (Task Queue Priority, GA 12 May 2026; keys 1-5 by default, 1 the highest, 3 for tasks given none). Pure.

/** Backlog statistics of one task type (workflow or activity), or of one priority key of it. */
export interface BacklogStats {
  readonly backlog: number;
  readonly backlogAgeMs: number;
  readonly addRatePerSec: number;
  readonly dispatchRatePerSec: number;
}

/** A task type's backlog per priority key, as stats_by_priority_key reports it (only keys in use). */
export type PriorityBacklog = ReadonlyMap<number, BacklogStats>;

/** Where the server files a task without a priority key, and where the classic matcher files every task. */
export const DEFAULT_PRIORITY_KEY = 3;

/**
 * Whether a reading shows a server that keeps its backlog per priority: some key other than the default holds
 * waiting tasks. The classic matcher (server 1.29 without matching.useNewMatcher) still answers
 * stats_by_priority_key, but files the whole backlog under the default key (seen on 1.29.1: tasks started at
 * priorities 1, 3 and 5 all counted at key 3, only the add rates split), so a backlog at key 3 alone cannot tell
 * "every waiting task has priority 3" from "this server does not sort by priority".
 */
export function reportsPriorityBacklog(byPriority: PriorityBacklog): boolean {
  for (const [key, stats] of byPriority) {
    if (key !== DEFAULT_PRIORITY_KEY && stats.backlog > 0) return true;
  }
  return false;
}

/** The backlog at priority keys 1 to `maxPriority`: counts and rates summed, the oldest age. */
export function backlogUpTo(byPriority: PriorityBacklog, maxPriority: number): BacklogStats {
  let backlog = 0;
  let backlogAgeMs = 0;
  let addRatePerSec = 0;
  let dispatchRatePerSec = 0;
  for (const [key, stats] of byPriority) {
    if (key > maxPriority) continue;
    backlog += stats.backlog;
    backlogAgeMs = Math.max(backlogAgeMs, stats.backlogAgeMs);
    addRatePerSec += stats.addRatePerSec;
    dispatchRatePerSec += stats.dispatchRatePerSec;
  }
  return { backlog, backlogAgeMs, addRatePerSec, dispatchRatePerSec };
}
