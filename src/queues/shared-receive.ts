import type { Message } from '@aws-sdk/client-sqs';
import type { EntryFailure, MessageSource, ReceiptEntry, ReceiveOptions, ResolvedQueue } from './sqs-source.ts';

/** SQS returns at most 10 messages per ReceiveMessage. */
const SQS_RECEIVE_MAX = 10;

interface Waiter {
  readonly max: number;
  readonly startBefore: AbortSignal | undefined;
  readonly visibilityTimeoutSec: number | undefined;
  resolve(messages: Message[]): void;
  reject(err: unknown): void;
}

/**
 * Lets worker loops that are ready at the same moment share one short ReceiveMessage per queue: while a
 * short receive on a queue is in flight, other loops asking the same queue wait for the next one, which then
 * asks for all of them at once (up to 10 messages, never more than the waiting loops will take). Each SDK
 * call costs CPU, so under load this cuts receives per message without holding any message that no loop is
 * ready to invoke. Long polls are passed through: each covers a queue on its own, and its loop is idle.
 * FIFO queues are passed through too: one receive can return several messages of one message group, and
 * handing them to different loops would run them in parallel, out of group order. Separate receives keep
 * the order, because SQS returns nothing more of a group while one of its messages is in flight.
 */
export class SharedReceiveSource implements MessageSource {
  readonly #inner: MessageSource;
  readonly #waiting = new Map<ResolvedQueue, Waiter[]>();
  readonly #busy = new Set<ResolvedQueue>();

  constructor(inner: MessageSource) {
    this.#inner = inner;
  }

  receive(queue: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]> {
    if (options.waitSec > 0 || queue.fifo) return this.#inner.receive(queue, options, signal);
    return new Promise((resolve, reject) => {
      let list = this.#waiting.get(queue);
      if (!list) this.#waiting.set(queue, (list = []));
      list.push({
        max: options.max,
        startBefore: options.startBefore,
        visibilityTimeoutSec: options.visibilityTimeoutSec,
        resolve,
        reject,
      });
      if (!this.#busy.has(queue)) this.#receiveFor(queue);
    });
  }

  #receiveFor(queue: ResolvedQueue): void {
    const list = this.#waiting.get(queue) ?? [];
    // Loops that stopped while they waited for the call in flight get nothing: a receive sent for them now
    // would hand messages to a daemon that is draining.
    for (let i = list.length - 1; i >= 0; i--) {
      const w = list[i]!;
      if (w.startBefore?.aborted) {
        list.splice(i, 1);
        w.resolve([]);
      }
    }
    // Take waiters in arrival order while their requests fit in one call.
    const group: Waiter[] = [];
    let total = 0;
    while (
      list.length > 0 &&
      total + list[0]!.max <= SQS_RECEIVE_MAX &&
      (group.length === 0 || list[0]!.visibilityTimeoutSec === group[0]!.visibilityTimeoutSec)
    ) {
      const w = list.shift()!;
      group.push(w);
      total += w.max;
    }
    if (group.length === 0) return;
    this.#busy.add(queue);
    this.#inner
      .receive(queue, { max: total, waitSec: 0, visibilityTimeoutSec: group[0]!.visibilityTimeoutSec })
      .then(
        (messages) => {
          let next = 0;
          for (const w of group) {
            w.resolve(messages.slice(next, next + w.max));
            next += w.max;
          }
        },
        (err: unknown) => {
          for (const w of group) w.reject(err);
        },
      )
      .finally(() => {
        this.#busy.delete(queue);
        if ((this.#waiting.get(queue)?.length ?? 0) > 0) this.#receiveFor(queue);
      });
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
