import { sleep } from '../backoff.ts';
import { ConcurrencyLimit, type LimitChange } from './concurrency-limit.ts';

/**
 * Share of the adaptive limit that may be received ahead: with a limit of 8, up to 10 loops hold a batch while at
 * most 8 invoke. A receive costs a round trip (tens of milliseconds from SQS, more from LocalStack) during which
 * the function's slot that just freed would sit idle; a batch received ahead starts the moment the slot frees.
 * Kept small, so few messages wait invisible in one replica while another could take them.
 */
const PREFETCH_SHARE = 0.25;

export interface ConcurrencyGateDeps {
  readonly now: () => number;
  /** The limit moved (for metrics and logs). */
  readonly onChange: (change: NonNullable<LimitChange>) => void;
}

/**
 * Adaptive concurrency's waiting rooms (the limit itself is the pure ConcurrencyLimit). Two counts:
 * - **holding**: loops between the start of a receive and the end of their Invoke, at most the limit plus a
 *   prefetch share; a loop over it does not receive, so messages the function cannot take now stay on the queue,
 *   visible to other replicas;
 * - **invoking**: Invoke calls in flight, at most the limit; a batch received ahead waits for a permit, first
 *   come first served.
 * A throttled batch's back-off ends early when one of this process's invocations is accepted: the function has a
 * free slot then, and the oldest throttled batch takes it before a new receive (or another replica) does.
 */
export class ConcurrencyGate {
  readonly #limit: ConcurrencyLimit;
  readonly #deps: ConcurrencyGateDeps;
  #holding = 0;
  #invoking = 0;
  /** Loops waiting to receive: all recheck on any change. */
  #enterWaiters = new Set<() => void>();
  /** Batches waiting for an Invoke permit, in arrival order. */
  readonly #permitWaiters: (() => void)[] = [];
  /** Throttled batches in their back-off, in arrival order. */
  readonly #throttledWaiters: (() => void)[] = [];

  constructor(policy: { max: number; min: number }, deps: ConcurrencyGateDeps) {
    this.#limit = new ConcurrencyLimit(policy, deps.now());
    this.#deps = deps;
  }

  /** Invocations allowed at once. */
  get limit(): number {
    return this.#limit.limit;
  }

  /** Loops allowed to hold a batch: the limit and its prefetch share. */
  get #holdLimit(): number {
    return this.#limit.limit + Math.ceil(this.#limit.limit * PREFETCH_SHARE);
  }

  /**
   * Waits (idle) until the loop may receive, then counts it as holding; false when `halt` aborted first (the
   * loop then holds nothing). Call leave() once its Invoke is over or it received nothing.
   */
  async enter(halt: AbortSignal): Promise<boolean> {
    while (this.#holding >= this.#holdLimit) {
      if (halt.aborted) return false;
      await this.#changed(halt);
    }
    if (halt.aborted) return false;
    this.#holding++;
    return true;
  }

  leave(): void {
    this.#holding--;
    this.#wakeEnterWaiters();
  }

  /**
   * Runs one Invoke under a permit: waits until fewer than the limit are in flight (never aborted: a received
   * batch is always invoked), then feeds the outcome to the limit. `throttled` tells whether Lambda throttled it.
   */
  async invoke<T>(call: () => Promise<T>, throttled: (result: T) => boolean): Promise<T> {
    if (this.#invoking < this.#limit.limit && this.#permitWaiters.length === 0) this.#invoking++;
    // In line: the one who frees a permit counts it for the first waiter (a newcomer never jumps the line).
    else await new Promise<void>((resolve) => this.#permitWaiters.push(resolve));
    const started = this.#deps.now();
    let result: T | undefined;
    try {
      result = await call();
      return result;
    } finally {
      const inUse = this.#invoking;
      this.#invoking--;
      const now = this.#deps.now();
      if (result !== undefined && throttled(result)) this.#report(this.#limit.throttled(now));
      else if (result !== undefined) {
        this.#report(this.#limit.accepted(now, inUse, now - started));
        this.#throttledWaiters.shift()?.();
      }
      this.#wakePermitWaiters();
    }
  }

  /** A throttled batch's back-off, cut short when one of this process's invocations is accepted. */
  async throttledBackOff(delayMs: number, signal: AbortSignal): Promise<void> {
    const woken = new AbortController();
    const wake = () => woken.abort();
    this.#throttledWaiters.push(wake);
    try {
      await sleep(delayMs, AbortSignal.any([signal, woken.signal]));
    } finally {
      const at = this.#throttledWaiters.indexOf(wake);
      if (at >= 0) this.#throttledWaiters.splice(at, 1);
    }
  }

  #report(change: LimitChange): void {
    if (change === undefined) return;
    this.#deps.onChange(change);
    if (change.to > change.from) this.#wakeEnterWaiters();
  }

  #wakePermitWaiters(): void {
    // As many as there are permits now (the limit may have risen); the rest keep their place in line.
    while (this.#invoking < this.#limit.limit && this.#permitWaiters.length > 0) {
      this.#invoking++;
      this.#permitWaiters.shift()!();
    }
  }

  async #changed(halt: AbortSignal): Promise<void> {
    let resolve = () => {};
    const promise = new Promise<void>((r) => (resolve = r));
    this.#enterWaiters.add(resolve);
    halt.addEventListener('abort', resolve, { once: true });
    try {
      await promise;
    } finally {
      halt.removeEventListener('abort', resolve);
      this.#enterWaiters.delete(resolve);
    }
  }

  #wakeEnterWaiters(): void {
    // Every waiter rechecks; few loops wait, and only while the limit is below --concurrency.
    const waiters = this.#enterWaiters;
    this.#enterWaiters = new Set();
    for (const wake of waiters) wake();
  }
}
