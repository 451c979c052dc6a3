import { sleep } from '../util/backoff.ts';
import { WaitQueue } from '../util/wait-queue.ts';
import { ConcurrencyLimit, type LimitChange } from './concurrency-limit.ts';
import { GrowthCap, type ConcurrencyGrowth } from './growth-cap.ts';

/**
 * Share of the adaptive limit that may be received ahead: with a limit of 8, up to 10 loops hold a batch while at
 * most 8 invoke. A receive costs a round trip (tens of milliseconds from SQS, more from LocalStack) during which
 * the function's slot that just freed would sit idle; a batch received ahead starts the moment the slot frees.
 * Kept small, so few messages wait invisible in one replica while another could take them.
 */
const PREFETCH_SHARE = 0.25;

export interface ConcurrencyGateDeps {
  /** A monotonic clock (src/util/clock.ts). */
  readonly now: () => number;
  /** The limit in use moved (for metrics and logs); `byGrowthCap`: the growth cap moved it, not a throttle or success. */
  readonly onChange: (change: LimitMove) => void;
  /**
   * A parked batch waits for a place: idle loops hold theirs while they wait for a message, which may be as long
   * as the queues stay empty, so one of them gives its place up (src/receive/receiver.ts, yieldIdle()).
   */
  readonly onRejoinWait?: (() => void) | undefined;
}

/** A move of the limit in use. */
export type LimitMove = NonNullable<LimitChange> & { readonly byGrowthCap?: true };

/** How Lambda answered one Invoke, for the limit: only answers and throttles say something about the budget. */
export type InvokeVerdict = 'accepted' | 'throttled' | 'failed';

/**
 * Adaptive concurrency's waiting rooms (the limit itself is the pure ConcurrencyLimit). Three counts:
 * - **holding**: loops between the start of a receive and the end of their Invoke, at most the limit plus a
 *   prefetch share (the hold limit); a loop over it does not receive, so messages the function cannot take now
 *   stay on the queue, visible to other replicas;
 * - **waiting**: batches that hold messages but wait (an unknown outcome held, a throttle or not-sent back-off,
 *   a paused function). Waiting never holds capacity: they give their place to healthy batches (park()) and
 *   take one again, ahead of new receives, before their next attempt (unpark()). So that throttled batches
 *   cannot pull ever more messages off the queue, a new receive also needs holding + waiting under twice the
 *   hold limit: a route holds at most twice its hold limit of batches, and at most the hold limit are active;
 * - **invoking**: Invoke calls in flight, at most the limit; a batch received ahead waits for a permit, first
 *   come first served. The permit is held only for the call itself.
 * A throttled batch's back-off ends early when one of this process's invocations is accepted: the function has a
 * free slot then, and the oldest throttled batch takes it before a new receive (or another replica) does.
 * Every line is a FIFO WaitQueue, and a freed place wakes one waiter, handing the place over.
 * With a growth cap (--concurrency-growth, src/invoke/growth-cap.ts) the limit in use is the lower of the
 * adaptive limit and the cap, which follows the invocations in flight; while the cap holds batches back, a timer
 * lets them in as soon as it rises (it rises with time, not only when an invocation ends).
 */
export class ConcurrencyGate {
  readonly #limit: ConcurrencyLimit;
  readonly #growth: GrowthCap | undefined;
  readonly #deps: ConcurrencyGateDeps;
  /** The limit in use last reported. */
  #reported: number;
  /** Set while the growth cap holds batches back: wakes them when the cap can next rise. */
  #recheck: NodeJS.Timeout | undefined;
  #holding = 0;
  #waiting = 0;
  #invoking = 0;
  /** Loops waiting to receive. */
  readonly #enterLine = new WaitQueue();
  /** Waiting batches taking a place again before their next attempt: served before #enterLine. */
  readonly #rejoinLine = new WaitQueue();
  /** Batches waiting for an Invoke permit, in arrival order. */
  readonly #permitLine = new WaitQueue();
  /** Throttled batches in their back-off, in arrival order. */
  readonly #throttledWaiters: (() => void)[] = [];

  constructor(policy: { max: number; min: number; growth?: ConcurrencyGrowth | undefined }, deps: ConcurrencyGateDeps) {
    const now = deps.now();
    this.#limit = new ConcurrencyLimit(policy, now);
    this.#growth = policy.growth ? new GrowthCap(policy.growth, policy.min, now) : undefined;
    this.#deps = deps;
    this.#reported = this.#limit.limit;
    this.#refresh();
  }

  /** Invocations allowed at once: the adaptive limit, or the growth cap when it is lower. */
  get limit(): number {
    return this.#growth ? Math.min(this.#limit.limit, this.#growth.cap(this.#deps.now())) : this.#limit.limit;
  }

  /** Loops holding a place, batches waiting aside, and loops in line to receive (for tests and status). */
  get counts(): { holding: number; waiting: number; enterLine: number; rejoinLine: number } {
    return { holding: this.#holding, waiting: this.#waiting, enterLine: this.#enterLine.size, rejoinLine: this.#rejoinLine.size };
  }

  /** Loops allowed to hold a batch: the limit and its prefetch share. */
  get #holdLimit(): number {
    const limit = this.limit;
    return limit + Math.ceil(limit * PREFETCH_SHARE);
  }

