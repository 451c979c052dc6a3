// The heartbeat's PutItem (src/aws/fleet-heartbeat.ts): the item in the table's layout and the condition that makes
// an id taken twice a 'conflict'.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FLEET_BUSY_MAX } from '../../../src/core/fleet-store.ts';
import { fleetCallError, type FleetTableCalls } from '../../../src/aws/fleet-call.ts';
import { heartbeatInput, itemAttributes, putHeartbeat } from '../../../src/aws/fleet-heartbeat.ts';

describe('heartbeat PutItem', () => {
  it('writes the layout: fleet and member as S, numbers as N, busy as a list of S', () => {
    assert.deepEqual(itemAttributes('f', { id: 'm', heartbeat: 12, expiresAtEpochSeconds: 1_900_000_000, busyQueues: ['a', 'b'] }), {
      fleet: { S: 'f' },
      member: { S: 'm' },
      heartbeat: { N: '12' },
      expiresAt: { N: '1900000000' },
      busy: { L: [{ S: 'a' }, { S: 'b' }] },
    });
    assert.deepEqual(itemAttributes('f', { id: 'm', heartbeat: 0 }), { fleet: { S: 'f' }, member: { S: 'm' }, heartbeat: { N: '0' } });
  });

  it(`writes at most ${FLEET_BUSY_MAX} busy queues`, () => {
    const busyQueues = Array.from({ length: FLEET_BUSY_MAX + 5 }, (_, i) => `q${i}`);
    assert.equal(itemAttributes('f', { id: 'm', heartbeat: 1, busyQueues }).busy?.L?.length, FLEET_BUSY_MAX);
  });

  it('a first write needs the item absent; a later one, absent or still at previous (member is a reserved word)', () => {
    const first = heartbeatInput('t', 'f', { id: 'm', heartbeat: 1 }, undefined);
    assert.equal(first.TableName, 't');
    assert.equal(first.ConditionExpression, 'attribute_not_exists(#m)');
    assert.deepEqual(first.ExpressionAttributeNames, { '#m': 'member' });
    assert.equal(first.ExpressionAttributeValues, undefined);
    const next = heartbeatInput('t', 'f', { id: 'm', heartbeat: 2 }, 1);
    assert.equal(next.ConditionExpression, 'attribute_not_exists(#m) OR #h = :prev');
    assert.deepEqual(next.ExpressionAttributeNames, { '#m': 'member', '#h': 'heartbeat' });
    assert.deepEqual(next.ExpressionAttributeValues, { ':prev': { N: '1' } });
  });

  it("is 'written', 'conflict' when the condition is refused, and throws anything else", async () => {
    const calls = (fail?: string): FleetTableCalls => ({
      table: 't',
      fleet: 'f',
      send: (operation) =>
        fail === undefined
          ? Promise.resolve({ $metadata: {} })
          : Promise.reject(
              fleetCallError(Object.assign(new Error(fail), { name: fail, $metadata: { httpStatusCode: 400 } }), operation, 't', 'e'),
            ),
    });
    assert.equal(await putHeartbeat(calls(), { id: 'm', heartbeat: 1 }, undefined), 'written');
    assert.equal(await putHeartbeat(calls('ConditionalCheckFailedException'), { id: 'm', heartbeat: 2 }, 1), 'conflict');
    await assert.rejects(
      putHeartbeat(calls('ValidationException'), { id: 'm', heartbeat: 2 }, 1),
      /^AwsCallError: DynamoDB refused PutItem/,
    );
  });
});
