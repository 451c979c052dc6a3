// The fleet table's check (src/aws/fleet-table.ts): DescribeTable's key schema must be exactly the layout of
// src/core/fleet-store.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fleetCallError, type FleetTableCalls } from '../../../src/aws/fleet-call.ts';
import { describeFleetTable, keySchemaProblem } from '../../../src/aws/fleet-table.ts';

const S = 'S' as const;
const fleetTable = {
  KeySchema: [
    { AttributeName: 'fleet', KeyType: 'HASH' as const },
    { AttributeName: 'member', KeyType: 'RANGE' as const },
  ],
  AttributeDefinitions: [
    { AttributeName: 'fleet', AttributeType: S },
    { AttributeName: 'member', AttributeType: S },
  ],
};

describe('fleet table check', () => {
  it('passes the layout', () => {
    assert.equal(keySchemaProblem('t', fleetTable), undefined);
  });

  it('names the table and both schemas otherwise', () => {
    const want = 'not HASH fleet (S) + RANGE member (S)';
    assert.equal(
      keySchemaProblem('t', {
        ...fleetTable,
        AttributeDefinitions: [
          { AttributeName: 'fleet', AttributeType: S },
          { AttributeName: 'member', AttributeType: 'N' },
        ],
      }),
      `DynamoDB table t has the key schema HASH fleet (S) + RANGE member (N), ${want}`,
    );
    assert.equal(
      keySchemaProblem('t', {
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: S }],
      }),
      `DynamoDB table t has the key schema HASH pk (S), ${want}`,
    );
    assert.equal(keySchemaProblem('t', undefined), `DynamoDB table t has the key schema (none), ${want}`);
  });

  it('a failed DescribeTable is its one line', async () => {
    const calls: FleetTableCalls = {
      table: 't',
      fleet: 'f',
      send: (operation) =>
        Promise.reject(
          fleetCallError(
            Object.assign(new Error('Requested resource not found'), {
              name: 'ResourceNotFoundException',
              $metadata: { httpStatusCode: 400 },
            }),
            operation,
            't',
            'http://x',
          ),
        ),
    };
    assert.equal(
      await describeFleetTable(calls),
      'DynamoDB refused DescribeTable on table t at http://x: ResourceNotFoundException: Requested resource not found',
    );
    const ok: FleetTableCalls = { ...calls, send: () => Promise.resolve({ $metadata: {}, Table: fleetTable }) };
    assert.equal(await describeFleetTable(ok), undefined);
  });
});
