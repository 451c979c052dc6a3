// The fleet's store on DynamoDB (src/core/fleet-store.ts's FleetStore): one client of its own, built on first use,
// under the adapters of one call each (src/aws/fleet-heartbeat.ts, fleet-members.ts, fleet-leave.ts, fleet-table.ts).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Logger } from 'pino';
import type { FleetStore } from '../core/fleet-store.ts';
import { resolveAwsNetwork, type AwsNetwork } from './network.ts';
import { sdkAgents } from './sdk-agents.ts';
import { endpointName } from './endpoints.ts';
import { fleetCallError, type DynamoOperation, type DynamoOperations, type FleetTableCalls } from './fleet-call.ts';
import { putHeartbeat } from './fleet-heartbeat.ts';
import { deleteMember } from './fleet-leave.ts';
import { queryMembers } from './fleet-members.ts';
import { describeFleetTable } from './fleet-table.ts';

export interface FleetStoreOptions {
  /** The table's name (--fleet-table). */
  readonly table: string;
  /** The fleet's name (--fleet-name): its partition of the table. */
  readonly fleet: string;
  /** The region the calls are signed for and routed to (--region or the SDK's chain). */
  readonly region: string;
  /** --endpoint-url: when undefined the SDK finds the endpoint (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, the profile). */
  readonly endpointUrl?: string | undefined;
  /** Told once when a read skips items that are not a member's. */
  readonly logger?: Logger | undefined;
  /**
   * Proxies and the CA bundle (AwsEndpoints.network). When not given, read from the environment and the profile as at
   * start-up (resolveAwsNetwork), so the table is reached the way every other AWS call is.
   */
  readonly network?: AwsNetwork | undefined;
}

/** The store, with what start-up and `workerless check` need besides. */
export interface DynamoFleetStore extends FleetStore {
  /** DescribeTable: a one-line problem (missing table, wrong key schema, unreachable...), or undefined. */
  checkTable(): Promise<string | undefined>;
  /** Releases the client's sockets; a call after it fails. */
  destroy(): void;
}

/**
 * How long one call may take: each attempt is cut off when it has no connection after `connectMs` or no answer
 * after `requestMs`, and the SDK's standard retry makes `attempts` of them (with its jittered back-off, under
 * 1 s in all), so a dead endpoint fails a call within about attempts x requestMs.
 */
export const FLEET_CALL_LIMITS = { connectMs: 3_000, requestMs: 5_000, attempts: 3 } as const;

/** Sockets of the store's own pool: a heartbeat, a read and a leave at most are in flight at once. */
const FLEET_MAX_SOCKETS = 4;

type DynamoSdk = typeof import('@aws-sdk/client-dynamodb');

/**
 * Builds the store. Its DynamoDBClient is its own, not the SQS or Lambda clients' (src/aws/clients.ts): its own
 * keep-alive sockets and retry budget, so a slow table cannot take the data path's sockets or retry tokens, nor
 * the reverse. Its package is loaded on the first call (15-30 MiB resident, like each SDK client).
 */
export function createFleetStore(options: FleetStoreOptions): DynamoFleetStore {
  const { table, fleet, region, endpointUrl, logger } = options;
  let loaded: Promise<{ sdk: DynamoSdk; client: DynamoDBClient }> | undefined;
  let destroyed = false;
  let warnedSkipped = false;
  const load = () =>
    (loaded ??= Promise.all([import('@aws-sdk/client-dynamodb'), options.network ?? networkOf()]).then(([sdk, network]) => {
      const client = new sdk.DynamoDBClient({
        region,
        // Only the flag is passed: without it the SDK resolves the endpoint by its own rules, as for every client.
        ...(endpointUrl !== undefined ? { endpoint: endpointUrl } : {}),
        maxAttempts: FLEET_CALL_LIMITS.attempts,
        retryMode: 'standard',
        requestHandler: {
          connectionTimeout: FLEET_CALL_LIMITS.connectMs,
          requestTimeout: FLEET_CALL_LIMITS.requestMs,
          // Without it NodeHttpHandler only logs a warning when requestTimeout passes, and the call waits forever.
          throwOnRequestTimeout: true,
          ...sdkAgents(FLEET_MAX_SOCKETS, network),
        },
      });
      if (destroyed) client.destroy();
      return { sdk, client };
    }));
  // Named in a failure that happened before a request was built (the endpoint's own resolution): what was configured.
  const configured = endpointUrl ?? `the SDK's endpoint for region ${region}`;
  const calls: FleetTableCalls = {
    table,
    fleet,
    send: async <O extends DynamoOperation>(operation: O, input: DynamoOperations[O]['input']) => {
      let endpoint: string | undefined;
      try {
        const { sdk, client } = await load();
        const command = commandOf(sdk, operation, input) as Parameters<DynamoDBClient['send']>[0];
        // The endpoint the SDK resolved for this call (a configured one, or AWS's), for the error's line.
        command.middlewareStack.add(
          (next) => (args) => {
            endpoint ??= requestEndpoint(args.request);
            return next(args);
          },
          { step: 'build', name: 'workerlessFleetEndpoint' },
        );
        return await client.send(command);
      } catch (err) {
        throw fleetCallError(err, operation, table, endpoint ?? configured);
      }
    },
  };
  return {
    heartbeat: (item, previous) => putHeartbeat(calls, item, previous),
    members: async () => {
      const { items, skipped } = await queryMembers(calls);
      if (skipped > 0 && !warnedSkipped) {
        warnedSkipped = true;
        logger?.warn({ table, fleet, skipped }, 'fleet table items without a member id or heartbeat skipped');
      }
      return items;
    },
    leave: (id) => deleteMember(calls, id),
    checkTable: () => describeFleetTable(calls),
    destroy: () => {
      destroyed = true;
      void loaded?.then(({ client }) => client.destroy());
    },
  };
}

/** The start-up's network settings; the start-up has already refused any problem with them (exit 2). */
async function networkOf(): Promise<AwsNetwork> {
  const network = await resolveAwsNetwork();
  if ('problems' in network) throw new Error(network.problems.join('; '));
  return network;
}

function commandOf(sdk: DynamoSdk, operation: DynamoOperation, input: DynamoOperations[DynamoOperation]['input']) {
  switch (operation) {
    case 'PutItem':
      return new sdk.PutItemCommand(input as DynamoOperations['PutItem']['input']);
    case 'Query':
      return new sdk.QueryCommand(input);
    case 'DeleteItem':
      return new sdk.DeleteItemCommand(input as DynamoOperations['DeleteItem']['input']);
    case 'DescribeTable':
      return new sdk.DescribeTableCommand(input);
  }
}

/** The origin (and path) of the HTTP request the SDK built, or undefined when it is not one. */
function requestEndpoint(request: unknown): string | undefined {
  const r = request as { protocol?: unknown; hostname?: unknown; port?: unknown; path?: unknown } | undefined;
  if (typeof r?.protocol !== 'string' || typeof r.hostname !== 'string') return undefined;
  try {
    const port = typeof r.port === 'number' ? `:${r.port}` : '';
    return endpointName(new URL(`${r.protocol}//${r.hostname}${port}${typeof r.path === 'string' ? r.path : '/'}`));
  } catch {
    return undefined;
  }
}
