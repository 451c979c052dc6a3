// The fleet's table as it must be (src/core/fleet-store.ts's layout), checked with DescribeTable at start-up and by
// `workerless check`: a table keyed otherwise would take every write and answer every read with other items.
import type { DescribeTableCommandOutput } from '@aws-sdk/client-dynamodb';
import type { FleetTableCalls } from './fleet-call.ts';

type TableDescription = NonNullable<DescribeTableCommandOutput['Table']>;

/** The key schema the fleet needs, as DescribeTable names it. */
const EXPECTED = 'HASH fleet (S) + RANGE member (S)';

/** Why `description` is not the fleet's table (one line naming it), or undefined when its keys are the layout's. */
export function keySchemaProblem(table: string, description: TableDescription | undefined): string | undefined {
  const keys = description?.KeySchema ?? [];
  const types = new Map((description?.AttributeDefinitions ?? []).map((d) => [d.AttributeName, d.AttributeType]));
  const schema = keys.map((k) => `${k.KeyType ?? '?'} ${k.AttributeName ?? '?'} (${types.get(k.AttributeName) ?? '?'})`).join(' + ');
  if (schema === EXPECTED) return undefined;
  return `DynamoDB table ${table} has the key schema ${schema === '' ? '(none)' : schema}, not ${EXPECTED}`;
}

/** The table's problem, or undefined when it is usable; a failed DescribeTable is its FleetCallError's line. */
export async function describeFleetTable(calls: FleetTableCalls): Promise<string | undefined> {
  try {
    const answer = await calls.send('DescribeTable', { TableName: calls.table });
    return keySchemaProblem(calls.table, answer.Table);
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}