  #admitsNew(): boolean {
    return this.#holding < this.#holdLimit && this.#holding + this.#waiting < 2 * this.#holdLimit && this.#rejoinLine.size === 0;
  }

  /**
   * Waits (idle, in line) until the loop may receive, then counts it as holding; false when `halt` aborted
   * first (the loop then holds nothing). Call leave() once its Invoke is over or it received nothing.
   */
  async enter(halt: AbortSignal): Promise<boolean> {
    if (halt.aborted) return false;
    if (this.#enterLine.size === 0 && this.#admitsNew()) {
      this.#holding++;
      return true;
    }
    // Woken means admitted: the one who freed the place counted it for this loop.
    this.#scheduleRecheck();
    return this.#enterLine.wait(halt);
  }

  /** A holding loop is done (its Invoke is over, or it received nothing); `waiting`: it was parked. */
  leave(waiting = false): void {
    if (waiting) this.#waiting--;
    else this.#holding--;
    this.#admit();
  }

  /** A holding batch starts to wait (hold, back-off, pause): its place goes to a healthy batch meanwhile. */
  park(): void {
    this.#holding--;
    this.#waiting++;
    this.#admit();
  }

  /**
   * A parked batch takes a place again before its next attempt, ahead of new receives. Never aborted: a batch
   * that was received is always invoked or settled, and places free as the batches holding them end.
   */
  async unpark(): Promise<void> {
    if (this.#rejoinLine.size === 0 && this.#holding < this.#holdLimit) {
      this.#holding++;
      this.#waiting--;
      return;
    }
    const waited = this.#rejoinLine.wait();
    this.#deps.onRejoinWait?.();
    await waited;
  }

  /** Hands free places over: first to parked batches coming back, then to loops waiting to receive. */
  #admit(): void {
    while (this.#holding < this.#holdLimit) {
      if (this.#rejoinLine.size > 0) {
        this.#holding++;
        this.#waiting--;
        this.#rejoinLine.wakeOne();
      } else if (this.#enterLine.size > 0 && this.#admitsNew()) {
        this.#holding++;
        this.#enterLine.wakeOne();
      } else return;
    }
  }

  /**
   * Runs one Invoke under a permit: waits until fewer than the limit are in flight (never aborted: a received
   * batch is always invoked), then feeds the outcome to the limit. Only an answer from Lambda (`accepted`,
   * whatever the function returned) or a throttle moves the limit: a call that failed (not sent, no answer,
   * 5xx, function unusable) says nothing about the function's budget.
   */
  async invoke<T>(call: () => Promise<T>, verdict: (result: T) => InvokeVerdict): Promise<T> {
    if (this.#invoking < this.limit && this.#permitLine.size === 0) this.#countInvoking(1);
    // In line: the one who frees a permit counts it for the first waiter (a newcomer never jumps the line).
    else {
      this.#scheduleRecheck();
      await this.#permitLine.wait();
    }
    const started = this.#deps.now();
    let result: T | undefined;
    try {
      result = await call();
      return result;
    } finally {
      const inUse = this.#invoking;
      this.#countInvoking(-1);
      const now = this.#deps.now();
      const outcome = result === undefined ? 'failed' : verdict(result);
      if (outcome === 'throttled') this.#report(this.#limit.throttled(now));
      else if (outcome === 'accepted') {
        this.#report(this.#limit.accepted(now, inUse, now - started));
        this.#throttledWaiters.shift()?.();
      }
      this.#refresh();
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

  /** The adaptive limit moved: the limit in use moves with it unless the growth cap is lower. */
  #report(change: LimitChange): void {
    if (change !== undefined) this.#refresh(false);
  }

  /** Reports the limit in use when it moved (`byGrowthCap`: the cap moved it), and lets batches in when it rose. */
  #refresh(byGrowthCap = true): void {
    const limit = this.limit;
    if (limit === this.#reported) return;
    const from = this.#reported;
    this.#reported = limit;
    this.#deps.onChange({ from, to: limit, ...(byGrowthCap && this.#growth ? { byGrowthCap: true as const } : {}) });
    if (limit > from) this.#admit();
  }

  #countInvoking(delta: 1 | -1): void {
    this.#invoking += delta;
    this.#growth?.observe(this.#deps.now(), this.#invoking);
  }

  /**
   * While the growth cap holds batches back, looks again when it can next rise: it rises as the window moves on,
   * also when no invocation ends meanwhile (long ones). Not holding the process open: unref'd.
   */
  #scheduleRecheck(): void {
    if (this.#growth === undefined || this.#recheck !== undefined) return;
    this.#recheck = setTimeout(() => {
      this.#recheck = undefined;
      this.#refresh();
      this.#wakePermitWaiters();
      if (this.#permitLine.size > 0 || this.#enterLine.size > 0) this.#scheduleRecheck();
    }, this.#growth.msToNextChange(this.#deps.now()));
    this.#recheck.unref();
  }

  #wakePermitWaiters(): void {
    // As many as there are permits now (the limit may have risen); the rest keep their place in line.
    while (this.#invoking < this.limit && this.#permitLine.size > 0) {
      this.#countInvoking(1);
      this.#permitLine.wakeOne();
    }
  }
}
