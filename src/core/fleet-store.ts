// The fleet's store, as the fleet wing (src/fleet/) sees it: one DynamoDB table, one item per live member. The
// adapters (src/aws/fleet-*.ts) implement it; the executor (src/fleet/fleet-member.ts) drives it on its timer.
//
// The table (one layout everywhere: the CDK construct, the Helm docs, docs/fleet.md, an operator's template):
//   partition key `fleet`  (S): the fleet's name (--fleet-name)
//   sort key      `member` (S): a member's id
//   `heartbeat` (N): a counter its member changes on every heartbeat (only a change means anything)
//   `expiresAt` (N): epoch seconds after which the table's TTL may delete the item (housekeeping only)
//   `busy`      (L of S): the queues (their keys) the member advertises as busy, at most FLEET_BUSY_MAX

/** One member's item as written and as read back. */
export interface FleetItem {
  /** The member's id: the table's sort key. */
  readonly id: string;
  /** The heartbeat counter the member changes on every heartbeat. */
  readonly heartbeat: number;
  /** Epoch seconds after which the table's TTL may delete the item; never read for liveness. */
  readonly expiresAtEpochSeconds?: number;
  /** The queues (their keys) the member advertises as busy: every replica with free loops receives from them. */
  readonly busyQueues?: readonly string[];
}

/** At most this many busy queues go into one item (a DynamoDB item holds 400 KB; a queue URL up to ~200 bytes). */
export const FLEET_BUSY_MAX = 100;

/** How a conditional heartbeat write ended. */
export type HeartbeatResult =
  /** Written: the item was absent (first write) or still held the counter `previous`. */
  | 'written'
  /** Refused by its condition: another process wrote this member's item (an id taken twice). */
  | 'conflict';

/**
 * The fleet's table, one fleet's partition of it. Every call throws a StoreError-like error (its message one
 * line naming the table, the operation and the endpoint) when DynamoDB cannot be reached, refuses the call or
 * throttles it past its retries; it never hangs past its own timeout.
 */
export interface FleetStore {
  /**
   * Writes `item` (PutItem) on the condition that no item with its id exists (`previous` undefined) or that the
   * stored one still holds counter `previous`.
   */
  heartbeat(item: FleetItem, previous: number | undefined): Promise<HeartbeatResult>;
  /** Every item of the fleet's partition (Query, ConsistentRead, every page). */
  members(): Promise<FleetItem[]>;
  /** Deletes member `id`'s item (DeleteItem): a graceful leave, so peers re-place its queues at once. */
  leave(id: string): Promise<void>;
}
