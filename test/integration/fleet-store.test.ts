// The fleet's store (src/aws/fleet-store.ts) against two DynamoDB implementations neither we nor AWS wrote: moto's
// server (scripts/sqs-servers.sh start moto; skipped, saying so, when it does not answer) and dynalite, in this
// process. The calls, as DynamoDB's API reference defines them:
//   PutItem with ConditionExpression: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html
//   Query, ConsistentRead, LastEvaluatedKey: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Query.html
//   DeleteItem: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_DeleteItem.html
//   DescribeTable: https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_DescribeTable.html
// The race is the point of the conditional write: two processes holding the same member id write at once with the
// same `previous`, and DynamoDB must let exactly one through (emulators have had bugs letting both succeed).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { Logger } from 'pino';
import { createFleetStore, FLEET_CALL_LIMITS, type DynamoFleetStore } from '../../src/aws/fleet-store.ts';
import type { FleetItem, HeartbeatResult } from '../../src/core/fleet-store.ts';
import { TEST_CREDENTIALS, TEST_REGION } from '../support/aws.ts';
import {
  createFleetTable,
  deleteTable,
  dynamoClient,
  dynamoProblem,
  motoDynamoEndpoint,
  putRawItem,
  startDynalite,
  startMuteServer,
  uniqueTableName,
  type DynamoServer,
} from '../support/dynamodb.ts';
import { freePort } from '../support/http.ts';

// The store finds its credentials as the daemon does, through the SDK's chain: from the environment here, never
// from a developer's profile or instance metadata. This file runs in a process of its own.
Object.assign(process.env, {
  AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_CONFIG_FILE: '/dev/null',
  AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
});
delete process.env['AWS_ENDPOINT_URL'];
delete process.env['AWS_ENDPOINT_URL_DYNAMODB'];

const MOTO_START = 'scripts/sqs-servers.sh start moto';
const motoProblem = await dynamoProblem(motoDynamoEndpoint());

interface Implementation {
  readonly name: string;
  start(): Promise<DynamoServer>;
  readonly skip: string | false;
}

const implementations: Implementation[] = [
  {
    name: 'moto',
    start: () => Promise.resolve({ endpoint: motoDynamoEndpoint(), close: () => Promise.resolve() }),
    skip:
      motoProblem === undefined ? false : `moto does not answer at ${motoDynamoEndpoint()} (${motoProblem}); start it with ${MOTO_START}`,
  },
  { name: 'dynalite', start: startDynalite, skip: false },
];

const oneLine = (text: string) => assert.ok(!text.includes('\n'), `one line: ${text}`);

async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => assert.fail('resolved'),
    (err: unknown) => (assert.ok(err instanceof Error), err),
  );
}

