// Issue 40's bad input for a fleet, with real processes: a denied DynamoDB action, and a table keyed otherwise, is
// one line naming the table and the action, from the daemon at start-up (exit 1, no stack trace) and from
// `workerless check` (its FAIL line, exit 1). The denial comes from a proxy in front of dynalite that answers the
// chosen operation as DynamoDB answers an action IAM does not allow (test/support/dynamodb.ts startDenyingProxy,
// the shape of "Error handling with DynamoDB"). moto's server can enforce IAM policies (INITIAL_NO_AUTH_ACTION_COUNT
// and an IAM user's access key), but answers a denial as an XML ErrorResponse with HTTP 403, a shape DynamoDB
// never sends and the SDK cannot read ("Deserialization error"), so it cannot stand for AWS here.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { createQueue, sqsClient, type TestQueue } from '../support/aws.ts';
import { awsTestEnv } from '../support/aws.ts';
import { runCli, type CliRun } from '../support/cli.ts';
import { startIdleDaemon } from '../support/daemon.ts';
import {
  createFleetTable,
  dynamoClient,
  startDenyingProxy,
  startDynalite,
  uniqueTableName,
  type DynamoServer,
} from '../support/dynamodb.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureSqsServer, sqsServers, type SqsServer } from '../support/sqs-servers.ts';

/** The line fleet-call.ts makes of an AccessDeniedException, up to IAM's message. */
const deniedLine = (operation: string, table: string, endpoint: string) =>
  `DynamoDB refused ${operation} on table ${table} at ${endpoint}: access denied (needs dynamodb:${operation}): AccessDeniedException: ` +
  `User: arn:aws:sts::123456789012:assumed-role/workerless-task/test is not authorized to perform: dynamodb:${operation} on resource: `;

