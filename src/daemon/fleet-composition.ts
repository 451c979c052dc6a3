import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { AwsEndpoints } from '../aws/endpoints.ts';
import { createFleetStore } from '../aws/fleet-store.ts';
import type { Config } from '../config/config.ts';
import { StartupError } from '../core/errors.ts';
import type { MetricsSink } from '../core/telemetry/metrics-sink.ts';
import { FLEET_METRICS } from '../core/telemetry/metric-names.ts';
import type { Dispatcher } from '../dispatch/dispatcher.ts';
import type { DispatcherFleet } from '../dispatch/dispatcher-options.ts';
import { FleetMember } from '../fleet/fleet-member.ts';
import type { FleetSnapshot } from '../operator/status/snapshot.ts';
import { monotonicNow } from '../util/clock.ts';

// The fleet, when --fleet-table is given (docs/fleet.md): this replica's member of it (src/fleet/fleet-member.ts)
// over its own DynamoDB client (src/aws/fleet-store.ts), and the view each route's Dispatcher gets. A queue is
// known to the fleet by its ARN: the same in every replica whatever name, URL or endpoint it was found by.

/** A joined fleet, as the run uses it. */
export interface FleetRun {
  /** What each route's Dispatcher sees of the fleet (DispatcherDeps.fleet). */
  readonly view: DispatcherFleet;
  /**
   * Gives the heartbeats (running since the join) the routes' Dispatchers: their queues are placed and their busy
   * ones advertised from the next round. And starts the fleet's gauges into `sink`, once a heartbeat.
   */
  start(dispatchers: readonly Dispatcher[], sink: MetricsSink): void;
  /** Whether this replica handles a Temporal task queue of spillover now: each is placed like an idle queue. */
  servesTaskQueue(taskQueue: string): boolean;
  /** For status.json and the status page. */
  snapshot(): FleetSnapshot;
  /** A graceful exit: the member's item is deleted so the peers take its queues at once. Never throws. */
  leave(): Promise<void>;
  /** Releases the DynamoDB client's sockets. */
  destroy(): void;
}

/**
 * A Temporal task queue's key in the fleet: its namespace and name, the same in every replica whatever address it
 * reaches the server by, and never an ARN (an SQS queue's key).
 */
function taskQueueKey(namespace: string, taskQueue: string): string {
  return `temporal:${namespace}/${taskQueue}`;
}

/** A member id unique in the fleet and readable in a log: the host, the pid and random bytes. */
export function memberId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/**
 * Joins the fleet: the table is checked first (a missing table, a wrong key schema or a denied DescribeTable is
 * a StartupError, told in one line naming the table), then the member makes its first heartbeat (a denied PutItem
 * or Query is a StartupError too, in the call's line) and beats on; start() hands it the routes' queues.
 * Undefined without --fleet-table.
 */
export async function joinFleet(config: Config, endpoints: AwsEndpoints, logger: Logger): Promise<FleetRun | undefined> {
  const fleet = config.fleet;
  if (fleet === undefined) return undefined;
  const log = logger.child({ component: 'fleet' });
  const store = createFleetStore({
    table: fleet.table,
    fleet: fleet.name,
    region: config.region,
    endpointUrl: config.endpointUrl,
    // The proxy and CA bundle resolved at start-up, as every other AWS client of the run takes them.
    network: endpoints.network,
    logger: log,
  });
  let problem: string | undefined;
  try {
    problem = await store.checkTable();
  } catch (err) {
    problem = err instanceof Error ? err.message : String(err);
  }
  if (problem !== undefined) {
    store.destroy();
    throw new StartupError(problem);
  }
  let dispatchers: readonly Dispatcher[] = [];
  // The gauges, at each change and once a heartbeat (a CloudWatch interval needs a datum of its own).
  let recordGauges = (): void => {};
  const temporal = config.temporal;
  const taskQueues = temporal === undefined ? [] : temporal.taskQueues.map((tq) => taskQueueKey(temporal.namespace, tq));
  // A queue counts as busy for two heartbeats after a full receive: one quiet beat does not end it.
  const busyWithinMs = 2 * fleet.heartbeatMs;
  const member = new FleetMember({
    store,
    self: memberId(),
    heartbeatMs: fleet.heartbeatMs,
    now: monotonicNow,
    wallNow: Date.now,
    queues: () => [...dispatchers.flatMap((d) => d.queues.map((q) => q.arn)), ...taskQueues],
    busy: () => dispatchers.flatMap((d) => d.busyQueues(busyWithinMs).map((q) => q.arn)),
    onChange: () => {
      recordGauges();
      for (const d of dispatchers) d.fleetChanged();
    },
    logger: log,
  });
  const total = fleet.concurrency;
  const snapshot = (): FleetSnapshot => {
    const status = member.status();
    return {
      name: fleet.name,
      ...status,
      // The fleet's part for this replica, before each route's --concurrency caps it.
      ...(total !== undefined ? { concurrency: total, share: member.share(total) } : {}),
    };
  };
  let gauges: NodeJS.Timeout | undefined;
  log.info(
    { table: fleet.table, fleet: fleet.name, member: member.status().self, heartbeatMs: fleet.heartbeatMs, concurrency: total },
    'joining the fleet: every queue is polled here until the members are known',
  );
  // The first heartbeat (PutItem, Query) before any route starts: a denied action is the start-up's one line.
  const refused = await member.start();
  if (refused !== undefined) {
    store.destroy();
    throw new StartupError(refused);
  }
  return {
    view: {
      serves: (queue) => member.serves(queue.arn),
      share: total !== undefined ? (cap) => member.share(total, cap) : undefined,
    },
    start: (ds, sink) => {
      dispatchers = ds;
      recordGauges = () => recordFleetGauges(sink, snapshot());
      recordGauges();
      gauges = setInterval(recordGauges, fleet.heartbeatMs).unref();
    },
    servesTaskQueue: (taskQueue) => temporal === undefined || member.serves(taskQueueKey(temporal.namespace, taskQueue)),
    snapshot,
    leave: () => member.leave(),
    destroy: () => {
      clearInterval(gauges);
      store.destroy();
    },
  };
}

/** The fleet's gauges (core/telemetry/metric-names.ts FLEET_METRICS), under the fleet's name. */
function recordFleetGauges(sink: MetricsSink, f: FleetSnapshot): void {
  const dimensions = { Fleet: f.name };
  const gauge = (def: { cloudwatch: string; unit: 'Count' | 'Milliseconds' }, value: number) =>
    sink.record({ name: def.cloudwatch, unit: def.unit, value, dimensions });
  gauge(FLEET_METRICS.shared, f.mode === 'shared' ? 1 : 0);
  gauge(FLEET_METRICS.members, f.members.length);
  gauge(FLEET_METRICS.ownedQueues, f.owned);
  gauge(FLEET_METRICS.share, f.share ?? Number.NaN);
}
