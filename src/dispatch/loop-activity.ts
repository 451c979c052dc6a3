import { RECEIVE_MARGIN_MS } from '../core/queue.ts';
import type { DispatcherOptions } from './dispatcher-options.ts';

/** A worker loop's current activity and when it must be over (monotonic ms, src/util/clock.ts; Infinity: no deadline). */
export interface LoopActivity {
  readonly activity: string;
  readonly since: number;
  readonly deadlineAt: number;
}

/** Slack on top of an activity's own deadline before liveness calls a loop stuck. */
const ACTIVITY_GRACE_MS = 10_000;

/**
 * What each worker loop is doing, for liveness (src/operator/health.ts). An activity starts its deadline when
 * it starts: every wait is an activity of its own, so a wait never eats into the deadline of the call that
 * follows it. `deadlineMs` Infinity: waiting for capacity (a permit, a place, a slot) is progress by
 * definition, since the holders it waits for are in activities with deadlines of their own.
 */
export class LoopActivities {
  readonly #loops: (LoopActivity | undefined)[];
  readonly #now: () => number;

  constructor(loops: number, now: () => number) {
    this.#loops = Array.from({ length: loops }, () => undefined);
    this.#now = now;
  }

  /** Marks the activity `loop` is in and the time by which it must be over (undefined: idle between activities). */
  mark(loop: number, activity: string | undefined, deadlineMs = 0): void {
    const now = this.#now();
    this.#loops[loop] = activity === undefined ? undefined : { activity, since: now, deadlineAt: now + deadlineMs + ACTIVITY_GRACE_MS };
  }

  /** Each loop's current activity (undefined: idle), as of now. */
  snapshot(): readonly (LoopActivity | undefined)[] {
    return [...this.#loops];
  }
}

/** The longest one receive pass can take: a short receive per queue, a long poll, then --sleep or a back-off. */
export function receiveDeadlineMs({ queues, pollForSec, sleepSec }: Pick<DispatcherOptions, 'queues' | 'pollForSec' | 'sleepSec'>): number {
  // Short receives may be shared: a loop can wait for the call in flight and then its own.
  return queues.length * 2 * RECEIVE_MARGIN_MS + pollForSec * 1000 + RECEIVE_MARGIN_MS + Math.max(sleepSec * 1000, 20_000);
}
