// `workerless check` against LocalStack (SQS, CloudWatch) and the test Lambda endpoint: one test per failing
// AWS check (missing queue, SQS access denied, missing function, refused PutMetricData), one all-ok run, and the
// comparisons the SQS trigger makes (a visibility timeout shorter than the function's timeout, --concurrency x
// --replicas over the reserved concurrency), a Managed Instances function, and reads the role may not make.
// Each asserts the exit code and the exact lines, and that the other checks still ran.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { after, afterEach, before, describe, it } from 'node:test';
import { ListMetricsCommand } from '@aws-sdk/client-cloudwatch';
import {
  cloudWatchClient,
  countMessages,
  createQueue,
  deleteQueue,
  localstackEndpoint,
  sendMessages,
  type TestQueue,
} from '../support/aws.ts';
import { runCli, type CliRun } from '../support/cli.ts';
import { awsTestEnv } from '../support/aws.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import {
  createFleetTable,
  dynamoClient,
  motoDynamoEndpoint,
  startDynalite,
  uniqueTableName,
  type DynamoServer,
} from '../support/dynamodb.ts';
import { ensureSqsServer, sqsServers } from '../support/sqs-servers.ts';

const record = fileURLToPath(new URL('../fixtures/functions/record.mjs', import.meta.url));
const NOTE =
  'note sqs:ReceiveMessage, sqs:DeleteMessage, sqs:ChangeMessageVisibility are needed by a run but not checked: only receiving (which hides messages) or changing messages could prove them';

/** Exit code and stdout lines; stderr must be empty (no stack trace, no log lines). */
async function outcome(run: CliRun): Promise<{ code: number | null; lines: string[] }> {
  const { code } = await run.exited;
  assert.equal(run.stderr(), '', 'nothing on stderr');
  return { code, lines: run.stdout().trimEnd().split('\n') };
}

