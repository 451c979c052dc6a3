import type { LoopActivity } from '../dispatch/loop-activity.ts';
import { monotonicNow } from '../util/clock.ts';

/**
 * Liveness: the process is alive when its event loop is not blocked and no worker loop is stuck past the
 * deadline of the activity it is in. Every AWS call has its own deadline, so a loop past its activity's deadline
 * means a bug (a promise that never settles), not a slow AWS: restarting the process is the right cure.
 */

export interface Liveness {
  readonly ok: boolean;
  readonly reasons: string[];
}

/** Measures event-loop lag with a timer: how late each tick fires. The worst lag of the last window counts. */
export class EventLoopLag {
  readonly #intervalMs: number;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #expected = 0;
  #worst = 0;
  #previousWorst = 0;
  #ticks = 0;

  constructor(intervalMs = 500, now: () => number = monotonicNow) {
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  start(): void {
    this.#expected = this.#now() + this.#intervalMs;
    this.#timer = setInterval(() => {
      const now = this.#now();
      this.#worst = Math.max(this.#worst, now - this.#expected);
      this.#expected = now + this.#intervalMs;
      // Keep two windows of 10 ticks, so a block is still visible to a probe that comes just after it.
      if (++this.#ticks % 10 === 0) {
        this.#previousWorst = this.#worst;
        this.#worst = 0;
      }
    }, this.#intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** The worst lag seen recently, including a block still going on. */
  lagMs(): number {
    const ongoing = this.#timer ? this.#now() - this.#expected : 0;
    return Math.max(0, this.#worst, this.#previousWorst, ongoing);
  }
}

export function checkLiveness(opts: {
  lagMs: number;
  maxLagMs: number;
  loops: readonly (LoopActivity | undefined)[];
  now: number;
  graceMs: number;
}): Liveness {
  const reasons: string[] = [];
  if (opts.lagMs > opts.maxLagMs) reasons.push(`event loop blocked for ${Math.round(opts.lagMs)} ms (limit ${opts.maxLagMs} ms)`);
  opts.loops.forEach((loop, i) => {
    if (loop && opts.now > loop.deadlineAt + opts.graceMs) {
      reasons.push(`worker loop ${i} stuck in ${loop.activity} for ${Math.round((opts.now - loop.since) / 1000)} s, past its deadline`);
    }
  });
  return { ok: reasons.length === 0, reasons };
}