for (const implementation of implementations) {
  describe(`the fleet store on ${implementation.name}`, { skip: implementation.skip }, () => {
    let server: DynamoServer;
    let table: string;
    const stores: DynamoFleetStore[] = [];
    const store = (fleet: string, logger?: Logger) => {
      const s = createFleetStore({ table, fleet, region: TEST_REGION, endpointUrl: server.endpoint, logger });
      stores.push(s);
      return s;
    };

    before(async () => {
      server = await implementation.start();
      table = uniqueTableName('wl-fleet');
      await createFleetTable(server.endpoint, table);
    });
    after(async () => {
      for (const s of stores) s.destroy();
      await deleteTable(server.endpoint, table).catch(() => {});
      await server.close();
    });

    it('reads back what a heartbeat wrote: busy list and expiry, this fleet only, stray items skipped', async () => {
      const warnings: unknown[] = [];
      const logger = { warn: (fields: unknown) => warnings.push(fields) } as unknown as Logger;
      const a = store('round-trip', logger);
      const busy: FleetItem = { id: 'm-a', heartbeat: 1, expiresAtEpochSeconds: 1_900_000_000, busyQueues: ['q1', 'https://sqs/q2'] };
      const idle: FleetItem = { id: 'm-b', heartbeat: 7, busyQueues: [] };
      assert.equal(await a.heartbeat(busy, undefined), 'written');
      assert.equal(await a.heartbeat(idle, undefined), 'written');
      assert.equal(await store('another-fleet').heartbeat({ id: 'm-c', heartbeat: 1 }, undefined), 'written');
      await putRawItem(server.endpoint, table, { fleet: { S: 'round-trip' }, member: { S: 'stray' }, note: { S: 'no heartbeat' } });
      const members = await a.members();
      assert.deepEqual(
        members.sort((x, y) => x.id.localeCompare(y.id)),
        [busy, idle],
      );
      assert.deepEqual(warnings, [{ table, fleet: 'round-trip', skipped: 1 }]);
      // Stored in the table's layout, numbers as N.
      const client = dynamoClient(server.endpoint);
      const got = await client.send(new GetItemCommand({ TableName: table, Key: { fleet: { S: 'round-trip' }, member: { S: 'm-a' } } }));
      client.destroy();
      assert.deepEqual(got.Item?.['heartbeat'], { N: '1' });
      assert.deepEqual(got.Item?.['expiresAt'], { N: '1900000000' });
      assert.deepEqual(got.Item?.['busy'], { L: [{ S: 'q1' }, { S: 'https://sqs/q2' }] });
    });

    it('reads every page of a fleet larger than one Query page (1 MB)', async () => {
      const s = store('pages');
      // 60 items of about 20 KB each: over 1 MB, so the Query answers in pages.
      const busyQueues = Array.from({ length: 100 }, (_, i) => `https://sqs.us-east-1.amazonaws.com/123456789012/${'q'.repeat(140)}-${i}`);
      const ids = Array.from({ length: 60 }, (_, i) => `m-${String(i).padStart(2, '0')}`);
      for (const id of ids) assert.equal(await s.heartbeat({ id, heartbeat: 1, busyQueues }, undefined), 'written');
      const members = await s.members();
      assert.deepEqual(members.map((m) => m.id).sort(), ids);
      assert.ok(members.every((m) => m.busyQueues?.length === 100));
    });

    it('writes a heartbeat over the counter it last wrote, and refuses a stale one or a second first write', async () => {
      const s = store('conditions');
      assert.equal(await s.heartbeat({ id: 'm', heartbeat: 1 }, undefined), 'written');
      assert.equal(await s.heartbeat({ id: 'm', heartbeat: 2 }, 1), 'written');
      assert.equal(await s.heartbeat({ id: 'm', heartbeat: 3 }, 1), 'conflict');
      assert.equal(await s.heartbeat({ id: 'm', heartbeat: 3 }, undefined), 'conflict');
      assert.deepEqual(await s.members(), [{ id: 'm', heartbeat: 2 }]);
      // An item gone (expired by the TTL, or deleted) is written again over any previous.
      await s.leave('m');
      assert.equal(await s.heartbeat({ id: 'm', heartbeat: 9 }, 2), 'written');
    });

    it('lets exactly one of two simultaneous writes of one member with the same previous through, 20 times out of 20', async () => {
      const one = store('race');
      const two = store('race');
      let counter = 1;
      assert.equal(await one.heartbeat({ id: 'shared', heartbeat: counter }, undefined), 'written');
      const rounds: HeartbeatResult[][] = [];
      for (let round = 0; round < 20; round++) {
        const previous = counter;
        const results = await Promise.all([
          one.heartbeat({ id: 'shared', heartbeat: previous * 2 + 10 }, previous),
          two.heartbeat({ id: 'shared', heartbeat: previous * 2 + 11 }, previous),
        ]);
        rounds.push(results);
        const winner = results.indexOf('written');
        const stored = (await one.members())[0]?.heartbeat;
        assert.equal(stored, previous * 2 + 10 + winner, `round ${round}: the stored counter is the winner's`);
        counter = stored ?? counter;
      }
      const bad = rounds.map((r, i) => ({ round: i, results: r })).filter((r) => r.results.filter((x) => x === 'written').length !== 1);
      assert.deepEqual(bad, [], `${implementation.name}: every round one 'written' and one 'conflict'`);
    });

    it('lets exactly one of two simultaneous first writes of one member through, 20 times out of 20', async () => {
      const one = store('first-race');
      const two = store('first-race');
      for (let round = 0; round < 20; round++) {
        const id = `fresh-${round}`;
        const results = await Promise.all([one.heartbeat({ id, heartbeat: 1 }, undefined), two.heartbeat({ id, heartbeat: 2 }, undefined)]);
        assert.deepEqual([...results].sort(), ['conflict', 'written'], `round ${round}`);
      }
    });

    it('deletes a member that leaves; leaving again is no error', async () => {
      const s = store('leave');
      await s.heartbeat({ id: 'stays', heartbeat: 1 }, undefined);
      await s.heartbeat({ id: 'goes', heartbeat: 1 }, undefined);
      await s.leave('goes');
      assert.deepEqual(await s.members(), [{ id: 'stays', heartbeat: 1 }]);
      await s.leave('goes');
    });

    it('checks the table: the fleet layout passes; a missing table and a wrong key schema each give one line naming it', async () => {
      assert.equal(await store('check').checkTable(), undefined);
      const missing = uniqueTableName('wl-fleet-missing');
      const problem = await createFleetStore({
        table: missing,
        fleet: 'f',
        region: TEST_REGION,
        endpointUrl: server.endpoint,
      }).checkTable();
      assert.ok(problem !== undefined);
      oneLine(problem);
      assert.match(
        problem,
        new RegExp(`^DynamoDB refused DescribeTable on table ${missing} at ${server.endpoint}: ResourceNotFoundException`),
      );
      const wrong = uniqueTableName('wl-fleet-wrong');
      await createFleetTable(server.endpoint, wrong, 'wrong key schema');
      try {
        const s = createFleetStore({ table: wrong, fleet: 'f', region: TEST_REGION, endpointUrl: server.endpoint });
        assert.equal(
          await s.checkTable(),
          `DynamoDB table ${wrong} has the key schema HASH fleet (S) + RANGE member (N), not HASH fleet (S) + RANGE member (S)`,
        );
        s.destroy();
      } finally {
        await deleteTable(server.endpoint, wrong).catch(() => {});
      }
    });
  });
}

