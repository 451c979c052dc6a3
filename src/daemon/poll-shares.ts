import type { PollShare } from '../receive/idle-polls.ts';

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
