/** The fleet's settings (src/config/options/fleet.ts defines the flags, src/config/fleet.ts compiles them). */
export interface FleetConfig {
  /** --fleet-table: the DynamoDB table's name. */
  readonly table: string;
  /** --fleet-name: the partition key value this replica's fleet shares. */
  readonly name: string;
  /** --fleet-concurrency: invocations at once for the whole fleet; undefined: each replica its --concurrency. */
  readonly concurrency: number | undefined;
  /** --fleet-heartbeat, in ms: how often a member writes its item and reads the others. */
  readonly heartbeatMs: number;
}

/** A member silent (its counter unchanged on an observer's clock) for this many heartbeats is gone. */
export const EXPIRY_HEARTBEATS = 3;