describe('workerless check against LocalStack and the test Lambda endpoint', { timeout: 60_000 }, () => {
  let endpoint: LambdaEndpoint;
  let queue: TestQueue;
  let proxy: FaultProxy | undefined;
  /** A namespace of its own per test, so the CloudWatch assertion reads only this run's datum. */
  let name: string;
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({
      handlerOutput: 'ignore',
      functions: {
        record: { handler: record },
        long: { handler: record, timeoutSec: 60 },
        capped: { handler: record, reservedConcurrency: 4 },
        managed: {
          handler: record,
          timeoutSec: 60,
          configuration: {
            managedInstances: {
              capacityProviderArn: 'arn:aws:lambda:us-east-1:000000000000:capacity-provider:fleet',
              perExecutionEnvironmentMaxConcurrency: 32,
              published: { timeoutSec: 5 },
            },
          },
        },
        locked: { handler: record, configuration: { deny: ['GetFunctionConfiguration', 'GetFunctionConcurrency'] } },
      },
    });
    queue = await createQueue('wl-check');
  });
  after(async () => {
    await endpoint.stop();
    await deleteQueue(queue.url);
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
    endpoint.reset();
  });
  const check = (args: string[], env: Record<string, string> = {}): CliRun => {
    name = `check-${randomUUID().slice(0, 8)}`;
    return runCli(['check', '--name', name, ...args], { ...awsTestEnv({ lambdaEndpoint: endpoint.url }), ...env });
  };
  const queueOk = () => `ok   queue ${queue.name} (${queue.url}, fifo: no, visibility 30 s)`;
  /** The lines the reads of the `record` function (3 s timeout, no reserved concurrency) add. */
  const recordFits = () => [
    `ok   queue ${queue.name} visibility (30 s is at least 6x function record's timeout of 3 s)`,
    "ok   function record concurrency (--concurrency 10 x 1 replica = 10; no reserved concurrency, so it shares the account's unreserved concurrency)",
  ];
  const RECORD_CONFIGURATION = 'ok   function record configuration (timeout 3 s, runs $LATEST)';

  it('all ok: exit 0, one line per check, the CheckRun datum in CloudWatch, and no message received', async () => {
    await sendMessages(queue.url, ['stays']);
    const { code, lines } = await outcome(check(['--function', 'record', '--queues', queue.name]));
    assert.equal(code, 0, lines.join('\n'));
    assert.deepEqual(lines, [
      queueOk(),
      'ok   function record (DryRun invoke allowed)',
      RECORD_CONFIGURATION,
      ...recordFits(),
      `ok   metrics Workerless-${name} (PutMetricData allowed; sent CheckRun = 1)`,
      NOTE,
    ]);
    // DryRun ran nothing; the message is still there and visible: the check received nothing.
    assert.equal(endpoint.invocations.length, 0);
    assert.deepEqual(
      endpoint.rejected.map((r) => [r.functionName, r.statusCode]),
      [['record', 204]],
    );
    assert.equal(await countMessages(queue.url), 1);
    const metrics = await cloudWatchClient().send(new ListMetricsCommand({ Namespace: `Workerless-${name}` }));
    assert.deepEqual(
      metrics.Metrics?.map((m) => m.MetricName),
      ['CheckRun'],
    );
  });

  it('a missing queue: exit 1, the queue named with the SQS error, every other check still run', async () => {
    const missing = `wl-check-missing-${randomUUID().slice(0, 8)}`;
    const { code, lines } = await outcome(check(['--function', 'record', '--queues', `${queue.name},${missing}`]));
    assert.equal(code, 1);
    assert.deepEqual(lines, [
      queueOk(),
      `FAIL queue ${missing}: does not exist (QueueDoesNotExist)`,
      'ok   function record (DryRun invoke allowed)',
      RECORD_CONFIGURATION,
      ...recordFits(),
      `ok   metrics Workerless-${name} (PutMetricData allowed; sent CheckRun = 1)`,
      NOTE,
    ]);
  });

  it('SQS access denied: exit 1, naming the IAM actions the queue needs', async () => {
    proxy = await startFaultProxy({ upstream: localstackEndpoint() });
    proxy.inject({ operation: 'GetQueueUrl', fault: { kind: 'status', status: 403, errorType: 'AccessDenied' } });
    const { code, lines } = await outcome(
      check(['--function', 'record', '--queues', queue.name, '--metrics', 'off'], { AWS_ENDPOINT_URL_SQS: proxy.url }),
    );
    assert.equal(code, 1);
    assert.deepEqual(lines, [
      `FAIL queue ${queue.name}: access denied (needs sqs:GetQueueUrl, sqs:GetQueueAttributes)`,
      'ok   function record (DryRun invoke allowed)',
      RECORD_CONFIGURATION,
      recordFits()[1]!,
      NOTE,
    ]);
    assert.equal(proxy.calls('GetQueueUrl').length, 1);
    assert.equal(proxy.calls('GetQueueAttributes').length, 0);
  });

  it('a missing function: exit 1 (the endpoint answered 404), the queue and metrics checks still ok', async () => {
    const { code, lines } = await outcome(check(['--function', 'no-such-fn', '--queues', queue.name]));
    assert.equal(code, 1);
    assert.deepEqual(lines, [
      queueOk(),
      'FAIL function no-such-fn: does not exist (ResourceNotFoundException)',
      `ok   metrics Workerless-${name} (PutMetricData allowed; sent CheckRun = 1)`,
      NOTE,
    ]);
    assert.deepEqual(
      endpoint.rejected.map((r) => [r.functionName, r.statusCode]),
      [['no-such-fn', 404]],
    );
  });

  it('PutMetricData refused (403 AccessDeniedException): exit 1, naming cloudwatch:PutMetricData', async () => {
    proxy = await startFaultProxy({ upstream: localstackEndpoint() });
    proxy.inject({ operation: 'PutMetricData', fault: { kind: 'status', status: 403, errorType: 'AccessDeniedException' } });
    const { code, lines } = await outcome(
      check(['--function', 'record', '--queues', queue.name], { AWS_ENDPOINT_URL_CLOUDWATCH: proxy.url }),
    );
    assert.equal(code, 1);
    assert.deepEqual(lines, [
      queueOk(),
      'ok   function record (DryRun invoke allowed)',
      RECORD_CONFIGURATION,
      ...recordFits(),
      `FAIL metrics Workerless-${name}: access denied (needs cloudwatch:PutMetricData)`,
      NOTE,
    ]);
    assert.deepEqual(
      proxy.calls('PutMetricData').map((c) => c.status),
      [403],
    );
  });

  it("issue 23's proof: a visibility timeout shorter than the function's timeout fails (exit 1); 6x passes", async () => {
    const short = await outcome(check(['--function', 'long', '--queues', queue.name, '--metrics', 'off']));
    assert.equal(short.code, 1, short.lines.join('\n'));
    assert.deepEqual(short.lines, [
      queueOk(),
      'ok   function long (DryRun invoke allowed)',
      'ok   function long configuration (timeout 60 s, runs $LATEST)',
      `FAIL queue ${queue.name} visibility: 30 s is shorter than function long's timeout of 60 s: a message could be received or invoked again while its invocation still runs (Lambda's SQS trigger refuses this); set it to at least 360 s, 6x, as AWS advises`,
      "ok   function long concurrency (--concurrency 10 x 1 replica = 10; no reserved concurrency, so it shares the account's unreserved concurrency)",
      NOTE,
    ]);
    assert.deepEqual(
      // The two reads run concurrently: compared in name order.
      endpoint.reads.map((r) => [r.operation, r.functionName, r.qualifier, r.statusCode]).sort(),
      [
        ['GetFunctionConcurrency', 'long', undefined, 200],
        ['GetFunctionConfiguration', 'long', undefined, 200],
      ],
    );
    const covered = await outcome(check(['--function', 'long', '--queues', queue.name, '--metrics', 'off', '--visibility-timeout', '360']));
    assert.equal(covered.code, 0, covered.lines.join('\n'));
    assert.ok(
      covered.lines.includes(
        `ok   queue ${queue.name} visibility (360 s (--visibility-timeout) is at least 6x function long's timeout of 60 s)`,
      ),
      covered.lines.join('\n'),
    );
  });

  for (const client of ['lean', 'sdk'] as const) {
    it(`a Managed Instances function (--aws-client ${client}): named, and its $LATEST.PUBLISHED read and compared`, async () => {
      const { code, lines } = await outcome(
        check(['--function', 'managed', '--queues', queue.name, '--metrics', 'off', '--aws-client', client]),
      );
      assert.equal(code, 0, lines.join('\n'));
      assert.deepEqual(lines, [
        queueOk(),
        'ok   function managed (DryRun invoke allowed)',
        'ok   function managed configuration (Lambda Managed Instances (capacity provider fleet, up to 32 invocations per execution environment); an unqualified invoke runs $LATEST.PUBLISHED (timeout 5 s))',
        // $LATEST's 60 s would fail against 30 s; the version that runs has 5 s.
        `ok   queue ${queue.name} visibility (30 s is at least 6x function managed's timeout of 5 s)`,
        "ok   function managed concurrency (--concurrency 10 x 1 replica = 10; no reserved concurrency, so it shares the account's unreserved concurrency)",
        NOTE,
      ]);
      assert.deepEqual(
        endpoint.reads.filter((r) => r.operation === 'GetFunctionConfiguration').map((r) => [r.functionName, r.qualifier]),
        [
          ['managed', undefined],
          ['managed', '$LATEST.PUBLISHED'],
        ],
      );
    });
  }

  it('GetFunctionConfiguration and GetFunctionConcurrency not allowed: a warn line each naming the permission, exit 0', async () => {
    const { code, lines } = await outcome(check(['--function', 'locked', '--queues', queue.name, '--metrics', 'off']));
    assert.equal(code, 0, lines.join('\n'));
    assert.deepEqual(lines, [
      queueOk(),
      'ok   function locked (DryRun invoke allowed)',
      "warn function locked configuration: access denied (needs lambda:GetFunctionConfiguration); so its timeout and version are not checked, nor its queues' visibility timeout against its timeout",
      'warn function locked concurrency: access denied (needs lambda:GetFunctionConcurrency); so --concurrency is not compared with its reserved concurrency',
      NOTE,
    ]);
    assert.deepEqual(endpoint.reads.map((r) => [r.operation, r.statusCode]).sort(), [
      ['GetFunctionConcurrency', 403],
      ['GetFunctionConfiguration', 403],
    ]);
  });

  it('--concurrency x --replicas over the reserved concurrency: a warning naming both numbers, exit 0', async () => {
    const { code, lines } = await outcome(
      check(['--function', 'capped', '--queues', queue.name, '--metrics', 'off', '--concurrency', '3', '--replicas', '2']),
    );
    assert.equal(code, 0, lines.join('\n'));
    assert.ok(
      lines.includes(
        'warn function capped concurrency: --concurrency 3 x 2 replicas = 6 exceeds its reserved concurrency of 4: Lambda throttles invocations beyond 4 (429, retried); lower --concurrency or --replicas, or set --adaptive-concurrency',
      ),
      lines.join('\n'),
    );
  });

  describe('--fleet-table (issue 40)', () => {
    let dynalite: DynamoServer;
    before(async () => {
      dynalite = await startDynalite();
      await ensureSqsServer(sqsServers().find((server) => server.name === 'moto')!);
    });
    after(async () => dynalite.close());
    const items = async (dynamo: string, table: string, fleet: string) =>
      (
        await dynamoClient(dynamo).send(
          new QueryCommand({
            TableName: table,
            KeyConditionExpression: '#f = :f',
            ExpressionAttributeNames: { '#f': 'fleet' },
            ExpressionAttributeValues: { ':f': { S: fleet } },
          }),
        )
      ).Items ?? [];

    for (const which of ['moto', 'dynalite'] as const) {
      it(`${which}: the table checked with the four actions a replica needs, the probe item in a partition of its own and gone after`, async () => {
        const dynamo = which === 'moto' ? motoDynamoEndpoint() : dynalite.endpoint;
        const table = uniqueTableName('wl-check-fleet');
        await createFleetTable(dynamo, table);
        const args = [
          '--function',
          'record',
          '--queues',
          queue.name,
          '--metrics',
          'off',
          '--fleet-table',
          table,
          '--fleet-name',
          'payments',
        ];
        const { code, lines } = await outcome(check(args, { AWS_ENDPOINT_URL_DYNAMODB: dynamo }));
        assert.equal(code, 0, lines.join('\n'));
        const line = lines.find((l) => l.includes(`fleet table ${table}`));
        assert.match(
          line ?? '',
          new RegExp(
            `^ok   fleet table ${table} \\(key schema fleet \\+ member; fleet payments: 0 member items \\(Query\\); wrote and deleted the probe item workerless-check-[0-9a-f]{8} in partition workerless-check-probe \\(PutItem, DeleteItem\\)\\)$`,
          ),
          lines.join('\n'),
        );
        assert.deepEqual(await items(dynamo, table, 'payments'), [], 'nothing in the fleet');
        assert.deepEqual(await items(dynamo, table, 'workerless-check-probe'), [], 'the probe item is gone');

        const missing = uniqueTableName('wl-check-missing');
        const failed = await outcome(
          check(['--function', 'record', '--queues', queue.name, '--metrics', 'off', '--fleet-table', missing], {
            AWS_ENDPOINT_URL_DYNAMODB: dynamo,
          }),
        );
        assert.equal(failed.code, 1);
        const fail = failed.lines.find((l) => l.includes(`fleet table ${missing}`)) ?? failed.lines.join('\n');
        assert.match(fail, new RegExp(`^FAIL fleet table ${missing}: .*DescribeTable on table ${missing}.*${new URL(dynamo).host}`));
        assert.ok(
          failed.lines.some((l) => l.startsWith(`ok   queue ${queue.name}`)),
          'the other checks still ran',
        );

        const wrong = uniqueTableName('wl-check-wrong');
        await createFleetTable(dynamo, wrong, 'wrong key schema');
        const refused = await outcome(
          check(['--function', 'record', '--queues', queue.name, '--metrics', 'off', '--fleet-table', wrong], {
            AWS_ENDPOINT_URL_DYNAMODB: dynamo,
          }),
        );
        assert.equal(refused.code, 1);
        assert.ok(
          refused.lines.some((l) => l.startsWith(`FAIL fleet table ${wrong}: DynamoDB table ${wrong} has the key schema`)),
          refused.lines.join('\n'),
        );
      });
    }
  });
});
