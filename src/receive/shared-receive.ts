import type { Message } from '@aws-sdk/client-sqs';
import type { EntryFailure, MessageSource, ReceiptEntry, ReceiveOptions, ResolvedQueue } from '../core/queue.ts';
import { SQS_RECEIVE_MAX } from '../core/queue.ts';

/** Long polls in flight per queue: enough to take a burst of 100 messages in one round trip. */
const MAX_LONG_POLLS = 10;

const demand = (waiting: readonly Waiter[]) => waiting.reduce((sum, w) => sum + w.max, 0);

interface Waiter {
  readonly max: number;
  readonly startBefore: AbortSignal | undefined;
  /** When the loop's own long poll would have ended (performance.now() ms). */
  readonly waitEndsAt: number;
  resolve(messages: Message[]): void;
  reject(err: unknown): void;
}

/** The loops waiting to receive from one queue with one wait time and visibility timeout, and its calls in flight. */
interface Channel {
  /** Its key in the source's channels. */
  readonly key: string;
  readonly waiting: Waiter[];
  inFlight: number;
}

/**
 * Lets worker loops share ReceiveMessage calls: each call costs CPU, so under load this cuts receives per
 * message without holding any message that no loop is ready to invoke (a call never asks for more than the
 * loops it answers will take, and at most 10).
 * - Short receives: while one is in flight on a queue, other loops asking the same queue wait for the next one,
 *   which asks for all of them at once. When a full call's worth of loops (10 messages) is waiting, it is sent
 *   at once without waiting for the one in flight: with thousands of loops finishing every second, one call at a
 *   time would cap the receive rate at 10 messages per round trip.
 * - Long polls (loops gathering a batch over a window; idle loops share one poll per queue before it comes here,
 *   src/receive/idle-polls.ts): each caller has its own, up to 10 per queue, which take a burst of up to 100
 *   messages in one round trip. Loops beyond that wait for one of them to end: if it brought messages, the
 *   next long poll is sent for them at once; if it came back empty, the loops whose own wait is over by then
 *   get nothing, as their own poll would have, and the others keep waiting (so a loop waits at most about twice
 *   its own wait). A thousand gathering loops then make about 10 long polls per --poll-for instead of a thousand.
 * FIFO queues are passed through: one receive can return several messages of one message group, and handing
 * them to different loops would run them in parallel, out of group order. Separate receives keep the order,
 * because SQS returns nothing more of a group while one of its messages is in flight.
 * A loop whose `startBefore` aborts while it waits gets nothing at once: a receive sent for it now would hand
 * messages to a daemon that is draining.
 */
export class SharedReceiveSource implements MessageSource {
  readonly #inner: MessageSource;
  /**
   * The channels by queue, wait time and visibility timeout, in one map (not a map per queue: 10,000 idle queues):
   * each kept only while a loop waits in it or a call of it is in flight (every queue's first idle poll has a wait
   * of its own, src/receive/idle-polls.ts).
   */
  readonly #channels = new Map<string, Channel>();
  /** Each queue's number in the channels' keys: queues are told apart as objects, as callers hand them in. */
  readonly #queueIds = new WeakMap<ResolvedQueue, number>();
  #nextQueueId = 0;
  /**
   * The startBefore signals listened to: one listener per signal for the source's life, not one per waiter or
   * channel (every loop of a dispatcher passes the same one, and a listener added and removed per receive was
   * garbage per message).
   */
  readonly #watched = new WeakSet<AbortSignal>();

  constructor(inner: MessageSource) {
    this.#inner = inner;
  }

