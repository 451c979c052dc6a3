import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { callErrorOf } from '../core/errors.ts';
import { backoffMs, sleep } from '../util/backoff.ts';
import { CALL_DEADLINE_MS, type MessageSource, type ResolvedQueue } from '../core/queue.ts';
import { TimerHeap, type HeapEntry } from '../util/timer-heap.ts';
import { SQS_BATCH_MAX } from '../core/queue.ts';
import { messageIdOf } from '../core/message.ts';

/** Extend when this much visibility remains (or half the timeout, if shorter): room for a few retries. */
const MAX_LEAD_MS = 10_000;
/** What stop() returns when no extension is on its way. */
const SETTLED: Promise<void> = Promise.resolve();
/**
 * What a lease holds once its last message is stopped: never written to (add() makes a new map). Why not delete
 * the last entry: docs/performance.md, "Garbage the data path no longer makes".
 */
const NONE: Map<Message, Held> = new Map();
/** A retry that would land later than this before the visibility runs out is pointless. */
const RETRY_MARGIN_MS = 250;

interface Held {
  readonly message: Message;
  /** When SQS will hand the message to someone else unless it is extended or settled. */
  visibleAt: number;
}

/** A lease's place on its clock. */
interface LeaseDue extends HeapEntry {
  readonly lease: VisibilityLease;
}

/** The one timer a dispatcher's leases share for their extensions (src/util/timer-heap.ts): VisibilityLease.clock(). */
export type LeaseClock = TimerHeap<LeaseDue>;

export interface LeaseDeps {
  readonly source: MessageSource;
  readonly logger: Logger;
  readonly now: () => number;
  readonly random: () => number;
  /** Told once per message whose lease lapsed (see VisibilityLease), for the lapsed-messages metric. */
  readonly onLapse?: ((queue: ResolvedQueue, messages: readonly Message[]) => void) | undefined;
  /** The timer the leases share (VisibilityLease.clock(now)); without it, the lease arms a timer of its own. */
  readonly clock?: LeaseClock | undefined;
}

/**
 * How long before the visibility runs out to extend it: 10 s, or half the timeout if shorter, so a short
 * timeout keeps the same share of it for retries.
 */
export function extensionLeadMs(timeoutMs: number): number {
  return Math.min(MAX_LEAD_MS, timeoutMs / 2);
}

/**
 * The deadline of one extension call: 5 s like every other SQS call, or half the lead if shorter. With a 4 s
 * timeout the lead is 2 s, and a call hung for 5 s would outlive the visibility it was meant to extend; at
 * 1 s, one hung call still leaves half the lead for a retry.
 */
export function extensionDeadlineMs(timeoutMs: number): number {
  return Math.min(CALL_DEADLINE_MS, extensionLeadMs(timeoutMs) / 2);
}

/**
 * One visibility lease per received batch: from the receive until each message's settle call has completed,
 * every message of the batch (later chunks of a split batch too) is kept invisible by extending its
 * visibility shortly before it runs out, so no message is handed out again while it is still ours.
 * - A failed call is retried with back-off for as long as visibility remains.
 * - An entry that SQS refuses (deleted by the function itself, receipt expired) lapses that message only.
 * - stop() waits for an extension already on its way, so none lands after a release or a delete.
 *
 * A message whose visibility the lease can no longer prove has **lapsed**: an extension failed until too
 * little visibility remained to retry, SQS refused its entry, or confirm() found less than half the lead left
 * (an extension is overdue). It is no longer extended, reported once through onLapse, and remembered, so the
 * dispatcher neither invokes it (again) nor settles it as its own; SQS delivers it again after its timeout.
 */
export class VisibilityLease {
  readonly #queue: ResolvedQueue;
  readonly #timeoutMs: number;
  readonly #deps: LeaseDeps;
  #held = new Map<Message, Held>();
  /**
   * Extension calls on their way. It and #ended are made only when needed: most batches are settled before
   * their first extension, and thousands of leases may be open at a time.
   */
  #calls: Set<Promise<unknown>> | undefined;
  #over = false;
  /** Aborts a retry's back-off at end(); made by the first retry. */
  #ended: AbortController | undefined;
  /** When the next extension is due, on the clock shared by the leases of these deps. */
  readonly #due: LeaseDue = { dueAt: 0, slot: -1, lease: this };
  readonly #clock: TimerHeap<LeaseDue>;
  /** An extension is on its way; it schedules the next one when it is done. */
  #extending = false;
  /** Messages whose lease lapsed; made at the first lapse. */
  #lapsed: Set<Message> | undefined;

