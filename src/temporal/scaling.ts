// The spillover decision: how many Lambda-hosted workers to invoke for one task queue, now.
// Pure: no I/O, no clock; the controller passes the time in. Everything here is proven by unit tests.

/** One reading of a task queue, workflow and activity task types together. */
export interface TaskQueueObservation {
  /** Tasks waiting (approximateBacklogCount, workflow + activity). */
  readonly backlog: number;
  /** Tasks added per second (tasksAddRate, workflow + activity). */
  readonly addRatePerSec: number;
  /** Tasks handed to workers per second (tasksDispatchRate, workflow + activity). */
  readonly dispatchRatePerSec: number;
  /** Latest poll by any worker on the queue (ms since epoch), undefined when the server lists no poller. */
  readonly lastPollAt: number | undefined;
}

export interface ScalingLimits {
  /** Never more workers alive (invoked and within their lifetime) than this. */
  readonly maxWorkers: number;
  /** An invoked worker counts as alive for this long (the function's timeout). */
  readonly workerLifetimeMs: number;
  /** Spill over only when more tasks than this are waiting. */
  readonly backlogThreshold: number;
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
}

export interface ScalingState {
  /** Invocation times of workers presumed alive (ms since epoch). */
  readonly invokedAt: readonly number[];
  /** Since when the backlog has been above the threshold without interruption. */
  readonly backlogSince: number | undefined;
  /** Time of the last scale-up. */
  readonly lastScaleUpAt: number | undefined;
}

export type ScalingReason =
  /** Nothing waiting. */
  | 'idle'
  /** Tasks waiting, but no more than the threshold and workers are polling. */
  | 'below-threshold'
  /** Above the threshold, but the other workers are draining the backlog faster than it grows. */
  | 'draining'
  /** Above the threshold for less than the cool-off while other workers poll. */
  | 'sustaining'
  /** The workers alive already cover the projected backlog. */
  | 'enough-workers'
  /** maxWorkers are alive. */
  | 'at-capacity'
  /** A scale-up happened less than the cool-off ago. */
  | 'cooling-off'
  /** Invoke: the backlog stayed above the threshold. */
  | 'backlog'
  /** Invoke: tasks are waiting and no worker has polled recently. */
  | 'no-poller';

export interface ScalingDecision {
  /** State after this reading: expired workers dropped, backlog streak updated (invocations not yet added). */
  readonly state: ScalingState;
  /** Workers invoked and still within their lifetime. */
  readonly liveWorkers: number;
  /** Workers that should be alive for the projected backlog (capped at maxWorkers). */
  readonly desiredWorkers: number;
  /** How many workers to invoke now. */
  readonly invoke: number;
  readonly reason: ScalingReason;
}

export const initialScalingState: ScalingState = Object.freeze({
  invokedAt: Object.freeze([]) as readonly number[],
  backlogSince: undefined,
  lastScaleUpAt: undefined,
});

export function decideScaling(
  state: ScalingState,
  observation: TaskQueueObservation,
  limits: ScalingLimits,
  now: number,
): ScalingDecision {
  const invokedAt = state.invokedAt.filter((at) => now - at < limits.workerLifetimeMs);
  const liveWorkers = invokedAt.length;
  const backlog = nonNegative(observation.backlog);
  const above = backlog > limits.backlogThreshold;
  const backlogSince = above ? (state.backlogSince ?? now) : undefined;
  const next: ScalingState = { invokedAt, backlogSince, lastScaleUpAt: state.lastScaleUpAt };
  const decision = (desiredWorkers: number, invoke: number, reason: ScalingReason): ScalingDecision => ({
    state: next,
    liveWorkers,
    desiredWorkers,
    invoke,
    reason,
  });

  if (backlog === 0) return decision(0, 0, 'idle');
  const unserved = observation.lastPollAt === undefined || now - observation.lastPollAt > limits.pollerRecentMs;
  if (!above && !unserved) return decision(0, 0, 'below-threshold');

  // Growth is what the workers already polling do not absorb; a shrinking backlog projects no extra work.
  const growthPerSec = nonNegative(observation.addRatePerSec) - nonNegative(observation.dispatchRatePerSec);
  if (!unserved && growthPerSec < 0 && backlog / -growthPerSec <= limits.horizonMs / 1000) {
    return decision(0, 0, 'draining');
  }
  const projected = backlog + Math.max(0, growthPerSec) * (limits.horizonMs / 1000);
  const desiredWorkers = Math.min(limits.maxWorkers, Math.max(1, Math.ceil(projected / limits.tasksPerWorker)));

  if (liveWorkers >= limits.maxWorkers) return decision(desiredWorkers, 0, 'at-capacity');
  if (liveWorkers >= desiredWorkers) return decision(desiredWorkers, 0, 'enough-workers');
  if (state.lastScaleUpAt !== undefined && now - state.lastScaleUpAt < limits.coolOffMs) {
    return decision(desiredWorkers, 0, 'cooling-off');
  }
  // Spillover only: while someone polls, give the long-lived fleet the cool-off to catch up first.
  if (!unserved && now - (backlogSince ?? now) < limits.coolOffMs) return decision(desiredWorkers, 0, 'sustaining');
  return decision(desiredWorkers, desiredWorkers - liveWorkers, unserved ? 'no-poller' : 'backlog');
}

/** The state after `count` workers were invoked successfully at `now`. */
export function recordInvocations(state: ScalingState, now: number, count: number): ScalingState {
  if (count <= 0) return state;
  return {
    invokedAt: [...state.invokedAt, ...Array.from({ length: count }, () => now)],
    backlogSince: state.backlogSince,
    lastScaleUpAt: now,
  };
}

function nonNegative(value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0;
}