  receive(queue: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]> {
    if (queue.fifo) return this.#inner.receive(queue, options, signal);
    const { startBefore } = options;
    if (startBefore?.aborted) return Promise.resolve([]);
    const channel = this.#channel(queue, options);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        max: options.max,
        startBefore,
        waitEndsAt: performance.now() + options.waitSec * 1000,
        resolve,
        reject,
      };
      if (startBefore && !this.#watched.has(startBefore)) {
        this.#watched.add(startBefore);
        startBefore.addEventListener('abort', () => this.#stopped(startBefore), { once: true });
      }
      channel.waiting.push(waiter);
      this.#send(queue, channel, options);
    });
  }

  #channel(queue: ResolvedQueue, options: ReceiveOptions): Channel {
    let id = this.#queueIds.get(queue);
    if (id === undefined) this.#queueIds.set(queue, (id = this.#nextQueueId++));
    const key = `${id}/${options.waitSec}/${options.visibilityTimeoutSec ?? ''}`;
    let channel = this.#channels.get(key);
    if (!channel) this.#channels.set(key, (channel = { key, waiting: [], inFlight: 0 }));
    return channel;
  }

  /** A startBefore signal aborted: the loops still waiting with it get nothing; those sent keep their call's answer. */
  #stopped(startBefore: AbortSignal): void {
    for (const channel of this.#channels.values()) {
      this.#answerWaiting(
        channel,
        (w) => w.startBefore === startBefore,
        (w) => w.resolve([]),
      );
      this.#forgetIfUnused(channel);
    }
  }

  /** Drops a channel nobody waits in and no call of which is in flight. */
  #forgetIfUnused(channel: Channel): void {
    if (channel.waiting.length > 0 || channel.inFlight > 0) return;
    if (this.#channels.get(channel.key) === channel) this.#channels.delete(channel.key);
  }

  /** Sends what the channel's rule allows now: see the class comment. */
  #send(queue: ResolvedQueue, channel: Channel, options: ReceiveOptions): void {
    const { waitSec, visibilityTimeoutSec } = options;
    const mayStart = () =>
      waitSec > 0 ? channel.inFlight < MAX_LONG_POLLS : channel.inFlight === 0 || demand(channel.waiting) >= SQS_RECEIVE_MAX;
    while (channel.waiting.length > 0 && mayStart()) {
      // Take waiters in arrival order while their requests fit in one call.
      const group: Waiter[] = [];
      let total = 0;
      while (channel.waiting.length > 0 && total + channel.waiting[0]!.max <= SQS_RECEIVE_MAX) {
        const w = channel.waiting.shift()!;
        group.push(w);
        total += w.max;
      }
      if (group.length === 0) return;
      channel.inFlight++;
      this.#inner.receive(queue, { max: total, waitSec, visibilityTimeoutSec }).then(
        (messages) => {
          let next = 0;
          for (const w of group) {
            w.resolve(messages.slice(next, next + w.max));
            next += w.max;
          }
          // An empty long poll answers the loops whose own wait is over: nothing came while they waited.
          if (waitSec > 0 && messages.length === 0) {
            const now = performance.now();
            this.#answerWaiting(
              channel,
              (w) => w.waitEndsAt <= now,
              (w) => w.resolve([]),
            );
          }
          this.#done(queue, channel, options);
        },
        (err: unknown) => {
          for (const w of group) w.reject(err);
          if (waitSec > 0)
            this.#answerWaiting(
              channel,
              () => true,
              (w) => w.reject(err),
            );
          this.#done(queue, channel, options);
        },
      );
    }
  }

  /** Answers (and stops waiting) the waiters `which` selects, keeping the others in order. */
  #answerWaiting(channel: Channel, which: (w: Waiter) => boolean, answer: (w: Waiter) => void): void {
    const answered: Waiter[] = [];
    const kept: Waiter[] = [];
    for (const w of channel.waiting) (which(w) ? answered : kept).push(w);
    if (answered.length === 0) return;
    channel.waiting.splice(0, channel.waiting.length, ...kept);
    for (const w of answered) answer(w);
  }

  #done(queue: ResolvedQueue, channel: Channel, options: ReceiveOptions): void {
    channel.inFlight--;
    this.#send(queue, channel, options);
    this.#forgetIfUnused(channel);
  }

  deleteBatch(queue: ResolvedQueue, entries: readonly ReceiptEntry[], signal?: AbortSignal): Promise<EntryFailure[]> {
    return this.#inner.deleteBatch(queue, entries, signal);
  }

  changeVisibility(
    queue: ResolvedQueue,
    entries: readonly ReceiptEntry[],
    timeoutSec: number,
    signal?: AbortSignal,
  ): Promise<EntryFailure[]> {
    return this.#inner.changeVisibility(queue, entries, timeoutSec, signal);
  }
}