  constructor(queue: ResolvedQueue, messages: readonly Message[], timeoutMs: number, receivedAt: number, deps: LeaseDeps) {
    this.#queue = queue;
    this.#timeoutMs = timeoutMs;
    this.#deps = deps;
    this.#clock = deps.clock ?? VisibilityLease.clock(deps.now);
    for (const message of messages) this.#held.set(message, { message, visibleAt: receivedAt + timeoutMs });
    // A queue with visibility timeout 0 hands messages out again at once: there is nothing to keep.
    if (timeoutMs > 0) this.#schedule();
  }

  /** The visibility timeout the receive stated and every extension renews, milliseconds. */
  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** The messages still leased. */
  get messages(): Message[] {
    return [...this.#held.keys()];
  }

  /**
   * Adds messages received later for the same batch (the batching window gathers a batch over several
   * receives); they are extended with the others from now on. A no-op after end().
   */
  add(messages: readonly Message[], receivedAt: number): void {
    if (this.#over || this.#timeoutMs <= 0) return;
    if (this.#held === NONE) this.#held = new Map();
    for (const message of messages) this.#held.set(message, { message, visibleAt: receivedAt + this.#timeoutMs });
    // An extension on its way schedules the next one itself; scheduling now could send a second one for the
    // messages it is extending, whose visibleAt it has not updated yet.
    if (!this.#extending) this.#schedule();
  }

  /** When the first of these messages that is still leased becomes visible again; 0 when none is. */
  expiresAt(messages: readonly Message[]): number {
    let at = 0;
    for (const m of messages) {
      const h = this.#held.get(m);
      if (h && (at === 0 || h.visibleAt < at)) at = h.visibleAt;
    }
    return at;
  }

  /**
   * Before an Invoke attempt: the messages of `messages` whose lease has lapsed, after lapsing those still held
   * with less than half the extension lead left (an extension is overdue: their visibility cannot be proven for
   * the call about to start). Empty when every one of them is safely hidden. A queue with visibility timeout 0
   * promises nothing, so nothing lapses there.
   */
  confirm(messages: readonly Message[]): Message[] {
    if (this.#timeoutMs > 0) {
      const sureAt = this.#deps.now() + extensionLeadMs(this.#timeoutMs) / 2;
      const short = messages.filter((m) => {
        const h = this.#held.get(m);
        return h !== undefined && h.visibleAt < sureAt;
      });
      if (short.length > 0) {
        this.#deps.logger.error(
          {
            queue: this.#queue.name,
            messageIds: short.map((m) => messageIdOf(m)),
            remainingMs: Math.min(...short.map((m) => this.#held.get(m)!.visibleAt)) - this.#deps.now(),
          },
          'visibility is about to run out with no extension confirmed; the lease of these messages lapsed',
        );
        this.#lapse(short.map((m) => this.#held.get(m)!));
      }
    }
    return this.lapsedOf(messages);
  }

  /** The messages of `messages` whose lease has lapsed. */
  lapsedOf(messages: readonly Message[]): Message[] {
    const lapsed = this.#lapsed;
    return lapsed ? messages.filter((m) => lapsed.has(m)) : [];
  }

  /**
   * Stops extending these messages (they are settled or left to return); resolves once no extension of them can land
   * any more. Not an async function: it runs two or three times per message, and most leases never extend.
   */
  stop(messages: readonly Message[]): Promise<void> {
    for (const m of messages) this.#drop(m);
    if (this.#held.size === 0) this.#clock.remove(this.#due);
    return this.#settled();
  }

  /** Ends the lease of every message. Not an async function either: it runs for every batch. */
  end(): Promise<void> {
    this.#over = true;
    this.#ended?.abort();
    this.#clock.remove(this.#due);
    // Not clear(): it makes a new table, even for an empty map.
    this.#held = NONE;
    return this.#settled();
  }

  /** Resolves once the extension calls on their way now have ended. */
  #settled(): Promise<void> {
    if (!this.#calls || this.#calls.size === 0) return SETTLED;
    return Promise.allSettled([...this.#calls]).then(() => undefined);
  }

  /** Stops holding `m`; the last one leaves the map as it is, for NONE. */
  #drop(m: Message): void {
    const held = this.#held;
    if (held.size !== 1) held.delete(m);
    else if (held.has(m)) this.#held = NONE;
  }

  /** These held messages are no longer ours: stop extending them, remember them and report them once. */
  #lapse(lost: readonly Held[]): void {
    if (lost.length === 0) return;
    const lapsed = (this.#lapsed ??= new Set());
    for (const h of lost) {
      this.#drop(h.message);
      lapsed.add(h.message);
    }
    this.#deps.onLapse?.(
      this.#queue,
      lost.map((h) => h.message),
    );
  }

  /** A timer for leases to share (LeaseDeps.clock): one timer, whatever the number of leases, on the clock `now`. */
  static clock(now: () => number): LeaseClock {
    return new TimerHeap<LeaseDue>(now, (due) => void due.lease.#extend());
  }

  #schedule(): void {
    if (this.#held.size === 0 || this.#over) {
      this.#clock.remove(this.#due);
      return;
    }
    const leadMs = extensionLeadMs(this.#timeoutMs);
    // A loop, not Math.min over a copy: this runs for every batch received.
    let first = Infinity;
    for (const h of this.#held.values()) first = Math.min(first, h.visibleAt);
    this.#clock.set(this.#due, first - leadMs);
  }

  async #extend(): Promise<void> {
    const all = [...this.#held.values()];
    const chunks: Held[][] = [];
    for (let i = 0; i < all.length; i += SQS_BATCH_MAX) chunks.push(all.slice(i, i + SQS_BATCH_MAX));
    this.#extending = true;
    try {
      await Promise.all(chunks.map((chunk) => this.#extendChunk(chunk)));
    } finally {
      this.#extending = false;
    }
    this.#schedule();
  }

  async #extendChunk(chunk: readonly Held[]): Promise<void> {
    const { source, logger, now, random } = this.#deps;
    for (let attempt = 0; ; attempt++) {
      const live = chunk.filter((h) => this.#held.get(h.message) === h);
      if (live.length === 0 || this.#over) return;
      const started = now();
      // Entry ids are positions: one receive may return two copies of a message (standard queues).
      const entries = live.map((h, i) => ({ id: String(i), receiptHandle: h.message.ReceiptHandle ?? '' }));
      const deadline = new AbortController();
      const timer = setTimeout(
        () => deadline.abort(new DOMException('no answer before the extension deadline', 'TimeoutError')),
        extensionDeadlineMs(this.#timeoutMs),
      );
      const call = source.changeVisibility(this.#queue, entries, this.#timeoutMs / 1000, deadline.signal);
      (this.#calls ??= new Set()).add(call);
      const outcome = await call.then(
        (failures) => ({ failures }),
        (err: unknown) => ({ err }),
      );
      clearTimeout(timer);
      this.#calls?.delete(call);
      // Messages stopped while the call was on its way (settled meanwhile) are no longer ours to report on.
      const held = (h: Held) => this.#held.get(h.message) === h;
      if ('failures' in outcome) {
        const refused = new Map(outcome.failures.map((f) => [Number(f.id), f]));
        const failed: { id: string; code: string; message: string }[] = [];
        const lost: Held[] = [];
        live.forEach((h, i) => {
          const f = refused.get(i);
          if (!f) h.visibleAt = started + this.#timeoutMs;
          else if (held(h)) {
            lost.push(h);
            failed.push({ id: h.message.MessageId ?? f.id, code: f.code, message: f.message });
          }
        });
        if (failed.length > 0) {
          logger.warn(
            { queue: this.#queue.name, failed },
            'SQS refused to extend the visibility of some messages; no longer extending those',
          );
          this.#lapse(lost);
        }
        return;
      }
      const still = live.filter(held);
      if (still.length === 0) return;
      const e = callErrorOf(outcome.err);
      const delayMs = backoffMs(attempt, 100, 1_000, random);
      const expiresAt = Math.min(...still.map((h) => h.visibleAt));
      const messageIds = still.map((h) => messageIdOf(h.message));
      if (now() + delayMs + RETRY_MARGIN_MS >= expiresAt) {
        logger.error(
          { queue: this.#queue.name, messageIds, attempt, err: { code: e.code, message: e.message } },
          'could not extend visibility before it ran out; these messages may be delivered again',
        );
        this.#lapse(still);
        return;
      }
      logger.warn(
        { queue: this.#queue.name, messageIds, attempt, delayMs, err: { code: e.code, message: e.message } },
        'ChangeMessageVisibilityBatch failed; retrying while visibility remains',
      );
      if (this.#over) return;
      await sleep(delayMs, (this.#ended ??= new AbortController()).signal);
    }
  }
}
