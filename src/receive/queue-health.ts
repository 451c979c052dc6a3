import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { callErrorOf } from '../core/errors.ts';
import type { MessageSource, ReceiveOptions, ResolvedQueue } from '../core/queue.ts';
import { backoffMs } from '../util/backoff.ts';
import type { Random } from './queue-order.ts';

/**
 * Back-off of a queue whose receive failed. Transient failures (5xx, throttling, network, a hung call) are
 * capped at 1 s so that dispatching resumes within about a second of SQS answering again; a queue that is
 * missing or forbidden is retried less often, since that takes someone to fix it.
 */
const TRANSIENT_BACKOFF = { baseMs: 100, capMs: 1_000 };
const FATAL_BACKOFF = { baseMs: 1_000, capMs: 20_000 };

/** What it receives with; `now` is monotonic (src/util/clock.ts): back-offs must not stall when the wall clock steps back. */
export interface QueueHealthDeps {
  readonly source: MessageSource;
  readonly logger: Logger;
  readonly random: Random;
  readonly now: () => number;
}

interface Health {
  failures: number;
  retryAt: number;
  since: number;
  /** The queue left the route (Receiver.setQueues): never received from again, unless it comes back. */
  retired: boolean;
}

/**
 * Every ReceiveMessage of a route goes through here: a failed one puts its queue in back-off (shared by all loops,
 * so one broken queue never stalls the others) and is logged sparingly; the first answer after an outage clears it.
 * It also counts the receives on their way, for quiet().
 */
export class QueueHealth {
  readonly #queues: ResolvedQueue[];
  readonly #deps: QueueHealthDeps;
  readonly #health: Health[];
  /** Receives on their way, and what waits for there to be none (quiet()). */
  #open = 0;
  readonly #quietWaiters: (() => void)[] = [];

  constructor(queues: readonly ResolvedQueue[], deps: QueueHealthDeps) {
    this.#queues = [...queues];
    this.#deps = deps;
    this.#health = queues.map(() => ({ failures: 0, retryAt: 0, since: 0, retired: false }));
  }

  /**
   * Queue `index` is `queue` from now on (a new index: a queue that joined the route), or left the route
   * (`retired`): a retired queue is never due, so it is never drawn, polled or received from again.
   */
  set(index: number, queue: ResolvedQueue, retired: boolean): void {
    this.#queues[index] = queue;
    const health = (this.#health[index] ??= { failures: 0, retryAt: 0, since: 0, retired });
    health.retired = retired;
  }

  /** When queue `index` may be received from again (0: now; Infinity: it left the route). */
  retryAt(index: number): number {
    const health = this.#health[index]!;
    return health.retired ? Infinity : health.retryAt;
  }

  /** When the first queue's back-off ends (Infinity: the route has no queue now). */
  firstRetryAt(): number {
    let at = Infinity;
    for (const h of this.#health) if (!h.retired && h.retryAt < at) at = h.retryAt;
    return at;
  }

  /**
   * Whether at least one queue is not backing off after a failed receive; true without any queue (a route whose
   * prefix or tag matches nothing yet is waiting, not failing).
   */
  get anyHealthy(): boolean {
    const now = this.#deps.now();
    let any = false;
    for (const h of this.#health) {
      if (h.retired) continue;
      if (h.retryAt <= now) return true;
      any = true;
    }
    return !any;
  }

  /**
   * Resolves once no receive of this receiver is on its way. A drain releases a throttled batch only then: a long
   * poll still open at the stop would otherwise receive what was just released, be throttled in its turn and
   * release it again, one more receive count per loop, enough to walk messages into a DLQ on one SIGTERM. After
   * a stop no receive starts, so this waits at most one long poll and its deadline.
   */
  quiet(): Promise<void> {
    if (this.#open === 0) return Promise.resolve();
    return new Promise((resolve) => this.#quietWaiters.push(resolve));
  }

  /**
   * One ReceiveMessage. Failures are recorded in the queue's health and come back as undefined. Not async itself:
   * #receiveOnce counts the receive as ended, so a receive makes one async step, not two.
   */
  receive(index: number, options: ReceiveOptions): Promise<Message[] | undefined> {
    this.#open++;
    return this.#receiveOnce(index, options);
  }

  async #receiveOnce(index: number, options: ReceiveOptions): Promise<Message[] | undefined> {
    const queue = this.#queues[index]!;
    const health = this.#health[index]!;
    try {
      const messages = await this.#deps.source.receive(queue, options);
      if (health.failures > 0) {
        this.#deps.logger.info(
          { queue: queue.name, failures: health.failures, outageMs: this.#deps.now() - health.since },
          'ReceiveMessage works again',
        );
        health.failures = 0;
        health.retryAt = 0;
      }
      return messages;
    } catch (err) {
      const now = this.#deps.now();
      // Other loops may fail on the same queue at the same moment: count one failure per back-off window.
      if (now < health.retryAt) return undefined;
      const e = callErrorOf(err);
      const { baseMs, capMs } = e.kind === 'fatal' ? FATAL_BACKOFF : TRANSIENT_BACKOFF;
      if (health.failures === 0) health.since = now;
      const delayMs = backoffMs(health.failures++, baseMs, capMs, this.#deps.random);
      health.retryAt = now + delayMs;
      // Logged at the 1st, 2nd, 4th, 8th... failure: an outage is visible at once without a line per second.
      if ((health.failures & (health.failures - 1)) === 0) {
        this.#deps.logger[e.kind === 'fatal' ? 'error' : 'warn'](
          { queue: queue.name, err: { code: e.code, message: e.message }, attempt: health.failures, delayMs },
          e.code === 'TimeoutError'
            ? 'ReceiveMessage got no answer before its deadline; skipping this queue while backing off'
            : 'ReceiveMessage failed; skipping this queue while backing off',
        );
      }
      return undefined;
    } finally {
      if (--this.#open === 0) for (const wake of this.#quietWaiters.splice(0)) wake();
    }
  }
}
