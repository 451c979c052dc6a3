// The spillover decision: how many Lambda-hosted workers to invoke for one task queue (or one Worker
// Deployment Version of it), now. Pure: no I/O, no clock; the controller passes the time in. Everything here
// is proven by unit tests.
import { rateCapWorkers, type TypeLoad } from './rate-cap.ts';

/** One poller of the task queue as DescribeTaskQueue lists it (workflow and activity pollers merged). */
export interface PollerSighting {
  /** The worker's identity; a Lambda worker's contains its invocation's request id. */
  readonly identity: string;
  /** Start of its latest poll (ms since epoch). */
  readonly lastAccessAt: number;
}

/** One reading of a task queue, workflow and activity task types together. */
export interface TaskQueueObservation {
  /**
   * False when the server sent no statistics (Temporal Cloud unloads a task queue that had no pollers for more
   * than 5 minutes): the backlog is then unknown, not zero, and nothing is invoked on it.
   */
  readonly statsKnown: boolean;
  /** Tasks waiting (approximateBacklogCount, workflow + activity; only the spilled priorities with --temporal-spill-priority). */
  readonly backlog: number;
  /** How long the oldest waiting task has waited (approximateBacklogAge, the older of the two types). */
  readonly backlogAgeMs: number;
  /** Tasks added per second (tasksAddRate, workflow + activity). */
  readonly addRatePerSec: number;
  /** Tasks handed to workers per second (tasksDispatchRate, workflow + activity). */
  readonly dispatchRatePerSec: number;
  /** Latest poll by any worker on the queue (ms since epoch), undefined when the server lists no poller. */
  readonly lastPollAt: number | undefined;
  /** Every poller the server lists, to recognise the workers spillover invoked. */
  readonly pollers: readonly PollerSighting[];
  /** The same reading per task type, with each type's effective rate limit (rate-cap.ts). */
  readonly byType: readonly TypeLoad[];
}

export interface ScalingLimits {
  /** Never more workers alive than this (the per-queue maximum, less what the global budget holds back). */
  readonly maxWorkers: number;
  /** An invoked worker counts as alive for at most this long (the function's timeout). */
  readonly workerLifetimeMs: number;
  /** Spill over only when more tasks than this are waiting. */
  readonly backlogThreshold: number;
  /** Spill over when the oldest task has waited longer than this, whatever the count; undefined = off. */
  readonly maxBacklogAgeMs: number | undefined;
  /**
   * What makes a backlog urgent. 'count': more tasks than the threshold, one worker per tasksPerWorker.
   * 'age' (--temporal-fairness): only the oldest task's age against maxBacklogAgeMs, which must be set. With
   * fairness the server dispatches keys round-robin by weight, not in FIFO order, so a count says nothing about
   * how long anyone waits: one tenant's 10,000 tasks delay another tenant's next task by a turn, not by 10,000.
   * The age of the oldest waiting task is the wait itself, whatever the dispatch order.
   */
  readonly urgency: 'count' | 'age';
  /**
   * Minimum time between two scale-ups, and how long a backlog must persist while other workers poll
   * before spillover joins in (so a long-lived fleet that keeps up never triggers an invocation).
   */
  readonly coolOffMs: number;
  /** Backlog one worker is expected to absorb: desired workers = ceil(projected backlog / this). */
  readonly tasksPerWorker: number;
  /** How far ahead the backlog's growth is projected (the time until spillover can act again). */
  readonly horizonMs: number;
  /**
   * A poller seen within this window counts as "someone serves the queue". Workers re-poll at least every
   * minute (the server's long-poll expiry), so anything above ~70 s means no worker is listening.
   */
  readonly pollerRecentMs: number;
  /**
   * An invoked worker that has not shown up as a poller this long after its invocation never started
   * (crashed at init, or Lambda still holds the event); the payload tells the worker not to start later.
   */
  readonly workerStartTimeoutMs: number;
  /**
   * While tasks wait, a worker with a free slot re-polls at once (its poll is answered with a task), so a
   * worker of ours whose latest poll is older than this stopped polling: it crashed, or every slot is busy.
   */
  readonly pollerStaleMs: number;
}

/** A worker spillover invoked, within its lifetime. */
export interface TrackedWorker {
  /** The invocation's request id, which its poller identity contains; undefined if Lambda gave none. */
  readonly requestId: string | undefined;
  readonly invokedAt: number;
  /** Latest poll start seen for it; undefined until it shows up as a poller. */
  readonly lastSeenAt: number | undefined;
  /** When it was first judged gone (it comes back if it polls again later, e.g. after a long busy spell). */
  readonly goneAt: number | undefined;
}

export interface ScalingState {
  /** Workers invoked within their lifetime, alive or gone. */
  readonly workers: readonly TrackedWorker[];
  /** Since when the backlog has been above the threshold without interruption. */
  readonly backlogSince: number | undefined;
  /** Time of the last scale-up. */
  readonly lastScaleUpAt: number | undefined;
}

