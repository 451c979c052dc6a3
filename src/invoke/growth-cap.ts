/**
 * The growth cap of adaptive concurrency (--concurrency-growth, e.g. "2x/5m"): the invocations this process runs at
 * once grow at most by `factor` within any `window`. Lambda Managed Instances scale asynchronously, on CPU use and
 * the saturation of their execution environments, not when an invocation arrives: "If your traffic more than
 * doubles within 5 minutes, you may see throttles as Lambda scales up instances and execution environments to
 * meet demand" (AWS Lambda Developer Guide, "Scaling Lambda Managed Instances",
 * https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-scaling.html). A backlog that appears at
 * once would otherwise go from idle to --concurrency invocations in one receive.
 *
 * Pure: the caller passes the time (GrowthCeiling, src/invoke/growth-ceiling.ts, hands it to ConcurrencyGate as a
 * ceiling).
 */

/** --concurrency-growth: at most `factor` times the concurrency of any moment within the last `windowMs`. */
export interface ConcurrencyGrowth {
  readonly factor: number;
  readonly windowMs: number;
}

/**
 * Sub-windows the window is kept in. The level of a sub-window is the most invocations in flight during it, so a
 * gap of a millisecond between one invocation's end and the next one's start is not read as traffic that fell;
 * the window is then judged to a tenth of its length, on the safe side. A sub-window's peak may have been reached
 * at its very end, so the cap reads the current sub-window and the 11 before it: a level counts once it has lasted
 * at least a whole window (10 sub-windows), at most 12 of them.
 */
const SUB_WINDOWS = 10;
const SUB_WINDOWS_READ = SUB_WINDOWS + 2;

/**
 * The allowed concurrency now: `factor` times the lowest level of the window (the sub-windows it covers), never
 * below `floor` (--min-concurrency: what the function takes at any time), and at least one more than that lowest
 * level, so that a factor below 2 still grows from small numbers (1.5 x 1 would stay 1). Traffic that falls lowers
 * the cap again, as capacity that is not used is scaled in; the cap follows a window after the traffic returns.
 * The daemon starts from idle: the first window allows `floor`.
 */
export class GrowthCap {
  readonly #factor: number;
  readonly #floor: number;
  readonly #subMs: number;
  /** Peak in flight per sub-window, oldest first; the last is the current one. */
  readonly #peaks: number[];
  /** The current sub-window's number (time / subMs). */
  #index: number;
  /** Invocations in flight now. */
  #level = 0;

  constructor(growth: ConcurrencyGrowth, floor: number, now: number) {
    if (!(growth.factor > 1 && growth.windowMs > 0 && Number.isInteger(floor) && floor >= 1)) {
      throw new RangeError(
        `growth cap needs a factor above 1, a window and a floor of at least 1, got ${JSON.stringify({ ...growth, floor })}`,
      );
    }
    this.#factor = growth.factor;
    this.#floor = floor;
    this.#subMs = growth.windowMs / SUB_WINDOWS;
    // The window before the start counts as idle.
    this.#peaks = Array.from({ length: SUB_WINDOWS_READ }, () => 0);
    this.#index = Math.floor(now / this.#subMs);
  }

  /** Invocations in flight changed to `inFlight`. */
  observe(now: number, inFlight: number): void {
    this.#advance(now);
    this.#level = inFlight;
    const last = this.#peaks.length - 1;
    this.#peaks[last] = Math.max(this.#peaks[last] ?? 0, inFlight);
  }

  /** Invocations allowed in flight at `now`. */
  cap(now: number): number {
    this.#advance(now);
    const lowest = Math.min(...this.#peaks);
    return Math.max(this.#floor, lowest + 1, Math.floor(this.#factor * lowest));
  }

  /** Milliseconds until the next sub-window starts, when the cap can next change without an event. */
  msToNextChange(now: number): number {
    return Math.max(1, (Math.floor(now / this.#subMs) + 1) * this.#subMs - now);
  }

  /** Starts the sub-windows up to `now`; those without an event held the level of the last one. */
  #advance(now: number): void {
    const index = Math.floor(now / this.#subMs);
    const steps = Math.min(index - this.#index, this.#peaks.length);
    for (let i = 0; i < steps; i++) {
      this.#peaks.shift();
      this.#peaks.push(this.#level);
    }
    if (index > this.#index) this.#index = index;
  }
}
