// The Lambda test endpoint's model of a Lambda Managed Instances function's capacity, as AWS documents it:
// - "Lambda Managed Instances does not scale when invocations arrive and does not support cold starts. Instead, it
//   scales asynchronously using resource consumption signals", and "If your traffic more than doubles within
//   5 minutes, you may see throttles" (AWS Lambda Developer Guide, "Scaling Lambda Managed Instances",
//   https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-scaling.html);
// - a 429 then: "Lambda Managed Instances might reject new invokes to protect invokes that are already in flight"
//   (AWS Lambda Developer Guide, "Troubleshooting Lambda Managed Instances",
//   https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-troubleshooting.html). The pages name no
//   `Reason` for it, and the SDK's ThrottleReason values are all about concurrency and rates: this model answers
//   a TooManyRequestsException without a Reason, with its own message.
// Capacity here: what the function runs at rest (`baseConcurrency`), or twice the lowest concurrency of the last
// window (read per tenth of the window by its peak, as a scaler that samples would), whichever is more.

export interface ManagedInstancesSpec {
  /** Invocations the capacity provider runs at rest (AWS starts three execution environments by default). */
  baseConcurrency: number;
  /** The scaling window: traffic may double within it (AWS: 5 minutes). */
  windowMs: number;
}

/** The model's answer to an invoke over capacity. */
export const MANAGED_INSTANCES_THROTTLE = {
  statusCode: 429,
  errorType: 'TooManyRequestsException',
  message: 'Lambda Managed Instances: capacity is scaling; the invoke was rejected to protect invocations in flight.',
} as const;

export class ManagedCapacity {
  readonly #spec: ManagedInstancesSpec;
  readonly #subMs: number;
  /** Peak in flight of each tenth of the window, by its number (time / subMs). */
  readonly #peaks = new Map<number, number>();
  #level = 0;
  #lastIndex: number;

  constructor(spec: ManagedInstancesSpec, now = Date.now()) {
    this.#spec = spec;
    this.#subMs = spec.windowMs / 10;
    this.#lastIndex = Math.floor(now / this.#subMs);
  }

  /** Invocations in flight changed. */
  observe(inFlight: number, now = Date.now()): void {
    const index = this.#fill(now);
    this.#level = inFlight;
    this.#peaks.set(index, Math.max(this.#peaks.get(index) ?? 0, inFlight));
  }

  /** Invocations the function can run now. */
  capacity(now = Date.now()): number {
    const index = this.#fill(now);
    let lowest = Number.POSITIVE_INFINITY;
    for (let i = index - 10; i <= index; i++) lowest = Math.min(lowest, this.#peaks.get(i) ?? 0);
    return Math.max(this.#spec.baseConcurrency, 2 * lowest);
  }

  /** Whether one more invoke, on top of `inFlight`, is refused. */
  refuses(inFlight: number, now = Date.now()): boolean {
    return inFlight + 1 > this.capacity(now);
  }

  /** Tenths of the window without an event held the level of the last one. */
  #fill(now: number): number {
    const index = Math.floor(now / this.#subMs);
    for (let i = Math.max(this.#lastIndex + 1, index - 11); i <= index; i++) this.#peaks.set(i, this.#level);
    if (index > this.#lastIndex) this.#lastIndex = index;
    for (const key of this.#peaks.keys()) if (key < index - 11) this.#peaks.delete(key);
    return index;
  }
}