/** Why a worker counts, or no longer counts, as alive. */
export type WorkerLiveness =
  /** Invoked, not polling yet, still within the start timeout. */
  | 'starting'
  /** Seen polling recently enough. */
  | 'polling'
  /** Not seen polling within the start timeout: it crashed at start, or Lambda did not start it. */
  | 'never-started'
  /** Seen before, but no poll since: longer than pollerStaleMs while tasks wait, or pollerRecentMs at all. */
  | 'stopped-polling';

export type ScalingReason =
  /** Nothing waiting. */
  | 'idle'
  /** Tasks waiting, but no more than the threshold (and not too old) and workers are polling. */
  | 'below-threshold'
  /** Above the threshold, but the other workers are draining the backlog faster than it grows. */
  | 'draining'
  /** Above the threshold for less than the cool-off while other workers poll. */
  | 'sustaining'
  /** The workers alive already cover the projected backlog. */
  | 'enough-workers'
  /** maxWorkers are alive. */
  | 'at-capacity'
  /** The workers alive are all the task queue's rate limit can keep busy (rate-cap.ts). */
  | 'rate-limited'
  /** The server sent no statistics: nothing is decided until it does. */
  | 'unknown'
  /** A scale-up happened less than the cool-off ago. */
  | 'cooling-off'
  /** Invoke: the backlog stayed above the threshold. */
  | 'backlog'
  /** Invoke: the oldest task waited longer than maxBacklogAgeMs. */
  | 'backlog-age'
  /** Invoke: tasks are waiting and no worker has polled recently. */
  | 'no-poller';

export interface ScalingDecision {
  /** State after this reading: expired workers dropped, sightings and backlog streak updated (invocations not yet added). */
  readonly state: ScalingState;
  /** Workers invoked, within their lifetime and not judged gone. */
  readonly liveWorkers: number;
  /** Workers judged gone in this reading before their lifetime ended (crashed, or never started). */
  readonly lostWorkers: number;
  /** Workers that should be alive for the projected backlog (capped at maxWorkers). */
  readonly desiredWorkers: number;
  /** How many workers to invoke now. */
  readonly invoke: number;
  readonly reason: ScalingReason;
  /**
   * The rate limit's cap on workers (rate-cap.ts) and whether it lowered desiredWorkers; undefined when no
   * rate limit is reported or nothing waits.
   */
  readonly rateCap: { readonly workers: number; readonly binds: boolean } | undefined;
}

export const initialScalingState: ScalingState = Object.freeze({
  workers: Object.freeze([]),
  backlogSince: undefined,
  lastScaleUpAt: undefined,
});

