// Issue 22, tenant-isolated functions: the built CLI with --tenant-id-from against LocalStack SQS and the test
// Lambda endpoint's model of tenant isolation mode (test/support/lambda-endpoint/tenancy.ts). The function is
// tenant.mjs, which fails in an execution environment that serves a second tenant or none. AWS's pages:
// "Invoking Lambda functions with tenant isolation" (a tenant id on every invoke) and "Tenant isolation" (one
// tenant per environment), both in the Lambda Developer Guide; SQS fair queues take the tenant key in MessageGroupId
// on a standard queue (SQS Developer Guide, "Amazon SQS fair queues").
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { countMessages, createQueueWithDlq, drainQueue, sendMessages, sqsClient, type TestQueue } from '../support/aws.ts';
import { problems, startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { functionFixture } from '../support/functions.ts';
import { freePort, get } from '../support/http.ts';
import { startLambdaEndpoint, type InvocationRecord, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { runsByMessage, sqsRecords, succeededIds } from '../support/message-runs.ts';
import { ensureLocalStack } from '../support/localstack.ts';

interface TenantRecord {
  messageId: string;
  attributes: Record<string, string>;
  messageAttributes: Record<string, { stringValue?: string }>;
}
const records = (inv: InvocationRecord): TenantRecord[] => sqsRecords(inv) as unknown as TenantRecord[];

/** Every invocation of `queue` carried exactly one tenant, the one of each of its records (by `tenantOf`), and succeeded. */
function assertOneTenantEach(endpoint: LambdaEndpoint, queue: TestQueue, tenantOf: (r: TenantRecord) => string | undefined): void {
  const invocations = endpoint.invocations.filter((i) => sqsRecords(i).some((r) => r.eventSourceARN === queue.arn));
  assert.ok(invocations.length > 0);
  for (const inv of invocations) {
    assert.ok(inv.tenantId !== undefined, `invocation ${inv.requestId} carried no tenant id`);
    assert.deepEqual([...new Set(records(inv).map(tenantOf))], [inv.tenantId], `invocation ${inv.requestId}: one tenant, its own`);
    // tenant.mjs throws when an environment serves a second tenant: every run succeeded, so none did.
    assert.equal(inv.status, 'success', JSON.stringify(inv.error));
  }
}

describe('tenant-isolated functions (--tenant-id-from, issue 22)', { timeout: 180_000 }, () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({
      functions: { saas: { handler: functionFixture('tenant.mjs'), tenancy: { TenantIsolationMode: 'PER_TENANT' } } },
    });
  });
  after(() => endpoint.stop());

  it('fair queue, tenant from MessageGroupId: one tenant per invocation, every message once, the untenanted counted and redriven', async () => {
    const { queue, dlq } = await createQueueWithDlq('wl-tenant-fair', 2, { VisibilityTimeout: '2' });
    const sqs = sqsClient();
    const tenants = ['acme', 'globex', 'initech', 'umbrella'];
    const tenanted: string[] = [];
    const untenanted: string[] = [];
    for (let i = 0; i < 60; i++) {
      // Every twelfth message has no MessageGroupId, hence no tenant.
      const group = i % 12 === 5 ? undefined : tenants[i % tenants.length];
      const sent = await sqs.send(
        new SendMessageCommand({ QueueUrl: queue.url, MessageBody: `m-${i}`, ...(group !== undefined ? { MessageGroupId: group } : {}) }),
      );
      (group === undefined ? untenanted : tenanted).push(sent.MessageId!);
    }
    const port = await freePort();
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'saas',
      '--queues',
      queue.name,
      '--tenant-id-from',
      'group',
      '--batch-size',
      '10',
      '--concurrency',
      '3',
      '--http-port',
      String(port),
    ]);
    await started(daemon);
    // The start-up DryRun named a tenant: the endpoint answered 204, not a refusal.
    assert.deepEqual(
      endpoint.rejected.filter((r) => r.functionName === 'saas').map((r) => r.statusCode),
      [204],
    );
    await until(() => succeededIds(endpoint, queue.arn).size === tenanted.length, 60_000, 'every tenanted message processed', 200);
    // The untenanted ones are received maxReceiveCount (2) times, then SQS moves them to the DLQ.
    const inDlq: string[] = [];
    await until(
      async () => {
        inDlq.push(...(await drainQueue(dlq.url, { waitTimeSec: 0 })).map((m) => m.MessageId!));
        return inDlq.length >= untenanted.length && (await countMessages(queue.url)) === 0;
      },
      60_000,
      'the untenanted messages in the DLQ',
      500,
    );
    const metrics = (await get(`http://127.0.0.1:${port}`, '/metrics'))!.body;
    assert.equal(await stopDaemon(daemon), 0, problems(daemon));

    assertOneTenantEach(endpoint, queue, (r) => r.attributes['MessageGroupId']);
    const runs = runsByMessage(endpoint, queue.arn);
    assert.deepEqual([...runs.keys()].sort(), [...tenanted].sort(), 'every tenanted message invoked, no untenanted one');
    assert.deepEqual(
      [...runs.entries()].filter(([, r]) => r.length !== 1).map(([id]) => id),
      [],
      'each message invoked once',
    );
    assert.deepEqual([...inDlq].sort(), [...untenanted].sort(), 'the untenanted ones: not lost, in the DLQ');
    // Counted and logged by message id with the option, at each receive.
    const lines = daemon
      .logs()
      .filter((l) => l['msg'] === 'no tenant id for a tenant-isolated function; messages stay on the queue for its redrive');
    assert.deepEqual([...new Set(lines.flatMap((l) => l['messageIds'] as string[]))].sort(), [...untenanted].sort());
    assert.ok(lines.every((l) => l['option'] === '--tenant-id-from' && l['tenantIdFrom'] === 'group'));
    const counted = Number(/^workerless_no_tenant_events_total\{[^}]*\} (\d+)$/m.exec(metrics)?.[1]);
    assert.equal(counted, lines.flatMap((l) => l['messageIds'] as string[]).length);
    assert.ok(counted >= untenanted.length, metrics);
  });

  it('FIFO queue, tenant from an attribute: one tenant per invocation, each group in order, none lost; a group waits behind its untenanted message', async () => {
    const { queue, dlq } = await createQueueWithDlq('wl-tenant.fifo', 2, { VisibilityTimeout: '2' });
    // Group g1 alternates two tenants (the split cuts it), g2 is one tenant with one untenanted message in the
    // middle, g3 is one tenant.
    const plan: { group: string; tenant: string | undefined }[] = [];
    for (let i = 0; i < 12; i++) {
      plan.push({ group: 'g1', tenant: i % 2 === 0 ? 't1' : 't2' });
      plan.push({ group: 'g2', tenant: i === 4 ? undefined : 't3' });
      plan.push({ group: 'g3', tenant: 't1' });
    }
    const ids = await sendMessages(
      queue.url,
      plan.map((p, i) => ({
        body: `${p.group}-${i}`,
        groupId: p.group,
        ...(p.tenant !== undefined ? { attributes: { tenant: { DataType: 'String', StringValue: p.tenant } } } : {}),
      })),
    );
    const untenanted = ids.filter((_, i) => plan[i]!.tenant === undefined);
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'saas',
      '--queues',
      queue.name,
      '--tenant-id-from',
      'attribute:tenant',
      '--batch-size',
      '10',
      '--concurrency',
      '3',
    ]);
    await started(daemon);
    // Every message ends invoked or in the DLQ: the untenanted one, and the messages of its group that came in the
    // same batches and so waited behind it (they are received as often as it is, so they reach maxReceiveCount with it,
    // as messages behind any failure on a FIFO queue do).
    const inDlq: string[] = [];
    await until(
      async () => {
        inDlq.push(...(await drainQueue(dlq.url, { waitTimeSec: 0 })).map((m) => m.MessageId!));
        return succeededIds(endpoint, queue.arn).size + inDlq.length === ids.length;
      },
      90_000,
      'every message invoked or dead-lettered',
      500,
    );
    assert.equal(await stopDaemon(daemon), 0, problems(daemon));

    assertOneTenantEach(endpoint, queue, (r) => r.messageAttributes['tenant']?.stringValue);
    const runs = runsByMessage(endpoint, queue.arn);
    const invoked = [...runs.keys()];
    assert.deepEqual(
      [...runs.entries()].filter(([, r]) => r.length !== 1).map(([id]) => id),
      [],
      'each message invoked once',
    );
    assert.deepEqual([...invoked, ...inDlq].sort(), [...ids].sort(), 'none lost: each message invoked or in the DLQ, not both');
    assert.ok(inDlq.includes(untenanted[0]!), 'the untenanted one is in the DLQ');
    const followers = ids.filter((_, i) => plan[i]!.group === 'g2' && i > ids.indexOf(untenanted[0]!));
    assert.deepEqual(
      inDlq.filter((id) => id !== untenanted[0] && !followers.includes(id)),
      [],
      'nothing else is dead-lettered',
    );
    for (const group of ['g1', 'g3'])
      assert.ok(
        ids.every((id, i) => plan[i]!.group !== group || invoked.includes(id)),
        `group ${group} (never behind an untenanted message) fully invoked`,
      );
    // Each group's messages were invoked in the order they were sent (invocations in arrival order, records in
    // payload order): none overtook an earlier one of its group, across the tenant split.
    const invokedOrder = endpoint.invocations.flatMap((inv) => records(inv).map((r) => r.messageId)).filter((id) => ids.includes(id));
    for (const group of ['g1', 'g2', 'g3']) {
      const sent = ids.filter((id, i) => plan[i]!.group === group && invoked.includes(id));
      assert.deepEqual(
        invokedOrder.filter((id) => sent.includes(id)),
        sent,
        `group ${group} in order`,
      );
    }
    const lines = daemon
      .logs()
      .filter((l) => l['msg'] === 'no tenant id for a tenant-isolated function; messages stay on the queue for its redrive');
    assert.ok(lines.length >= 1);
    for (const l of lines) {
      assert.deepEqual(l['messageIds'], untenanted);
      assert.ok(
        (l['heldBehindIds'] as string[]).every((id) => followers.includes(id)),
        JSON.stringify(l),
      );
    }
  });

  it('without --tenant-id-from the start-up DryRun is refused: exit 1, one line naming the option', async () => {
    const { queue } = await createQueueWithDlq('wl-tenant-none', 2);
    endpoint.reset();
    const daemon = startDaemon(endpoint.url, ['--function', 'saas', '--queues', queue.name]);
    const deadline = setTimeout(() => daemon.child.kill('SIGKILL'), 30_000);
    const { code } = await daemon.exited;
    clearTimeout(deadline);
    assert.equal(code, 1, daemon.stderr());
    assert.match(
      daemon.stderr(),
      /^workerless: function saas: cannot invoke: InvalidParameterValueException: .*\(if the function is in tenant isolation mode, set --tenant-id-from\)\n$/,
    );
    assert.ok(!daemon.stdout().includes('    at '), 'no stack trace');
    assert.equal(endpoint.invocations.length, 0);
  });
});
