// The fleet store's own client (src/aws/fleet-store.ts) against a canned DynamoDB answerer on 127.0.0.1: the calls
// it sends, their answers mapped back, the endpoint each failure names, a warning once for stray items, and
// destroy(). test/integration/fleet-store.test.ts runs it against moto and dynalite.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { Logger } from 'pino';
import { createFleetStore } from '../../../src/aws/fleet-store.ts';
import { freePort } from '../../support/http.ts';

Object.assign(process.env, {
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_CONFIG_FILE: '/dev/null',
  AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
});

interface Received {
  readonly operation: string;
  readonly body: Record<string, unknown>;
}

describe('fleet store client', () => {
  const received: Received[] = [];
  let answer: (operation: string) => { status: number; body: unknown } = () => ({ status: 200, body: {} });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const operation = String(req.headers['x-amz-target']).replace('DynamoDB_20120810.', '');
      received.push({ operation, body: JSON.parse(text) as Record<string, unknown> });
      const a = answer(operation);
      res.writeHead(a.status, { 'content-type': 'application/x-amz-json-1.0' }).end(JSON.stringify(a.body));
    });
  });
  let endpoint: string;
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('sends each call to --endpoint-url and maps the answers', async () => {
    const warnings: unknown[] = [];
    const logger = { warn: (fields: unknown) => warnings.push(fields) } as unknown as Logger;
    const store = createFleetStore({ table: 't', fleet: 'f', region: 'us-east-1', endpointUrl: endpoint, logger });
    answer = (operation) =>
      operation === 'Query'
        ? { status: 200, body: { Items: [{ fleet: { S: 'f' }, member: { S: 'm' }, heartbeat: { N: '3' } }, { member: { S: 'x' } }] } }
        : { status: 200, body: {} };
    assert.equal(await store.heartbeat({ id: 'm', heartbeat: 3 }, 2), 'written');
    assert.deepEqual(await store.members(), [{ id: 'm', heartbeat: 3 }]);
    assert.deepEqual(await store.members(), [{ id: 'm', heartbeat: 3 }]);
    assert.deepEqual(warnings, [{ table: 't', fleet: 'f', skipped: 1 }], 'warned once');
    await store.leave('m');
    assert.deepEqual(
      received.splice(0).map((r) => [r.operation, r.body['TableName']]),
      [
        ['PutItem', 't'],
        ['Query', 't'],
        ['Query', 't'],
        ['DeleteItem', 't'],
      ],
    );
    answer = () => ({
      status: 400,
      body: { __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException', message: 'The conditional request failed' },
    });
    assert.equal(await store.heartbeat({ id: 'm', heartbeat: 4 }, 3), 'conflict');
    answer = () => ({
      status: 400,
      body: { __type: 'com.amazonaws.dynamodb.v20120810#ResourceNotFoundException', message: 'Requested resource not found' },
    });
    assert.equal(
      await store.checkTable(),
      `DynamoDB refused DescribeTable on table t at ${endpoint}: ResourceNotFoundException: Requested resource not found`,
    );
    await assert.rejects(store.members(), {
      message: `DynamoDB refused Query on table t at ${endpoint}: ResourceNotFoundException: Requested resource not found`,
    });
    received.length = 0;
    store.destroy();
  });

  it('names the endpoint that refused the connection', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const store = createFleetStore({ table: 't', fleet: 'f', region: 'us-east-1', endpointUrl: closed });
    await assert.rejects(store.leave('m'), (err: Error) =>
      err.message.startsWith(`cannot reach DynamoDB at ${closed} (DeleteItem on table t): `),
    );
    store.destroy();
  });

  it('a call after destroy() ends, answered or failed, and does not hang', async () => {
    const store = createFleetStore({ table: 't', fleet: 'f', region: 'us-east-1', endpointUrl: endpoint });
    store.destroy();
    answer = () => ({ status: 200, body: {} });
    const outcome = await store.checkTable();
    assert.equal(typeof outcome, 'string');
  });
});
