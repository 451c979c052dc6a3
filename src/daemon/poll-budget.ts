import { CLOUDWATCH_SOCKETS, socketsPerHost } from '../aws/adapters.ts';
import { HTTP_MAX_CONNECTIONS, RESERVED_FDS } from '../operator/http/fd-budget.ts';
import type { PollShare } from '../receive/idle-polls.ts';

/**
 * How many idle long polls the daemon may keep in flight: one per queue (src/receive/idle-polls.ts), as far as
 * the open-file limit allows. Every poll in flight holds one SQS socket, that is one file descriptor, besides
 * the loops' sockets (one SQS and one Lambda each, plus spares), the HTTP server's share and the reserve; at least
 * one, even when the limit does not cover the loops' own sockets (the start-up then warns of the shortfall, counting
 * that one poll: src/operator/http/fd-budget.ts). `openFileLimit` undefined (not Linux, unreadable): no cap. The
 * number of queues plays no part: queues found by prefix or tag come and go while the daemon runs (PollShares
 * divides the budget among the routes by their queues of the moment).
 */
export function pollBudget(opts: { openFileLimit: number | undefined; loops: number; httpServer: boolean }): number {
  const { openFileLimit, loops, httpServer } = opts;
  if (openFileLimit === undefined) return Infinity;
  const others = RESERVED_FDS + (httpServer ? HTTP_MAX_CONNECTIONS + 1 : 0) + CLOUDWATCH_SOCKETS + 2 * socketsPerHost(loops);
  return Math.max(1, openFileLimit - others);
}

/**
 * The poll budget shared by the routes, each its share by the queues it has now (a route that finds queues by
 * prefix or tag tells its share how many it found, Receiver.setQueues): while all the routes' queues fit the
 * budget, every queue gets its poll; beyond it, each route gets the budget in proportion to its queues, at least
 * one, and its queues take turns. `onShort` is told when the queues outgrow the budget (once per crossing).
 */
export class PollShares {
  readonly #budget: number;
  readonly #onShort: ((short: { queues: number; polls: number }) => void) | undefined;
  readonly #queues: number[] = [];
  #total = 0;
  #short = false;

  constructor(budget: number, onShort?: (short: { queues: number; polls: number }) => void) {
    this.#budget = budget;
    this.#onShort = onShort;
  }

  /** The whole budget. */
  get budget(): number {
    return this.#budget;
  }

  /** A route's share, which follows the number of queues it is told it polls. */
  route(): PollShare {
    const index = this.#queues.push(0) - 1;
    return {
      set: (queues) => this.#set(index, queues),
      max: () => this.#shareOf(index),
    };
  }

  #set(index: number, queues: number): void {
    this.#total += queues - this.#queues[index]!;
    this.#queues[index] = queues;
    const short = this.#total > this.#budget;
    if (short && !this.#short) this.#onShort?.({ queues: this.#total, polls: this.#budget });
    this.#short = short;
  }

  #shareOf(index: number): number {
    const queues = this.#queues[index]!;
    if (this.#total <= this.#budget) return Math.max(1, queues);
    return Math.max(1, Math.min(queues, Math.floor((this.#budget * queues) / this.#total)));
  }
}
