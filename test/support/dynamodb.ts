// The DynamoDB implementations the fleet store's tests run against: moto's server (the one scripts/sqs-servers.sh
// starts for SQS serves every service) and dynalite, in this process (a dev dependency: nothing to install), plus
// the tables and the broken endpoints those tests need. No module-level state: test files run in parallel.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { createServer, type Socket } from 'node:net';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  type AttributeValue,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { TEST_CREDENTIALS, TEST_REGION } from './aws.ts';

export interface DynamoServer {
  readonly endpoint: string;
  close(): Promise<void>;
}

/** dynalite (CommonJS, no types, so loaded by require, which knip cannot see: knip.json names it): an http.Server over an in-memory store; tables are ACTIVE at once. */
type Dynalite = (options: { createTableMs?: number; deleteTableMs?: number; updateTableMs?: number }) => Server;

/** A dynalite server on a free port of 127.0.0.1. */
export async function startDynalite(): Promise<DynamoServer> {
  const dynalite = createRequire(import.meta.url)('dynalite') as Dynalite;
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('dynalite has no port');
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** moto's server: MOTO_ENDPOINT, else MOTO_PORT on 127.0.0.1 (default 5055, as scripts/sqs-servers.sh). */
export function motoDynamoEndpoint(): string {
  return process.env['MOTO_ENDPOINT'] ?? `http://127.0.0.1:${process.env['MOTO_PORT'] ?? '5055'}`;
}

/** A DynamoDBClient for tests at `endpoint`, with the test credentials and one attempt. */
export function dynamoClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({ endpoint, region: TEST_REGION, credentials: TEST_CREDENTIALS, maxAttempts: 1 });
}

/** Why `endpoint` does not serve DynamoDB (ListTables fails), or undefined when it does. */
export async function dynamoProblem(endpoint: string): Promise<string | undefined> {
  const client = dynamoClient(endpoint);
  try {
    await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(3_000) });
    return undefined;
  } catch (err) {
    return `ListTables failed: ${(err as Error).name}: ${(err as Error).message}`;
  } finally {
    client.destroy();
  }
}

export function uniqueTableName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/**
 * Creates a table with the fleet's layout (src/core/fleet-store.ts: HASH fleet S, RANGE member S), on demand, or
 * with `keys: 'wrong key schema'` one keyed HASH fleet S + RANGE member N, which checkTable() must refuse.
 */
export async function createFleetTable(endpoint: string, name: string, keys: 'fleet' | 'wrong key schema' = 'fleet'): Promise<void> {
  const client = dynamoClient(endpoint);
  try {
    await client.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [
          { AttributeName: 'fleet', KeyType: 'HASH' },
          { AttributeName: 'member', KeyType: 'RANGE' },
        ],
        AttributeDefinitions: [
          { AttributeName: 'fleet', AttributeType: 'S' },
          { AttributeName: 'member', AttributeType: keys === 'fleet' ? 'S' : 'N' },
        ],
      }),
    );
  } finally {
    client.destroy();
  }
}

export async function deleteTable(endpoint: string, name: string): Promise<void> {
  const client = dynamoClient(endpoint);
  try {
    await client.send(new DeleteTableCommand({ TableName: name }));
  } finally {
    client.destroy();
  }
}

/** Writes an item as is, past the store: a stray item another tool left in the fleet's partition. */
export async function putRawItem(endpoint: string, table: string, item: Record<string, AttributeValue>): Promise<void> {
  const client = dynamoClient(endpoint);
  try {
    await client.send(new PutItemCommand({ TableName: table, Item: item }));
  } finally {
    client.destroy();
  }
}

/** A TCP server that accepts every connection and never answers (nor closes it): a dead endpoint behind a live port. */
export async function startMuteServer(): Promise<DynamoServer & { connections(): number }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    connections: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A proxy in front of a DynamoDB server that refuses some operations as IAM does (startDenyingProxy). */
export interface DenyingProxy extends DynamoServer {
  /** The operations (X-Amz-Target's, e.g. PutItem) that reached the proxy, in order, denied or not. */
  readonly calls: string[];
}

/**
 * An HTTP proxy in front of `upstream` (dynalite or moto) that answers each operation in `denied` as DynamoDB
 * answers an action the caller's policy does not allow, and forwards everything else. The answer's shape is the one
 * "Error handling with DynamoDB" (DynamoDB Developer Guide, "Error components") shows: HTTP 400,
 * `Content-Type: application/x-amz-json-1.0`, an `x-amzn-RequestId`, and a body of `__type`
 * (`com.amazonaws.dynamodb.v20120810#AccessDeniedException`; AccessDeniedException is in the page's HTTP 400 list,
 * "retry? no") and `message`, worded as IAM words an implicit deny.
 */
export async function startDenyingProxy(upstream: string, denied: readonly string[]): Promise<DenyingProxy> {
  const target = new URL(upstream);
  const calls: string[] = [];
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? 'Unknown';
      calls.push(operation);
      if (denied.includes(operation)) {
        const table = (JSON.parse(body.toString() || '{}') as { TableName?: string }).TableName ?? '?';
        const answer = JSON.stringify({
          __type: 'com.amazonaws.dynamodb.v20120810#AccessDeniedException',
          message:
            `User: arn:aws:sts::123456789012:assumed-role/workerless-task/test is not authorized to perform: dynamodb:${operation} ` +
            `on resource: arn:aws:dynamodb:${TEST_REGION}:123456789012:table/${table} because no identity-based policy allows the dynamodb:${operation} action`,
        });
        res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': randomUUID() });
        res.end(answer);
        return;
      }
      const forward = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