export function decideScaling(state: ScalingState, observation: TaskQueueObservation, limits: ScalingLimits, now: number): ScalingDecision {
  const known = observation.statsKnown;
  const backlog = known ? nonNegative(observation.backlog) : 0;
  let lostWorkers = 0;
  const workers: TrackedWorker[] = [];
  for (const worker of state.workers) {
    if (now - worker.invokedAt >= limits.workerLifetimeMs) continue;
    const seen = sighting(worker, observation.pollers);
    // With the backlog unknown, whether tasks wait is unknown too: only the lenient rule (no poll at all) applies.
    const liveness = workerLiveness(seen, backlog > 0, limits, now);
    const alive = liveness === 'starting' || liveness === 'polling';
    if (!alive && worker.goneAt === undefined) lostWorkers++;
    workers.push({ ...seen, goneAt: alive ? undefined : (worker.goneAt ?? now) });
  }
  const liveWorkers = workers.filter((w) => w.goneAt === undefined).length;
  const ageLimit = limits.maxBacklogAgeMs;
  const backlogAgeMs = nonNegative(observation.backlogAgeMs);
  const tooOld = backlog > 0 && ageLimit !== undefined && backlogAgeMs > ageLimit;
  const byAge = limits.urgency === 'age';
  const above = byAge ? tooOld : backlog > limits.backlogThreshold || tooOld;
  // An unknown reading neither starts nor breaks the streak: it says nothing about the backlog.
  const backlogSince = !known ? state.backlogSince : above ? (state.backlogSince ?? now) : undefined;
  const next: ScalingState = { workers, backlogSince, lastScaleUpAt: state.lastScaleUpAt };
  let rateCap: ScalingDecision['rateCap'];
  const decision = (desiredWorkers: number, invoke: number, reason: ScalingReason): ScalingDecision => ({
    state: next,
    liveWorkers,
    lostWorkers,
    desiredWorkers,
    invoke,
    reason,
    rateCap,
  });

  // Unknown is not zero: keep the workers there are, invoke none, and do not count the queue as idle either.
  if (!known) return decision(liveWorkers, 0, 'unknown');
  if (backlog === 0) return decision(0, 0, 'idle');
  const unserved = observation.lastPollAt === undefined || now - observation.lastPollAt > limits.pollerRecentMs;
  if (!above && !unserved) return decision(0, 0, 'below-threshold');

  // Growth is what the workers already polling do not absorb; a shrinking backlog projects no extra work.
  const growthPerSec = nonNegative(observation.addRatePerSec) - nonNegative(observation.dispatchRatePerSec);
  // A draining backlog of old tasks still breaks the latency goal: the age check overrides the drain.
  if (!byAge && !unserved && !tooOld && growthPerSec < 0 && backlog / -growthPerSec <= limits.horizonMs / 1000) {
    return decision(0, 0, 'draining');
  }
  let wanted: number;
  if (byAge) {
    // By age: one worker when nobody serves the queue; while the oldest task is past the limit, the fleet grows
    // in proportion to how far past it is (twice the limit: twice the workers), by at least one per cool-off.
    wanted = tooOld && ageLimit !== undefined ? Math.max(liveWorkers + 1, Math.ceil((liveWorkers * backlogAgeMs) / ageLimit)) : 1;
  } else {
    const projected = backlog + Math.max(0, growthPerSec) * (limits.horizonMs / 1000);
    wanted = Math.max(1, Math.ceil(projected / limits.tasksPerWorker));
    // Tasks still too old with these workers alive (and past the cool-off): one more than now, whatever the count says.
    if (tooOld) wanted = Math.max(wanted, liveWorkers + 1);
  }
  const cap = rateCapWorkers(observation.byType, limits.horizonMs, limits.tasksPerWorker);
  const uncapped = Math.min(limits.maxWorkers, wanted);
  const desiredWorkers = cap === undefined ? uncapped : Math.min(uncapped, cap);
  if (cap !== undefined) rateCap = { workers: cap, binds: cap < uncapped };

  if (liveWorkers >= limits.maxWorkers) return decision(desiredWorkers, 0, 'at-capacity');
  if (cap !== undefined && cap < uncapped && liveWorkers >= cap) return decision(desiredWorkers, 0, 'rate-limited');
  if (liveWorkers >= desiredWorkers) return decision(desiredWorkers, 0, 'enough-workers');
  if (state.lastScaleUpAt !== undefined && now - state.lastScaleUpAt < limits.coolOffMs) {
    return decision(desiredWorkers, 0, 'cooling-off');
  }
  // Spillover only: while someone polls, give the long-lived fleet the cool-off to catch up first. An age over
  // the limit already proves the wait, so it acts at once.
  if (!unserved && !tooOld && now - (backlogSince ?? now) < limits.coolOffMs) return decision(desiredWorkers, 0, 'sustaining');
  const reason: ScalingReason = unserved ? 'no-poller' : !byAge && backlog > limits.backlogThreshold ? 'backlog' : 'backlog-age';
  return decision(desiredWorkers, desiredWorkers - liveWorkers, reason);
}

/**
 * Whether one tracked worker still counts. `tasksWaiting`: while tasks wait, a worker with a free slot has
 * no reason to sit in a long poll, so a stale latest poll means it stopped (pollerStaleMs); with nothing
 * waiting, an idle worker's long poll may be up to a minute old (pollerRecentMs).
 */
export function workerLiveness(worker: TrackedWorker, tasksWaiting: boolean, limits: ScalingLimits, now: number): WorkerLiveness {
  // Without a request id there is nothing to recognise it by: it counts for its lifetime, as before.
  if (worker.requestId === undefined) return 'starting';
  if (worker.lastSeenAt === undefined) return now - worker.invokedAt < limits.workerStartTimeoutMs ? 'starting' : 'never-started';
  const sinceSeen = now - worker.lastSeenAt;
  if (sinceSeen > limits.pollerRecentMs || (tasksWaiting && sinceSeen > limits.pollerStaleMs)) return 'stopped-polling';
  return 'polling';
}

/** The worker with its latest poll among `pollers` (identities containing its request id). */
function sighting(worker: TrackedWorker, pollers: readonly PollerSighting[]): TrackedWorker {
  const id = worker.requestId;
  if (id === undefined) return worker;
  let lastSeenAt = worker.lastSeenAt;
  for (const poller of pollers) {
    if (poller.identity.includes(id) && (lastSeenAt === undefined || poller.lastAccessAt > lastSeenAt)) lastSeenAt = poller.lastAccessAt;
  }
  return lastSeenAt === worker.lastSeenAt ? worker : { ...worker, lastSeenAt };
}

/** The state after workers with these request ids were invoked successfully at `now`. */
export function recordInvocations(state: ScalingState, now: number, requestIds: readonly (string | undefined)[]): ScalingState {
  if (requestIds.length === 0) return state;
  return {
    workers: [
      ...state.workers,
      ...requestIds.map((requestId) => ({ requestId, invokedAt: now, lastSeenAt: undefined, goneAt: undefined })),
    ],
    backlogSince: state.backlogSince,
    lastScaleUpAt: now,
  };
}

/** Workers of this state that count as alive (as of the last decision). */
export function aliveWorkers(state: ScalingState): number {
  return state.workers.filter((w) => w.goneAt === undefined).length;
}

function nonNegative(value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0;
}