describe('a fleet denied a DynamoDB action, or given a table keyed otherwise (issue 40)', { concurrency: true, timeout: 120_000 }, () => {
  let endpoint: LambdaEndpoint;
  let dynalite: DynamoServer;
  let sqs: SqsServer;
  let queue: TestQueue;
  before(async () => {
    endpoint = await startLambdaEndpoint({ functions: { echo: { handler: functionFixture('echo.mjs') } } });
    dynalite = await startDynalite();
    sqs = sqsServers().find((s) => s.name === 'ElasticMQ')!;
    await ensureSqsServer(sqs);
    queue = await createQueue('wl-fleet-denied', {}, sqsClient(sqs.endpoint));
  });
  after(async () => {
    await endpoint.stop();
    await dynalite.close();
  });

  /** The fleet's items in `table`, read past the proxy. */
  const items = async (table: string, fleet: string) =>
    (
      await dynamoClient(dynalite.endpoint).send(
        new QueryCommand({
          TableName: table,
          KeyConditionExpression: '#f = :f',
          ExpressionAttributeNames: { '#f': 'fleet' },
          ExpressionAttributeValues: { ':f': { S: fleet } },
          ConsistentRead: true,
        }),
      )
    ).Items ?? [];

  /** The daemon at start-up against `dynamo`: its exit, its stderr, all it said. */
  async function daemon(table: string, dynamo: string): Promise<{ code: number | null; stderr: string; said: string; run: CliRun }> {
    const run = startIdleDaemon(
      endpoint.url,
      sqs.endpoint,
      ['--function', 'echo', '--queues', queue.name, '--fleet-table', table, '--fleet-name', table, '--fleet-heartbeat', '2s'],
      { AWS_ENDPOINT_URL_DYNAMODB: dynamo },
    );
    const timer = setTimeout(() => run.child.kill('SIGKILL'), 30_000);
    const { code } = await run.exited;
    clearTimeout(timer);
    return { code, stderr: run.stderr(), said: `${run.stdout()}\n${run.stderr()}`, run };
  }

  /** `workerless check` against `dynamo`: its exit and its stdout lines (stderr must be empty). */
  async function check(table: string, dynamo: string): Promise<{ code: number | null; lines: string[] }> {
    const run = runCli(['check', '--function', 'echo', '--queues', queue.name, '--metrics', 'off', '--fleet-table', table], {
      ...awsTestEnv({ lambdaEndpoint: endpoint.url }),
      AWS_ENDPOINT_URL_SQS: sqs.endpoint,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo,
    });
    const { code } = await run.exited;
    assert.equal(run.stderr(), '', 'nothing on stderr');
    return { code, lines: run.stdout().trimEnd().split('\n') };
  }

  for (const operation of ['PutItem', 'Query', 'DescribeTable'] as const) {
    it(`${operation} denied: the daemon stops at start-up with one line naming the table and the action, exit 1`, async () => {
      const table = uniqueTableName('wl-fleet-denied');
      await createFleetTable(dynalite.endpoint, table);
      const proxy = await startDenyingProxy(dynalite.endpoint, [operation]);
      try {
        const { code, stderr, said } = await daemon(table, proxy.endpoint);
        assert.equal(code, 1, said);
        const lines = stderr.trimEnd().split('\n');
        assert.equal(lines.length, 1, `one line: ${stderr}`);
        assert.ok(lines[0]!.startsWith(`workerless: ${deniedLine(operation, table, proxy.endpoint)}`), said);
        assert.doesNotMatch(said, /\n\s+at /, 'no stack trace');
        assert.doesNotMatch(said, /workerless started/, 'no route started');
        // Query is refused after the heartbeat's PutItem landed: the item is deleted, or the peers would count a
        // replica that is gone for 3 heartbeats and leave its queues unpolled.
        if (operation === 'Query') assert.deepEqual(proxy.calls.slice(-3), ['PutItem', 'Query', 'DeleteItem']);
        assert.deepEqual(await items(table, table), [], 'no member item left behind');
      } finally {
        await proxy.close();
      }
    });
  }

  it('a table keyed otherwise: the daemon stops at start-up with one line naming the table and its key schema, exit 1', async () => {
    const table = uniqueTableName('wl-fleet-keys');
    await createFleetTable(dynalite.endpoint, table, 'wrong key schema');
    const { code, stderr, said, run } = await daemon(table, dynalite.endpoint);
    assert.equal(code, 1, said);
    // The start-up line names where the table's calls go, as the SDK resolves AWS_ENDPOINT_URL_DYNAMODB.
    const line = run.logs().find((l) => l['msg'] === 'AWS endpoints');
    assert.equal(line?.['dynamodb'], dynalite.endpoint, said);
    assert.equal(
      stderr,
      `workerless: DynamoDB table ${table} has the key schema HASH fleet (S) + RANGE member (N), not HASH fleet (S) + RANGE member (S)\n`,
    );
    assert.doesNotMatch(said, /\n\s+at /, 'no stack trace');
  });

  for (const operation of ['DescribeTable', 'Query', 'PutItem', 'DeleteItem'] as const) {
    it(`${operation} denied: workerless check fails the fleet table's line naming the action, exit 1`, async () => {
      const table = uniqueTableName('wl-check-denied');
      await createFleetTable(dynalite.endpoint, table);
      const proxy = await startDenyingProxy(dynalite.endpoint, [operation]);
      try {
        const { code, lines } = await check(table, proxy.endpoint);
        assert.equal(code, 1, lines.join('\n'));
        const line = lines.find((l) => l.includes(`fleet table ${table}`)) ?? lines.join('\n');
        assert.ok(line.startsWith(`FAIL fleet table ${table}: ${deniedLine(operation, table, proxy.endpoint)}`), line);
        assert.ok(
          lines.some((l) => l.startsWith(`ok   queue ${queue.name}`)),
          'the other checks still ran',
        );
      } finally {
        await proxy.close();
      }
    });
  }
});
