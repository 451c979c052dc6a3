// The fleet's members (FleetStore.members): a strongly consistent Query of the fleet's partition, every page, so a
// member sees every heartbeat written before the read began.
import type { AttributeValue, QueryCommandInput } from '@aws-sdk/client-dynamodb';
import { FLEET_BUSY_MAX, type FleetItem } from '../core/fleet-store.ts';
import type { FleetTableCalls } from './fleet-call.ts';

export function membersInput(table: string, fleet: string, startKey?: Record<string, AttributeValue>): QueryCommandInput {
  return {
    TableName: table,
    KeyConditionExpression: '#f = :fleet',
    ExpressionAttributeNames: { '#f': 'fleet' },
    ExpressionAttributeValues: { ':fleet': { S: fleet } },
    ConsistentRead: true,
    ...(startKey !== undefined ? { ExclusiveStartKey: startKey } : {}),
  };
}

/**
 * One stored item as a FleetItem, or undefined for an item that is not a member's (no `member` string or no numeric
 * `heartbeat`: written by hand or by another tool), which a read skips rather than fail on. Optional attributes of
 * the wrong type are left out.
 */
export function itemOf(attributes: Record<string, AttributeValue>): FleetItem | undefined {
  const id = attributes['member']?.S;
  const heartbeat = numberOf(attributes['heartbeat']);
  if (id === undefined || id === '' || heartbeat === undefined) return undefined;
  const expiresAt = numberOf(attributes['expiresAt']);
  const busy = attributes['busy']?.L;
  return {
    id,
    heartbeat,
    ...(expiresAt !== undefined ? { expiresAtEpochSeconds: expiresAt } : {}),
    ...(busy !== undefined ? { busyQueues: busy.flatMap((v) => (typeof v.S === 'string' ? [v.S] : [])).slice(0, FLEET_BUSY_MAX) } : {}),
  };
}

function numberOf(value: AttributeValue | undefined): number | undefined {
  if (typeof value?.N !== 'string') return undefined;
  const n = Number(value.N);
  return Number.isFinite(n) ? n : undefined;
}

/** Every member's item of the fleet, following LastEvaluatedKey (1 MB a page); `skipped` counts stray items. */
export async function queryMembers(calls: FleetTableCalls): Promise<{ items: FleetItem[]; skipped: number }> {
  const items: FleetItem[] = [];
  let skipped = 0;
  let startKey: Record<string, AttributeValue> | undefined;
  do {
    const page = await calls.send('Query', membersInput(calls.table, calls.fleet, startKey));
    for (const attributes of page.Items ?? []) {
      const item = itemOf(attributes);
      if (item !== undefined) items.push(item);
      else skipped++;
    }
    startKey = page.LastEvaluatedKey !== undefined && Object.keys(page.LastEvaluatedKey).length > 0 ? page.LastEvaluatedKey : undefined;
  } while (startKey !== undefined);
  return { items, skipped };
}
