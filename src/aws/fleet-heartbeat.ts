// A member's heartbeat (FleetStore.heartbeat): one conditional PutItem of its whole item, which succeeds only while
// no other process has written that member's item since `previous` (an id taken twice makes one of them 'conflict').
import type { AttributeValue, PutItemCommandInput } from '@aws-sdk/client-dynamodb';
import { FLEET_BUSY_MAX, type FleetItem, type HeartbeatResult } from '../core/fleet-store.ts';
import { isConditionRefused, type FleetTableCalls } from './fleet-call.ts';

/**
 * The item's attributes in the table's layout (src/core/fleet-store.ts): numbers as N (DynamoDB carries them as
 * strings), the busy queues as a list of strings, at most FLEET_BUSY_MAX of them.
 */
export function itemAttributes(fleet: string, item: FleetItem): Record<string, AttributeValue> {
  return {
    fleet: { S: fleet },
    member: { S: item.id },
    heartbeat: { N: String(item.heartbeat) },
    ...(item.expiresAtEpochSeconds !== undefined ? { expiresAt: { N: String(item.expiresAtEpochSeconds) } } : {}),
    ...(item.busyQueues !== undefined ? { busy: { L: item.busyQueues.slice(0, FLEET_BUSY_MAX).map((q) => ({ S: q })) } } : {}),
  };
}

/**
 * The PutItem: the item is absent, or (with `previous`) still holds that counter. `member` is a reserved word in
 * DynamoDB's expressions, hence the names.
 */
export function heartbeatInput(table: string, fleet: string, item: FleetItem, previous: number | undefined): PutItemCommandInput {
  return {
    TableName: table,
    Item: itemAttributes(fleet, item),
    ...(previous === undefined
      ? { ConditionExpression: 'attribute_not_exists(#m)', ExpressionAttributeNames: { '#m': 'member' } }
      : {
          ConditionExpression: 'attribute_not_exists(#m) OR #h = :prev',
          ExpressionAttributeNames: { '#m': 'member', '#h': 'heartbeat' },
          ExpressionAttributeValues: { ':prev': { N: String(previous) } },
        }),
  };
}

/** Writes the heartbeat; its condition refused is 'conflict', any other failure throws (FleetCallError). */
export async function putHeartbeat(calls: FleetTableCalls, item: FleetItem, previous: number | undefined): Promise<HeartbeatResult> {
  try {
    await calls.send('PutItem', heartbeatInput(calls.table, calls.fleet, item, previous));
    return 'written';
  } catch (err) {
    if (isConditionRefused(err)) return 'conflict';
    throw err;
  }
}
