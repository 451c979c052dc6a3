// A graceful leave (FleetStore.leave): the member deletes its own item, so its peers re-place its queues on their
// next read instead of after an expiry.
import type { DeleteItemCommandInput } from '@aws-sdk/client-dynamodb';
import type { FleetTableCalls } from './fleet-call.ts';

export function leaveInput(table: string, fleet: string, id: string): DeleteItemCommandInput {
  return { TableName: table, Key: { fleet: { S: fleet }, member: { S: id } } };
}

/** Deletes member `id`'s item; an item already gone is no error (DeleteItem is idempotent). */
export async function deleteMember(calls: FleetTableCalls, id: string): Promise<void> {
  await calls.send('DeleteItem', leaveInput(calls.table, calls.fleet, id));
}
