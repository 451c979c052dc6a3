// No workers bought at a ceiling: when the last scale-up did not raise the task queue's dispatch rate and the
// backlog kept growing, something other than the number of workers limits throughput (a rate limit, a downstream
// the activities wait on, a server partition), and more workers would add cost and no throughput. Scale-ups are
// then held until the dispatch rate moves out of the band around the rate it stalled at. Pure: rates in, decision
// out; scale-up.ts keeps one state per target and logs the changes.

export interface CeilingOptions {
  /** Two rates are "flat" when they differ by at most this fraction of the larger one (and of MIN_RATE_PER_SEC). */
  readonly bandFraction: number;
  /**
   * How long after a scale-up its effect on the dispatch rate is judged: the new workers must have started and the
   * server's rate (a windowed average, cached for 5 s) must have had time to move.
   */
  readonly settleMs: number;
}

/** A scale-up not yet judged: the dispatch rate, backlog and live workers just before it. */
interface PendingScaleUp {
  readonly at: number;
  readonly rateBefore: number;
  readonly backlogBefore: number;
  readonly workersBefore: number;
}

/** The rate the fleet stalled at, once more workers did not raise it. */
export interface Ceiling {
  readonly ratePerSec: number;
  readonly since: number;
  /** Live workers when it was found. */
  readonly workers: number;
  /** Consecutive readings with the rate outside the band so far (RESUME_READINGS resume). */
  readonly outside: number;
}

export interface CeilingState {
  readonly pending: PendingScaleUp | undefined;
  readonly ceiling: Ceiling | undefined;
}

export const initialCeilingState: CeilingState = { pending: undefined, ceiling: undefined };

export interface CeilingReading {
  readonly now: number;
  /** tasksDispatchRate of the target (workflow + activity). */
  readonly dispatchRatePerSec: number;
  readonly backlog: number;
  readonly liveWorkers: number;
}

export interface CeilingVerdict {
  readonly state: CeilingState;
  /** Whether scale-ups are held back now. */
  readonly hold: boolean;
  /** 'held' when the ceiling was found at this reading, 'resumed' when the rate moved off it; else undefined. */
  readonly change: 'held' | 'resumed' | undefined;
  /** On 'held': the scale-up that did not help, for the log line. */
  readonly evidence?: { readonly rateBefore: number; readonly workersBefore: number; readonly backlogBefore: number };
}

/**
 * Readings in a row with the rate outside the band before scale-ups resume: the server's rates are averages that
 * wobble (more so on a loaded host), and one reading off the ceiling is not yet a moved rate.
 */
export const RESUME_READINGS = 3;

/** Below this, rates are noise (a task every 10 s): the band is never narrower than this many tasks per second. */
export const MIN_RATE_PER_SEC = 0.1;

/** Whether two rates are within the band of each other. */
export function flat(a: number, b: number, bandFraction: number): boolean {
  return Math.abs(a - b) <= bandFraction * Math.max(a, b, MIN_RATE_PER_SEC);
}

/**
 * One reading. With a ceiling known: held while the dispatch rate stays within the band around it, resumed (the
 * ceiling forgotten) once it has been outside the band for RESUME_READINGS readings in a row, up (a limit raised) or
 * down (workers lost: more are needed).
 * Otherwise, once the pending scale-up has settled, it is judged: a ceiling when the rate stayed flat although
 * workers were added and the backlog grew meanwhile. A scale-up from no worker, or from a rate of 0, proves
 * nothing (nothing was dispatched before), so it is never judged a ceiling.
 */
export function observeCeiling(state: CeilingState, reading: CeilingReading, options: CeilingOptions): CeilingVerdict {
  const rate = nonNegative(reading.dispatchRatePerSec);
  if (state.ceiling !== undefined) {
    const outside = flat(rate, state.ceiling.ratePerSec, options.bandFraction) ? 0 : state.ceiling.outside + 1;
    if (outside < RESUME_READINGS) return { state: { ...state, ceiling: { ...state.ceiling, outside } }, hold: true, change: undefined };
    return { state: initialCeilingState, hold: false, change: 'resumed' };
  }
  const pending = state.pending;
  if (pending === undefined || reading.now - pending.at < options.settleMs) return { state, hold: false, change: undefined };
  const judged = pending.workersBefore > 0 && pending.rateBefore > 0;
  const grew = reading.backlog > pending.backlogBefore;
  if (judged && grew && reading.liveWorkers > pending.workersBefore && flat(rate, pending.rateBefore, options.bandFraction)) {
    return {
      state: { pending: undefined, ceiling: { ratePerSec: rate, since: reading.now, workers: reading.liveWorkers, outside: 0 } },
      hold: true,
      change: 'held',
      evidence: { rateBefore: pending.rateBefore, workersBefore: pending.workersBefore, backlogBefore: pending.backlogBefore },
    };
  }
  return { state: { pending: undefined, ceiling: undefined }, hold: false, change: undefined };
}

/** The state after workers were added at `now` to a target that read `before` (its rate, backlog and live workers). */
export function recordScaleUp(state: CeilingState, before: CeilingReading): CeilingState {
  // A scale-up while one is still being judged: judge from the first one's "before", which the later one only adds to.
  if (state.pending !== undefined) return state;
  return {
    ceiling: state.ceiling,
    pending: {
      at: before.now,
      rateBefore: nonNegative(before.dispatchRatePerSec),
      backlogBefore: before.backlog,
      workersBefore: before.liveWorkers,
    },
  };
}

function nonNegative(value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0;
}
