// The fleet's executor: this replica's membership, run on a timer. Every heartbeat it writes its own item (a
// conditional PutItem) and reads the fleet's items (one Query), hands them to Membership (src/fleet/membership.ts),
// and places the queues over the live members (src/fleet/placement.ts). The steps see the outcome through one
// narrow view: whether this replica receives from a queue now (serves) and its share of a fleet budget (share).
//
// It fails safe. Until it has watched the fleet for a whole expiry (a crashed member's leftover item looks live
// until then), and whenever no heartbeat round succeeded for a whole expiry (DynamoDB unreachable, throttled or
// refusing), it serves every queue: costlier, never blind. It says so once per change, in a log line and in
// `mode`. Its DynamoDB calls go through their own client (src/aws/fleet-store.ts), so a starved SQS or Lambda
// path never makes a replica look dead, and a starved DynamoDB never stops a message.
import type { Logger } from 'pino';
import { AwsCallError } from '../core/errors.ts';
import { FLEET_BUSY_MAX, type FleetItem, type FleetStore } from '../core/fleet-store.ts';
import { fleetShare } from './fleet-share.ts';
import { Membership, memberTtlEpochSeconds, type LiveSet } from './membership.ts';
import { EXPIRY_HEARTBEATS } from './options.ts';
import { ownedQueues } from './placement.ts';

/**
 * - `joining`: watching the fleet for its first expiry; serves every queue.
 * - `shared`: serves the queues it owns and the busy ones.
 * - `fallen-back`: no heartbeat round succeeded for an expiry; serves every queue.
 * - `left`: its item is deleted (a graceful exit); serves every queue until its loops stop.
 */
export type FleetMode = 'joining' | 'shared' | 'fallen-back' | 'left';

/** What the steps see of the fleet. */
export interface FleetView {
  /** Whether this replica receives from the queue with key `key` now (owned, busy, or not shared). */
  serves(key: string): boolean;
  /** This replica's part of `total` invocations at once among the live members, at most `cap` (none by default). */
  share(total: number, cap?: number): number;
}

export interface FleetMemberOptions {
  readonly store: FleetStore;
  /** This replica's member id (unique: host, pid and random bytes). */
  readonly self: string;
  readonly heartbeatMs: number;
  /** The monotonic clock (util/clock.ts): liveness is measured on it only. */
  readonly now: () => number;
  /** The wall clock (epoch ms), for the item's TTL field only. */
  readonly wallNow: () => number;
  /** Every queue key this replica's routes receive from now: what is placed. */
  readonly queues: () => readonly string[];
  /** The queue keys this replica found busy lately (a full receive): advertised in its item. */
  readonly busy: () => readonly string[];
  /** The view changed (mode, members or busy queues): the receivers look again, the gates re-read their share. */
  readonly onChange: () => void;
  readonly logger: Logger;
}

/** What the status page and metrics show. */
export interface FleetStatus {
  readonly mode: FleetMode;
  readonly self: string;
  /** The live members' ids, self included. */
  readonly members: readonly string[];
  /** Queues this replica owns (polls while idle) of the queues placed. */
  readonly owned: number;
  readonly queues: number;
  /** Queues some member advertises as busy. */
  readonly busy: number;
}

/**
 * A joining member's share of a fleet budget is 0 for this many heartbeats from its start: by then every peer's
 * heartbeat read has found its item and lowered its own share (a peer reads once a heartbeat, plus the round's
 * time), so the members together never hold more than the budget while one joins. Leaving and dying only raise
 * the others' shares, after the fact, so they need no such wait.
 */
const BUDGET_AFTER_HEARTBEATS = 2;

export class FleetMember implements FleetView {
  readonly #o: FleetMemberOptions;
  readonly #expiryMs: number;
  #self: string;
  #membership: Membership;
  #mode: FleetMode = 'joining';
  /** The counter this replica's item holds as last read (undefined: no item yet). */
  #written: number | undefined;
  /** When a whole heartbeat round (write and read) last succeeded, on the monotonic clock. */
  #lastRound: number;
  #live: LiveSet;
  /** The queues placed at the last round, and the ones of them this replica owns. */
  #placed = new Set<string>();
  #owned = new Set<string>();
  #busy = new Set<string>();
  #signature = '';
  #timer: NodeJS.Timeout | undefined;
  /** Looks for an expiry without a round every heartbeat, also while a round hangs on a table that never answers. */
  #watchdog: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  #lastError = '';
  #leaving: Promise<void> | undefined;
  /**
   * Until when a joining member takes no part of a fleet budget, on the monotonic clock: its peers count it only
   * once a read of theirs finds its item, up to a heartbeat after its first write, and until then they still hold
   * the whole budget between them. Undefined before the first round.
   */
  #budgetFrom: number | undefined;
  /** The first round runs (start()): a refusal then is kept for start() to return, not logged. */
  #starting = false;
  /** The first round's refusal (its line), and whether its PutItem had landed before the Query was refused. */
  #refused: { readonly line: string; readonly written: boolean } | undefined;

