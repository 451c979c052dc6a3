/** A worker loop's current step and when it must be over (monotonic ms, src/util/clock.ts; Infinity: no deadline). */
export interface LoopStep {
  readonly step: string;
  readonly since: number;
  readonly deadlineAt: number;
}

/** Slack on top of a step's own deadline before liveness calls a loop stuck. */
const STEP_GRACE_MS = 10_000;

/**
 * Each worker loop's current step, for liveness (src/operator/health.ts). A step starts its deadline when it
 * starts: every wait is a step of its own, so a wait never eats into the deadline of the call that follows it.
 * `deadlineMs` Infinity: waiting for capacity (a permit, a place, a slot) is progress by definition, since the
 * holders it waits for are in steps with deadlines of their own.
 */
export class LoopSteps {
  readonly #loops: (LoopStep | undefined)[];
  readonly #now: () => number;

  constructor(loops: number, now: () => number) {
    this.#loops = Array.from({ length: loops }, () => undefined);
    this.#now = now;
  }

  /** Marks the step a loop is in and the time by which it must be over (undefined: idle between steps). */
  mark(loop: number, step: string | undefined, deadlineMs = 0): void {
    const now = this.#now();
    this.#loops[loop] = step === undefined ? undefined : { step, since: now, deadlineAt: now + deadlineMs + STEP_GRACE_MS };
  }

  /** Each loop's current step (undefined: idle), as of now. */
  snapshot(): readonly (LoopStep | undefined)[] {
    return [...this.#loops];
  }
}
