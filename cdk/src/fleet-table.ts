/**
 * The fleet's DynamoDB table (docs/fleet.md, "The table"): one the construct creates in the daemon's layout
 * (src/core/fleet-store.ts), or one the caller already has.
 */
import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';

/** A table for the construct to create: `fleetTable: {}`, or with a name. */
export interface WorkerlessFleetTableProps {
  /** The table's name. Default: one CloudFormation generates (it reaches the tasks as WORKERLESS_FLEET_TABLE). */
  readonly tableName?: string;
  /** What becomes of the table when it leaves the stack. Default: DESTROY (it holds heartbeats only: nothing to keep). */
  readonly removalPolicy?: RemovalPolicy;
}

/** The attribute each member's item carries for DynamoDB's TTL (src/aws/fleet-heartbeat.ts writes it). */
export const FLEET_TTL_ATTRIBUTE = 'expiresAt';

export function isTable(x: dynamodb.ITable | WorkerlessFleetTableProps): x is dynamodb.ITable {
  return 'tableArn' in x;
}

/**
 * On-demand, because a fleet writes and reads a few items every heartbeat (30 calls a minute per replica at 4 s),
 * far below what provisioned capacity would be sized for; keyed `fleet` + `member`, both strings, as the daemon's
 * DescribeTable check at start-up requires; with TTL on `expiresAt` for housekeeping only (liveness never reads it).
 */
export function createFleetTable(scope: Construct, props: WorkerlessFleetTableProps): dynamodb.Table {
  const table = new dynamodb.Table(scope, 'FleetTable', {
    tableName: props.tableName,
    partitionKey: { name: 'fleet', type: dynamodb.AttributeType.STRING },
    sortKey: { name: 'member', type: dynamodb.AttributeType.STRING },
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    timeToLiveAttribute: FLEET_TTL_ATTRIBUTE,
    removalPolicy: props.removalPolicy ?? RemovalPolicy.DESTROY,
  });
  Validations.of(table).acknowledge({
    id: 'AwsSolutions::AwsSolutions-DDB3',
    reason:
      "the fleet's table holds one heartbeat item per live replica, rewritten every --fleet-heartbeat: a restored copy would only hold members that are gone",
  });
  return table;
}
