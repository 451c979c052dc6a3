// The fleet's read (src/aws/fleet-members.ts): a consistent Query of the fleet's partition, every page, each item
// parsed back, stray items skipped.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttributeValue, QueryCommandInput } from '@aws-sdk/client-dynamodb';
import type { FleetTableCalls } from '../../../src/aws/fleet-call.ts';
import { itemOf, membersInput, queryMembers } from '../../../src/aws/fleet-members.ts';

describe('members Query', () => {
  it('reads the fleet partition consistently, names escaped', () => {
    assert.deepEqual(membersInput('t', 'f'), {
      TableName: 't',
      KeyConditionExpression: '#f = :fleet',
      ExpressionAttributeNames: { '#f': 'fleet' },
      ExpressionAttributeValues: { ':fleet': { S: 'f' } },
      ConsistentRead: true,
    });
    assert.deepEqual(membersInput('t', 'f', { fleet: { S: 'f' }, member: { S: 'm' } }).ExclusiveStartKey, {
      fleet: { S: 'f' },
      member: { S: 'm' },
    });
  });

  it('parses an item back, numbers with Number()', () => {
    assert.deepEqual(
      itemOf({
        fleet: { S: 'f' },
        member: { S: 'm' },
        heartbeat: { N: '42' },
        expiresAt: { N: '1900000000' },
        busy: { L: [{ S: 'a' }, { N: '1' }, { S: 'b' }] },
      }),
      { id: 'm', heartbeat: 42, expiresAtEpochSeconds: 1_900_000_000, busyQueues: ['a', 'b'] },
    );
    assert.deepEqual(itemOf({ member: { S: 'm' }, heartbeat: { N: '1' }, expiresAt: { S: 'soon' }, busy: { S: 'a' } }), {
      id: 'm',
      heartbeat: 1,
    });
  });

  it('skips an item without a member id or a numeric heartbeat', () => {
    assert.equal(itemOf({ fleet: { S: 'f' }, member: { S: 'm' } }), undefined);
    assert.equal(itemOf({ fleet: { S: 'f' }, heartbeat: { N: '1' } }), undefined);
    assert.equal(itemOf({ member: { S: '' }, heartbeat: { N: '1' } }), undefined);
    assert.equal(itemOf({ member: { S: 'm' }, heartbeat: { S: '1' } }), undefined);
    assert.equal(itemOf({ member: { S: 'm' }, heartbeat: { N: 'NaN' } }), undefined);
    assert.equal(itemOf({ member: { N: '5' }, heartbeat: { N: '1' } }), undefined);
  });

  it('follows LastEvaluatedKey to the last page and counts what it skipped', async () => {
    const key = (m: string): Record<string, AttributeValue> => ({ fleet: { S: 'f' }, member: { S: m } });
    const pages = [
      { Items: [{ ...key('a'), heartbeat: { N: '1' } }, key('stray')], LastEvaluatedKey: key('stray') },
      { Items: [{ ...key('b'), heartbeat: { N: '2' } }], LastEvaluatedKey: key('b') },
      { Items: [], LastEvaluatedKey: {} },
    ];
    const sent: QueryCommandInput[] = [];
    const calls: FleetTableCalls = {
      table: 't',
      fleet: 'f',
      send: (_operation, input) => {
        sent.push(input);
        return Promise.resolve({ $metadata: {}, ...pages[sent.length - 1] });
      },
    };
    assert.deepEqual(await queryMembers(calls), {
      items: [
        { id: 'a', heartbeat: 1 },
        { id: 'b', heartbeat: 2 },
      ],
      skipped: 1,
    });
    assert.deepEqual(
      sent.map((s) => s.ExclusiveStartKey),
      [undefined, key('stray'), key('b')],
    );
  });
});
