// How many long-lived workers a task queue's worker set should have (an ECS service's desired count, the gauge a KEDA
// ScaledObject follows). Unlike Lambda workers, which are started N at a time and end by themselves, a worker set is
// resized to a target, so it is sized from rates rather than from the backlog alone: the arrival rate the set must
// keep up with, what one worker dispatches, and the backlog (and its age) it must drain. Pure: readings in, desired
// count out; the controller passes the time in.

export interface WorkerSetLimits {
  /** --temporal-worker-set-min: never fewer workers (0 lets the set scale to zero). */
  readonly min: number;
  /** --temporal-worker-set-max. */
  readonly max: number;
  /** --temporal-worker-capacity: tasks per second one worker dispatches, until measured. */
  readonly capacityPerSec: number;
  /** --temporal-worker-set-max-step: at most this many workers added or removed at once. */
  readonly maxStep: number;
  /** --temporal-scale-up-cooldown: at least this long between two scale-ups. */
  readonly upCooldownMs: number;
  /**
   * --temporal-scale-down-cooldown: no scale-down until this long after the last change of either direction, so a
   * pause between bursts does not take away the capacity the next one needs (KEDA's users lose it to early
   * scale-to-zero, kedacore/keda#7368).
   */
  readonly downCooldownMs: number;
  /** How soon a backlog should be drained: --temporal-max-backlog-age, else a default of 60 s. */
  readonly drainMs: number;
}

/** One reading of the task queue (workflow + activity tasks). */
export interface WorkerSetReading {
  readonly now: number;
  readonly addRatePerSec: number;
  readonly dispatchRatePerSec: number;
  readonly backlog: number;
  readonly backlogAgeMs: number;
}

export interface WorkerSetState {
  /** EWMA of the arrival (add) rate, tasks/s; undefined before the first reading. */
  readonly arrivalPerSec: number | undefined;
  /** EWMA of one worker's dispatch rate, measured while the set is busy (tasks wait); undefined: not yet measured. */
  readonly capacityPerSec: number | undefined;
  /** The size last decided. */
  readonly desired: number;
  readonly lastChangeAt: number | undefined;
}

export type WorkerSetReason = 'steady' | 'scale-up' | 'scale-down' | 'up-cooldown' | 'down-cooldown';

export interface WorkerSetDecision {
  readonly state: WorkerSetState;
  readonly desired: number;
  /** What the rates call for before cool-downs and steps. */
  readonly target: number;
  readonly reason: WorkerSetReason;
}

/** Weight of a new reading in the EWMAs: about the last 5 readings count. */
export const EWMA_WEIGHT = 0.3;
/** Square-root staffing's safety factor: workers = load + BETA x sqrt(load) keeps queueing short at any scale. */
export const STAFFING_BETA = 1;

export function initialWorkerSetState(limits: Pick<WorkerSetLimits, 'min'>): WorkerSetState {
  return { arrivalPerSec: undefined, capacityPerSec: undefined, desired: limits.min, lastChangeAt: undefined };
}

/**
 * The target: square-root staffing for the arrival rate (load a = arrival / capacity, workers = a + BETA x sqrt(a)),
 * plus the workers that drain the backlog within drainMs (more when its oldest task is already older than that), within
 * [min, max]. Then the step: up at most maxStep after upCooldownMs, down at most maxStep after downCooldownMs.
 */
export function decideWorkerSet(state: WorkerSetState, reading: WorkerSetReading, limits: WorkerSetLimits): WorkerSetDecision {
  const arrivalSample = nonNegative(reading.addRatePerSec);
  // Fully idle (nothing waits, arrives or is dispatched): no memory of the last burst, so the set can reach its minimum.
  const idle = reading.backlog <= 0 && arrivalSample === 0 && nonNegative(reading.dispatchRatePerSec) === 0;
  const arrivalPerSec = idle || state.arrivalPerSec === undefined ? arrivalSample : ewma(state.arrivalPerSec, arrivalSample);
  // One worker's capacity is measurable only while the set is busy: tasks wait and workers are there to take them.
  const dispatch = nonNegative(reading.dispatchRatePerSec);
  const busy = reading.backlog > 0 && state.desired > 0 && dispatch > 0;
  const sample = busy ? dispatch / state.desired : undefined;
  const capacityPerSec =
    sample === undefined ? state.capacityPerSec : state.capacityPerSec === undefined ? sample : ewma(state.capacityPerSec, sample);
  const capacity = Math.max(capacityPerSec ?? limits.capacityPerSec, 1e-3);

  const load = arrivalPerSec / capacity;
  const staffed = load > 0 ? load + STAFFING_BETA * Math.sqrt(load) : 0;
  const drainSec = limits.drainMs / 1000;
  const urgency = reading.backlogAgeMs > limits.drainMs ? reading.backlogAgeMs / limits.drainMs : 1;
  const draining = (nonNegative(reading.backlog) / (capacity * drainSec)) * urgency;
  const target = clamp(Math.ceil(staffed + draining - 1e-9), limits.min, limits.max);

  const next = (desired: number, reason: WorkerSetReason, changed: boolean): WorkerSetDecision => ({
    state: { arrivalPerSec, capacityPerSec, desired, lastChangeAt: changed ? reading.now : state.lastChangeAt },
    desired,
    target,
    reason,
  });
  const current = clamp(state.desired, limits.min, limits.max);
  const since = state.lastChangeAt === undefined ? Infinity : reading.now - state.lastChangeAt;
  if (target > current) {
    if (since < limits.upCooldownMs) return next(current, 'up-cooldown', current !== state.desired);
    return next(current + Math.min(limits.maxStep, target - current), 'scale-up', true);
  }
  if (target < current) {
    if (since < limits.downCooldownMs) return next(current, 'down-cooldown', current !== state.desired);
    return next(current - Math.min(limits.maxStep, current - target), 'scale-down', true);
  }
  return next(current, 'steady', current !== state.desired);
}

function ewma(previous: number, sample: number): number {
  return previous + EWMA_WEIGHT * (sample - previous);
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

function nonNegative(value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0;
}