  constructor(options: FleetMemberOptions) {
    this.#o = options;
    this.#expiryMs = options.heartbeatMs * EXPIRY_HEARTBEATS;
    this.#self = options.self;
    this.#membership = new Membership({ self: options.self, expiryMs: this.#expiryMs, now: options.now });
    this.#lastRound = options.now();
    this.#live = { ids: [options.self], items: [] };
  }

  get mode(): FleetMode {
    return this.#mode;
  }

  /**
   * The first round, awaited, then one every heartbeat. A first round DynamoDB refuses (access denied to PutItem or
   * Query, a table deleted since DescribeTable: what no retry changes) starts nothing, deletes the item if its write
   * landed, and comes back as the call's one line, for the start-up to stop on (exit 1). One that cannot reach the
   * table or is throttled past its retries is any failed round: the member serves every queue and tries again.
   */
  async start(): Promise<string | undefined> {
    this.#watchdog = setInterval(() => this.checkExpiry(), this.#o.heartbeatMs).unref();
    this.#starting = true;
    await this.beat();
    this.#starting = false;
    const refused = this.#refused;
    if (refused === undefined) {
      this.#schedule();
      return undefined;
    }
    clearInterval(this.#watchdog);
    this.#watchdog = undefined;
    if (refused.written) {
      // Left in the table, its peers would count it live for an expiry and place queues on a replica that is gone.
      await this.#o.store.leave(this.#self).catch(() => {});
    }
    return refused.line;
  }

  /**
   * Falls back (serves every queue) once no round has succeeded for an expiry: run by the watchdog every heartbeat
   * and after each failed round, so a call that hangs until its timeouts cannot hold a replica in `shared` mode past
   * the expiry its peers use to drop it. Tests call it on their own clock.
   */
  checkExpiry(): void {
    if (this.#mode === 'left' || this.#mode === 'fallen-back' || this.#o.now() - this.#lastRound < this.#expiryMs) return;
    this.#setMode(
      'fallen-back',
      `no fleet heartbeat succeeded for ${this.#expiryMs} ms: polling every queue of this replica until the table answers again`,
      this.#lastError === '' ? 'no answer yet' : this.#lastError,
    );
    this.#changed();
  }

  /** One heartbeat round now (the timer's; tests drive it on a clock of their own). Never throws. */
  beat(): Promise<void> {
    this.#budgetFrom ??= this.#o.now() + BUDGET_AFTER_HEARTBEATS * this.#o.heartbeatMs;
    this.#round = this.#heartbeatRound().catch((err: unknown) => {
      this.#o.logger.error({ err }, 'fleet heartbeat round failed');
    });
    return this.#round;
  }

  serves(key: string): boolean {
    if (this.#mode !== 'shared') return true;
    // A queue found since the last round is not placed yet: served until it is.
    return this.#owned.has(key) || this.#busy.has(key) || !this.#placed.has(key);
  }

  share(total: number, cap = Infinity): number {
    if (this.#budgetHeld()) return 0;
    // Fallen back, the last live set is kept: the others most likely still run, and the total is a promise.
    return fleetShare(total, this.#live.ids, this.#self, cap);
  }

  status(): FleetStatus {
    return {
      mode: this.#mode,
      self: this.#self,
      members: this.#live.ids,
      owned: this.#mode === 'shared' ? this.#owned.size : this.#placed.size,
      queues: this.#placed.size,
      busy: this.#busy.size,
    };
  }

  /**
   * A graceful exit: no more heartbeats, and the item is deleted first thing, so the peers re-place its queues
   * at their next read, not after an expiry. Never throws; a failed delete leaves the item to expire.
   */
  leave(): Promise<void> {
    this.#leaving ??= this.#leave();
    return this.#leaving;
  }

  async #leave(): Promise<void> {
    this.#setMode('left', 'leaving the fleet: deleting this member, the others take its queues at their next heartbeat');
    clearTimeout(this.#timer);
    clearInterval(this.#watchdog);
    this.#timer = undefined;
    // A round in flight is let finish first, so its write cannot bring the item back after the delete; but not for
    // longer than a heartbeat, so a table that never answers does not hold the exit up to the calls' timeouts.
    let waited: NodeJS.Timeout | undefined;
    await Promise.race([this.#round, new Promise<void>((resolve) => (waited = setTimeout(resolve, this.#o.heartbeatMs)))]);
    clearTimeout(waited);
    try {
      await this.#o.store.leave(this.#self);
    } catch (err) {
      this.#o.logger.warn(
        { err: errorLine(err) },
        'could not delete this member from the fleet table: the others drop it after 3 heartbeats',
      );
    }
  }

  #schedule(): void {
    if (this.#mode === 'left') return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.beat().finally(() => this.#schedule());
    }, this.#o.heartbeatMs);
    this.#timer.unref();
  }

  /** One heartbeat: write own item, read all, decide the live set, the placement and the mode. */
  async #heartbeatRound(): Promise<void> {
    const attempt = (this.#written ?? 0) + 1;
    let items: FleetItem[] | undefined;
    let written = false;
    try {
      const busy = this.#o.busy().slice(0, FLEET_BUSY_MAX);
      written =
        (await this.#o.store.heartbeat(
          { id: this.#self, heartbeat: attempt, expiresAtEpochSeconds: memberTtlEpochSeconds(this.#o.wallNow()), busyQueues: busy },
          this.#written,
        )) === 'written';
      items = await this.#o.store.members();
    } catch (err) {
      if (this.#starting && err instanceof AwsCallError && err.error.kind === 'fatal') {
        this.#refused = { line: errorLine(err), written };
        return;
      }
      this.#failed(err);
      return;
    }
    if (this.#mode === 'left') return;
    const own = items.find((i) => i.id === this.#self);
    // A conflict whose write did land (the SDK retried a PutItem whose first try was written) is ours: the item
    // holds `attempt`. Any other counter in it is another process writing under this id.
    if (own !== undefined && own.heartbeat !== attempt) {
      this.#collision(own.heartbeat);
      return;
    }
    this.#written = own?.heartbeat;
    this.#lastRound = this.#o.now();
    this.#lastError = '';
    this.#live = this.#membership.observe(items);
    this.#place();
    if (this.#membership.settled()) this.#setMode('shared', 'the fleet is shared: polling the queues this member owns and the busy ones');
    else if (this.#mode === 'fallen-back') this.#setMode('joining', 'the fleet table answers again: watching the members for one expiry');
    this.#changed();
  }

  /** Places the queues over the live members, and gathers the busy queues the live members advertise. */
  #place(): void {
    const queues = this.#o.queues();
    this.#placed = new Set(queues);
    this.#owned = new Set(ownedQueues(this.#self, this.#live.ids, queues));
    const busy = new Set<string>();
    for (const item of this.#live.items) for (const q of item.busyQueues ?? []) busy.add(q);
    this.#busy = busy;
  }

  #failed(err: unknown): void {
    const line = errorLine(err);
    if (line !== this.#lastError) this.#o.logger.warn({ err: line }, 'fleet heartbeat failed');
    this.#lastError = line;
    this.checkExpiry();
  }

  /** Another process writes this member's item: this one takes a fresh id and joins again. */
  #collision(found: number): void {
    const fresh = `${this.#self.replace(/~\d+$/, '')}~${Math.floor(this.#o.now())}`;
    this.#o.logger.warn({ member: this.#self, found, fresh }, 'another process writes this fleet member: joining again as a fresh member');
    this.#self = fresh;
    this.#written = undefined;
    this.#membership = new Membership({ self: fresh, expiryMs: this.#expiryMs, now: this.#o.now });
    this.#live = { ids: [fresh], items: [] };
    if (this.#mode === 'shared') this.#setMode('joining', 'joining the fleet again');
    this.#changed();
  }

  #setMode(mode: FleetMode, msg: string, err?: string): void {
    if (this.#mode === mode) return;
    const from = this.#mode;
    this.#mode = mode;
    const fields = { from, to: mode, member: this.#self, members: this.#live.ids.length, ...(err ? { err } : {}) };
    if (mode === 'fallen-back') this.#o.logger.warn(fields, msg);
    else this.#o.logger.info(fields, msg);
  }

  #budgetHeld(): boolean {
    return this.#budgetFrom === undefined || this.#o.now() < this.#budgetFrom;
  }

  /** Tells the steps when what they see may have changed. */
  #changed(): void {
    const members = this.#live.ids.join(',');
    const signature = `${this.#mode}|${members}|${[...this.#busy].sort().join(',')}|${this.#placed.size}|${this.#budgetHeld()}`;
    if (signature === this.#signature) return;
    if (!this.#signature.includes(`|${members}|`)) {
      this.#o.logger.info({ members: this.#live.ids, owned: this.#owned.size, queues: this.#placed.size }, 'fleet members changed');
    }
    this.#signature = signature;
    this.#o.onChange();
  }
}

function errorLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
}
