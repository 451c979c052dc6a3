/**
 * How many AWS calls may start in one turn of the event loop. Without a limit, a burst (10,000 invocations
 * ending together, the first receive answers of 10,000 loops) starts every call in one run of promise
 * callbacks: seconds of signing and request building during which no socket connects, no request is written
 * and no answer is read, so the first call of the burst goes out only after the last one was built. With
 * at most `perTurn` starts per turn, the rest wait for a later turn (after the event loop's I/O phase), so the
 * first calls are on the wire, and their connects done, while the later ones are still being built.
 *
 * Under that limit (every ordinary load) a call starts at once, without waiting at all.
 */
export class CallPacer {
  readonly #perTurn: number;
  readonly #schedule: (next: () => void) => void;
  readonly #waiting: (() => void)[] = [];
  #head = 0;
  #started = 0;
  #scheduled = false;

  /** `schedule` runs its callback in a later turn, after I/O (setImmediate; tests pass their own). */
  constructor(perTurn: number, schedule: (next: () => void) => void = (next) => setImmediate(next)) {
    if (!(perTurn >= 1)) throw new RangeError(`perTurn must be at least 1, got ${perTurn}`);
    this.#perTurn = perTurn;
    this.#schedule = schedule;
  }

  /** Undefined when the call may start now; else a promise that resolves in the turn it may. */
  turn(): Promise<void> | undefined {
    this.#scheduleNext();
    if (this.#started < this.#perTurn && this.#head === this.#waiting.length) {
      this.#started += 1;
      return undefined;
    }
    return new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  /** Calls waiting for a later turn. */
  get waiting(): number {
    return this.#waiting.length - this.#head;
  }

  #scheduleNext(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#schedule(() => this.#nextTurn());
  }

  #nextTurn(): void {
    this.#scheduled = false;
    this.#started = 0;
    while (this.#started < this.#perTurn && this.#head < this.#waiting.length) {
      const resolve = this.#waiting[this.#head]!;
      this.#head += 1;
      this.#started += 1;
      resolve();
    }
    if (this.#head === this.#waiting.length) {
      this.#waiting.length = 0;
      this.#head = 0;
    }
    // Starts counted in this turn (released ones, and new ones before it ends) are reset in the next.
    if (this.#started > 0) this.#scheduleNext();
  }
}
