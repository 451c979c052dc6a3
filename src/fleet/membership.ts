// Membership: which members of the fleet are live, decided the Kinesis Client Library's way. Every member bumps a
// heartbeat counter in its own item; each observer notes, on its own monotonic clock, when it last saw a member's
// counter change, and a member is live while that was less than `expiryMs` ago. No machine's wall clock is ever
// compared with another's: a replica whose clock is minutes off is judged by the same rule as any other.

import type { FleetItem } from '../core/fleet-store.ts';

/** One member's item as one query of the fleet's table returns it (src/core/fleet-store.ts). */
export type MemberItem = FleetItem;

/** What one observer remembers of one member. */
interface Sighting {
  readonly heartbeat: number;
  /** When this observer first saw that counter value, on its own monotonic clock. */
  readonly changedAt: number;
}

/** The live members after a read: their ids in code-unit order, self always among them, and their items. */
export interface LiveSet {
  readonly ids: readonly string[];
  /** The live members' items as read; self is in `ids` even when its own item was not in the read. */
  readonly items: readonly MemberItem[];
}

/**
 * How long the TTL waits past a member's last heartbeat before its item may be deleted: an hour. DynamoDB
 * deletes an expired item "within a few days" and moto never does, so the TTL only keeps a table of crashed
 * members from growing; liveness never waits for it. Generous, so that a member whose wall clock runs up to an
 * hour slow never has its own live item deleted under it.
 */
export const MEMBER_TTL_MARGIN_SECONDS = 3600;

/** The expiry field a member writes into its item at the wall-clock time `nowEpochMs`: for the TTL only. */
export function memberTtlEpochSeconds(nowEpochMs: number): number {
  return Math.ceil(nowEpochMs / 1000) + MEMBER_TTL_MARGIN_SECONDS;
}

/** The observer's settings: who it is, how long a silent counter stays live, and its monotonic clock. */
export interface MembershipOptions {
  /** This replica's own member id: always live to itself. */
  readonly self: string;
  /** A member is live while its counter changed within this many ms of the observer's clock. */
  readonly expiryMs: number;
  /** The observer's monotonic clock in ms (util/clock.ts's monotonicNow), never the wall clock. */
  readonly now: () => number;
}

/**
 * One observer's view of the fleet. It keeps, per member, the counter it last saw and when it saw it change; it
 * runs no timer and does no I/O: the executor hands it each query's items (observe) and asks it between reads
 * (live).
 *
 * The rules:
 * - a member is live while its counter changed less than `expiryMs` ago on this observer's clock; a member seen
 *   for the first time counts as just changed (the observer cannot yet tell a stale item from a live one), as
 *   does one that comes back with a different counter after it had expired;
 * - a member whose item is not in the latest read is gone at once: it deleted its item on a graceful exit (or
 *   the TTL did), and is forgotten, so coming back later is a first sighting;
 * - self is always live: a replica polls whatever it owns even while its own write has not yet been read back;
 * - the expiry field in an item is never looked at, so a wrong wall clock anywhere changes nothing.
 *
 * A crashed member is therefore dropped between `expiryMs` and `expiryMs` plus one read interval after its
 * last heartbeat (the time until the observer's next read), by every observer on its own clock.
 */
export class Membership {
  readonly #self: string;
  readonly #expiryMs: number;
  readonly #now: () => number;
  readonly #seen = new Map<string, Sighting>();
  #items: readonly MemberItem[] = [];
  readonly #startedAt: number;

  constructor(options: MembershipOptions) {
    if (!(Number.isFinite(options.expiryMs) && options.expiryMs > 0)) {
      throw new RangeError(`the membership expiry must be a positive number of ms, got ${options.expiryMs}`);
    }
    this.#self = options.self;
    this.#expiryMs = options.expiryMs;
    this.#now = options.now;
    this.#startedAt = options.now();
  }

  /** The items of one query of the fleet's table (all the members it returned): the live set as of now. */
  observe(items: readonly MemberItem[]): LiveSet {
    const now = this.#now();
    const latest = new Map<string, MemberItem>();
    for (const item of items) latest.set(item.id, item);
    for (const id of [...this.#seen.keys()]) if (!latest.has(id)) this.#seen.delete(id);
    for (const item of latest.values()) {
      const before = this.#seen.get(item.id);
      if (before === undefined || before.heartbeat !== item.heartbeat)
        this.#seen.set(item.id, { heartbeat: item.heartbeat, changedAt: now });
    }
    this.#items = [...latest.values()];
    return this.#liveAt(now);
  }

  /** The live set as of now, from the latest read: a member whose counter went silent drops out as time passes. */
  live(): LiveSet {
    return this.#liveAt(this.#now());
  }

  /**
   * Whether this observer has watched for at least `expiryMs`. Before then a crashed member's leftover item is
   * indistinguishable from a live one (both are first sightings), so its queues may be owned by a member that is
   * gone: a caller that must never leave a queue unpolled polls all of them until settled.
   */
  settled(): boolean {
    return this.#now() - this.#startedAt >= this.#expiryMs;
  }

  #liveAt(now: number): LiveSet {
    const items = this.#items.filter((item) => {
      if (item.id === this.#self) return true;
      const sighting = this.#seen.get(item.id);
      return sighting !== undefined && now - sighting.changedAt < this.#expiryMs;
    });
    const ids = new Set(items.map((item) => item.id));
    ids.add(this.#self);
    return { ids: [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), items };
  }
}
