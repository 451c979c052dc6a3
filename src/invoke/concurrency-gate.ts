import { sleep } from '../util/backoff.ts';
import { WaitQueue } from '../util/wait-queue.ts';
import type { Ceiling } from './ceiling.ts';
import type { LimitChange } from './concurrency-limit.ts';

/**
 * Share of the limit that may be received ahead: with a limit of 8, up to 10 loops hold a batch while at
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
 * The concurrency budget's waiting rooms, always there: the limit is the lowest of the ceilings handed to it
 * (src/invoke/ceiling.ts: the fixed --concurrency, and with --adaptive-concurrency the adaptive limit and the growth
 * cap). Under the fixed ceiling alone no loop ever waits: each of the --concurrency loops holds one place and one
 * permit at most. Three counts:
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
 * With a ceiling that learns from Lambda's answers (the adaptive limit), a throttled batch's back-off ends early when
 * one of this process's invocations is accepted: the function has a free slot then, and the oldest throttled batch
 * takes it before a new receive (or another replica) does.
 * Every line is a FIFO WaitQueue, and a freed place wakes one waiter, handing the place over.
 * A ceiling that moves by itself (the growth cap, src/invoke/growth-cap.ts, which follows the invocations in
 * flight): while it holds batches back, a timer lets them in as soon as it rises (it rises with time, not only when
 * an invocation ends).
 */
export class ConcurrencyGate {
  readonly #ceilings: readonly Ceiling[];
  /** The ceilings told of Lambda's answers (the adaptive limit); kept apart so that the others cost nothing per call. */
  readonly #learning: readonly Pick<Required<Ceiling>, 'heard'>[];
  /** The ceilings told of the invocations in flight (the growth cap). */
  readonly #following: readonly Pick<Required<Ceiling>, 'inFlight'>[];
  /** The ceilings that move by themselves, with time (the growth cap). */
  readonly #drifting: readonly Pick<Required<Ceiling>, 'msToNextChange'>[];
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

  /**
   * `ceilings`: at least one that holds still (the fixed --concurrency). The limit starts as the lowest of those;
   * one that moves by itself (the growth cap) is reported as moving it at once.
   */
  constructor(ceilings: readonly Ceiling[], deps: ConcurrencyGateDeps) {
    this.#ceilings = ceilings;
    this.#learning = ceilings.filter((c) => c.heard !== undefined) as Pick<Required<Ceiling>, 'heard'>[];
    this.#following = ceilings.filter((c) => c.inFlight !== undefined) as Pick<Required<Ceiling>, 'inFlight'>[];
    this.#drifting = ceilings.filter((c) => c.msToNextChange !== undefined) as Pick<Required<Ceiling>, 'msToNextChange'>[];
    const still = ceilings.filter((c) => c.msToNextChange === undefined);
    if (still.length === 0) throw new RangeError('a concurrency gate needs a ceiling that holds still (the fixed --concurrency)');
    this.#deps = deps;
    this.#reported = lowest(still);
    this.#refresh();
  }

  /** Invocations allowed at once: the lowest of the ceilings. */
  get limit(): number {
    return lowest(this.#ceilings);
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

  /** Counts the loop as holding if it may receive now, with no wait (true); else it holds nothing (false). */
  tryEnter(): boolean {
    if (this.#enterLine.size > 0 || !this.#admitsNew()) return false;
    this.#holding++;
    return true;
  }

  /**
   * Waits (idle, in line) until the loop may receive, then counts it as holding; false when `halt` aborted
   * first (the loop then holds nothing). Call leave() once its Invoke is over or it received nothing.
   */
  async enter(halt: AbortSignal): Promise<boolean> {
    if (halt.aborted) return false;
    if (this.tryEnter()) return true;
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
    // Only a ceiling that learns from Lambda's answers needs the call's time.
    const started = this.#learning.length > 0 ? this.#deps.now() : 0;
    let result: T | undefined;
    try {
      result = await call();
      return result;
    } finally {
      const inUse = this.#invoking;
      this.#countInvoking(-1);
      if (this.#learning.length > 0) this.#hear(result === undefined ? 'failed' : verdict(result), inUse, started);
      this.#refresh();
      this.#wakePermitWaiters();
    }
  }

  /**
   * A ceiling that moves on outside events (the fleet's share, when the members change) moved: the limit is read
   * again, reported, and batches and loops held back are let in if it rose. A lower limit takes effect as
   * invocations end: none in flight is cut short.
   */
  ceilingsMoved(): void {
    this.#refresh(false);
    this.#wakePermitWaiters();
  }

  /** Tells the learning ceilings what Lambda answered; an accepted call also ends the oldest throttled back-off. */
  #hear(outcome: InvokeVerdict, inUse: number, started: number): void {
    const now = this.#deps.now();
    if (outcome === 'failed') return;
    let moved = false;
    for (const ceiling of this.#learning) moved = ceiling.heard(outcome, now, inUse, now - started) || moved;
    // A learning ceiling moved the limit in use: not the growth cap's move.
    if (moved) this.#refresh(false);
    if (outcome === 'accepted') this.#throttledWaiters.shift()?.();
  }

  /**
   * A throttled batch's back-off, cut short when one of this process's invocations is accepted; a plain sleep
   * unless a ceiling learns from Lambda's answers.
   */
  throttledBackOff(delayMs: number, signal: AbortSignal): Promise<void> {
    return this.#learning.length > 0 ? this.#wakeableBackOff(delayMs, signal) : sleep(delayMs, signal);
  }

  async #wakeableBackOff(delayMs: number, signal: AbortSignal): Promise<void> {
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

  /** Reports the limit in use when it moved (`byGrowthCap`: the cap moved it), and lets batches in when it rose. */
  #refresh(byGrowthCap = true): void {
    const limit = this.limit;
    if (limit === this.#reported) return;
    const from = this.#reported;
    this.#reported = limit;
    this.#deps.onChange({ from, to: limit, ...(byGrowthCap && this.#drifting.length > 0 ? { byGrowthCap: true as const } : {}) });
    if (limit > from) this.#admit();
  }

  #countInvoking(delta: 1 | -1): void {
    this.#invoking += delta;
    for (const ceiling of this.#following) ceiling.inFlight(this.#invoking);
  }

  /**
   * While a ceiling that moves by itself (the growth cap) holds batches back, looks again when it can next rise: it
   * rises as the window moves on, also when no invocation ends meanwhile (long ones). Not holding the process open:
   * unref'd.
   */
  #scheduleRecheck(): void {
    if (this.#drifting.length === 0 || this.#recheck !== undefined) return;
    this.#recheck = setTimeout(() => {
      this.#recheck = undefined;
      this.#refresh();
      this.#wakePermitWaiters();
      if (this.#permitLine.size > 0 || this.#enterLine.size > 0) this.#scheduleRecheck();
    }, soonest(this.#drifting));
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

/** The lowest limit of `ceilings`. */
function lowest(ceilings: readonly Ceiling[]): number {
  let limit = Number.POSITIVE_INFINITY;
  for (const ceiling of ceilings) limit = Math.min(limit, ceiling.limit());
  return limit;
}

/** When the first of `ceilings` can next move by itself. */
function soonest(ceilings: readonly Pick<Required<Ceiling>, 'msToNextChange'>[]): number {
  let ms = Number.POSITIVE_INFINITY;
  for (const ceiling of ceilings) ms = Math.min(ms, ceiling.msToNextChange());
  return ms;
}
