import type { Logger } from 'pino';
import { sleep } from '../util/backoff.ts';
import { monotonicNow } from '../util/clock.ts';
import type { InvokeError } from '../core/function-invoker.ts';

/** First and longest pause after the function was found unusable. */
const FIRST_PAUSE_MS = 1_000;
const MAX_PAUSE_MS = 30_000;

/**
 * Pauses a function that cannot run at all (access denied, alias deleted, KMS, update in progress). While
 * paused, no loop receives for it and held batches wait, keeping their messages invisible: a bad deploy must
 * not walk every message towards its DLQ. The pause grows (1 s doubling to 30 s) while the function keeps
 * failing, is logged once per pause, and ends on its own with the first invocation that gets through.
 */
export class FunctionGate {
  readonly #log: Logger;
  readonly #random: () => number;
  readonly #now: () => number;
  #failures = 0;
  #pausedUntil = 0;
  #since = 0;
  /** Aborted by resume(), so loops waiting out a pause carry on as soon as an invocation got through. */
  #resumed = new AbortController();

  constructor(deps: { logger: Logger; random?: () => number; now?: () => number }) {
    this.#log = deps.logger;
    this.#random = deps.random ?? Math.random;
    // Monotonic: a pause measured on the wall clock would last 600 s longer after a 600 s step back.
    this.#now = deps.now ?? monotonicNow;
  }

  get paused(): boolean {
    return this.#pausedUntil > this.#now();
  }

  /** Records that the function failed as unusable. Loops failing together within one pause count once. */
  pause(error: InvokeError): void {
    const now = this.#now();
    if (now < this.#pausedUntil) return;
    if (this.#failures === 0) this.#since = now;
    const ceiling = Math.min(MAX_PAUSE_MS, FIRST_PAUSE_MS * 2 ** Math.min(this.#failures, 20));
    // Half fixed, half jittered: replicas that paused together do not all probe together.
    const pauseMs = Math.floor(ceiling / 2 + (this.#random() * ceiling) / 2);
    this.#failures++;
    this.#pausedUntil = now + pauseMs;
    this.#log.error(
      { err: { code: error.code, message: error.message }, pauseMs, attempt: this.#failures },
      'the function cannot be invoked; pausing it, messages are kept invisible',
    );
  }

  /** Records an invocation that got through (any answer from the function itself). */
  resume(): void {
    if (this.#failures === 0) return;
    this.#log.info({ pausedMs: this.#now() - this.#since, attempts: this.#failures }, 'the function can be invoked again; resuming');
    this.#failures = 0;
    this.#pausedUntil = 0;
    this.#resumed.abort();
    this.#resumed = new AbortController();
  }

  /**
   * Waits until the pause ends, resume() is called, or `stop` aborts. `onWait` is told the length of each
   * stretch before it starts (another loop's failed probe may lengthen the pause): the caller's liveness step.
   */
  async wait(stop: AbortSignal, onWait: (ms: number) => void = () => {}): Promise<void> {
    while (this.paused && !stop.aborted) {
      const ms = this.#pausedUntil - this.#now();
      onWait(ms);
      await sleep(ms, AbortSignal.any([stop, this.#resumed.signal]));
    }
  }
}