describe('the fleet store, where its calls go and when they fail', () => {
  it('sends its calls to AWS_ENDPOINT_URL_DYNAMODB when no --endpoint-url is given', async () => {
    const server = await startDynalite();
    const table = uniqueTableName('wl-fleet-env');
    await createFleetTable(server.endpoint, table);
    process.env['AWS_ENDPOINT_URL_DYNAMODB'] = server.endpoint;
    const s = createFleetStore({ table, fleet: 'env', region: TEST_REGION, endpointUrl: undefined });
    try {
      assert.equal(await s.checkTable(), undefined);
      assert.equal(await s.heartbeat({ id: 'm', heartbeat: 1 }, undefined), 'written');
      assert.deepEqual(await s.members(), [{ id: 'm', heartbeat: 1 }]);
      // There, not somewhere else: the item is in that server's table.
      const client = dynamoClient(server.endpoint);
      const got = await client.send(new GetItemCommand({ TableName: table, Key: { fleet: { S: 'env' }, member: { S: 'm' } } }));
      client.destroy();
      assert.deepEqual(got.Item?.['heartbeat'], { N: '1' });
      // And a failure names that endpoint.
      const missing = await createFleetStore({ table: 'absent', fleet: 'env', region: TEST_REGION, endpointUrl: undefined }).checkTable();
      assert.match(
        missing ?? '',
        new RegExp(`^DynamoDB refused DescribeTable on table absent at ${server.endpoint}: ResourceNotFoundException`),
      );
    } finally {
      delete process.env['AWS_ENDPOINT_URL_DYNAMODB'];
      s.destroy();
      await server.close();
    }
  });

  it('fails every call to a closed port with one line naming the endpoint, the operation and the table', async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const s = createFleetStore({ table: 't', fleet: 'f', region: TEST_REGION, endpointUrl: endpoint });
    try {
      const put = await rejection(s.heartbeat({ id: 'm', heartbeat: 1 }, undefined));
      oneLine(put.message);
      assert.match(put.message, new RegExp(`^cannot reach DynamoDB at ${endpoint} \\(PutItem on table t\\): connect ECONNREFUSED`));
      const query = await rejection(s.members());
      assert.match(query.message, new RegExp(`^cannot reach DynamoDB at ${endpoint} \\(Query on table t\\): connect ECONNREFUSED`));
      const leave = await rejection(s.leave('m'));
      assert.match(leave.message, new RegExp(`^cannot reach DynamoDB at ${endpoint} \\(DeleteItem on table t\\): connect ECONNREFUSED`));
      const check = await s.checkTable();
      assert.match(check ?? '', new RegExp(`^cannot reach DynamoDB at ${endpoint} \\(DescribeTable on table t\\): connect ECONNREFUSED`));
    } finally {
      s.destroy();
    }
  });

  // Each attempt is cut off after requestMs without an answer, and the SDK makes `attempts` of them.
  const bound = FLEET_CALL_LIMITS.attempts * FLEET_CALL_LIMITS.requestMs + 3_000;
  it(`gives up on a server that accepts and never answers within ${bound} ms`, { timeout: bound + 10_000 }, async () => {
    const mute = await startMuteServer();
    const s = createFleetStore({ table: 't', fleet: 'f', region: TEST_REGION, endpointUrl: mute.endpoint });
    try {
      const started = performance.now();
      const err = await rejection(s.heartbeat({ id: 'm', heartbeat: 1 }, undefined));
      const elapsed = performance.now() - started;
      oneLine(err.message);
      assert.match(err.message, new RegExp(`^cannot reach DynamoDB at ${mute.endpoint} \\(PutItem on table t\\): `));
      assert.ok(elapsed < bound, `rejected after ${Math.round(elapsed)} ms`);
      assert.ok(elapsed >= FLEET_CALL_LIMITS.requestMs, `waited for an answer first: ${Math.round(elapsed)} ms`);
      assert.equal(mute.connections(), FLEET_CALL_LIMITS.attempts, 'one connection per attempt');
      console.log(`mute server: rejected after ${Math.round(elapsed)} ms, ${mute.connections()} attempts: ${err.message}`);
    } finally {
      s.destroy();
      await mute.close();
    }
  });
});
