// Durable routes (--durable; docs/targets.md, "Durable functions") through the built CLI, with LocalStack SQS and
// the test Lambda endpoint's model of durable executions (test/support/lambda-endpoint/durable-executions.ts, from
// AWS's idempotency page: https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html).
// Every assertion is by message id: each message starts exactly one execution, under the name derived from its
// queue and id, across SIGTERM restarts, kill -9 and redeliveries, and is deleted once Lambda accepted the start.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { InvokeCommand } from '@aws-sdk/client-lambda';
import {
  countMessages,
  createQueue,
  createQueueWithDlq,
  localstackEndpoint,
  sendMessages,
  type TestQueue,
  lambdaClient,
} from '../support/aws.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { eventRecords, functionFixture } from '../support/functions.ts';
import type { DurableExecution } from '../support/lambda-endpoint/durable-executions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { durableExecutionName } from '../../src/invoke/durable-name.ts';

/** The executions started for `q`'s messages, grouped by message id. */
function executionsByMessage(endpoint: LambdaEndpoint, q: TestQueue): Map<string, DurableExecution[]> {
  const out = new Map<string, DurableExecution[]>();
  for (const e of endpoint.durable.executions.values()) {
    const record = eventRecords(e.invocation)[0];
    if (record?.eventSourceARN !== q.arn) continue;
    out.set(record.messageId, [...(out.get(record.messageId) ?? []), e]);
  }
  return out;
}

/** Handler runs (invocations) per message id of `q`, named or not. */
function runsByMessage(endpoint: LambdaEndpoint, q: TestQueue): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of endpoint.invocations.flatMap(eventRecords).filter((r) => r.eventSourceARN === q.arn)) {
    out.set(r.messageId, (out.get(r.messageId) ?? 0) + 1);
  }
  return out;
}

/** Every message of `ids` started exactly one execution, under its derived name, and its handler ran once. */
function assertOneExecutionEach(endpoint: LambdaEndpoint, q: TestQueue, ids: readonly string[]): void {
  const byMessage = executionsByMessage(endpoint, q);
  const twice = [...byMessage].filter(([, e]) => e.length > 1).map(([id]) => id);
  assert.deepEqual(twice, [], 'executions started twice for one message');
  assert.deepEqual([...byMessage.keys()].sort(), [...ids].sort(), 'every message started an execution');
  for (const id of ids) assert.equal(byMessage.get(id)![0]!.name, durableExecutionName(q.arn, id));
  const runs = runsByMessage(endpoint, q);
  assert.deepEqual(
    ids.filter((id) => runs.get(id) !== 1),
    [],
    'each handler ran once (no invocation without a name)',
  );
}

describe('durable routes through the CLI', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({
      handlerOutput: 'ignore',
      functions: { durable: { handler: functionFixture('slow.mjs'), timeoutSec: 30 } },
    });
  });
  after(() => endpoint.stop());

  it('async: one execution per message across SIGTERM restarts; each message is deleted once the start is accepted, while its execution still runs', async () => {
    // Executions of 2.5 s on a queue whose visibility timeout is 2 s: the timeout no longer has to cover them.
    const q = await createQueue('wl-durable-async', { VisibilityTimeout: '2' });
    const ids = await sendMessages(
      q.url,
      Array.from({ length: 30 }, () => JSON.stringify({ sleepMs: 2500 })),
    );
    const args = ['--function', 'durable', '--queues', q.name, '--durable', 'async', '--concurrency', '4'];
    // Read the queue from the start: it may be empty before the last daemon starts (the earlier ones may start
    // every execution), and the executions still running at the moment it empties are what the claim is about.
    const running = () => [...executionsByMessage(endpoint, q).values()].filter((e) => e[0]!.invocation.status === 'running').length;
    let runningWhenEmpty: number | undefined;
    const watcher = (async () => {
      while (runningWhenEmpty === undefined) {
        if ((await countMessages(q.url)) === 0) runningWhenEmpty = running();
        else await delay(100);
      }
    })();
    for (let cycle = 0; cycle < 3; cycle++) {
      const daemon = startDaemon(endpoint.url, args);
      await started(daemon);
      await delay(300 + Math.floor(Math.random() * 700));
      assert.equal(await stopDaemon(daemon), 0, daemon.stderr());
    }
    const last = startDaemon(endpoint.url, args);
    await started(last);
    await until(() => runningWhenEmpty !== undefined, 30_000, 'the queue empty', 100);
    await watcher;
    assert.equal(await stopDaemon(last), 0);
    assert.ok(runningWhenEmpty! > 0, 'messages were deleted while their executions still ran');
    await endpoint.waitFor(
      () => [...executionsByMessage(endpoint, q).values()].every((e) => e[0]!.invocation.status === 'success'),
      20_000,
    );
    assertOneExecutionEach(endpoint, q, ids);
  });

  it('async: a name already started with another payload counts as started: the message is deleted, no second execution', async () => {
    const q = await createQueue('wl-durable-taken', { VisibilityTimeout: '5' });
    const [id] = await sendMessages(q.url, [JSON.stringify({ sleepMs: 10 })]);
    const name = durableExecutionName(q.arn, id!);
    // Someone started the message's execution already, with another payload (another version's event, say).
    const lambda = lambdaClient(endpoint.url);
    await lambda.send(
      new InvokeCommand({
        FunctionName: 'durable',
        InvocationType: 'Event',
        DurableExecutionName: name,
        Payload: Buffer.from(JSON.stringify({ Records: [{ messageId: id, eventSourceARN: q.arn, body: '{}', attributes: {} }] })),
      }),
    );
    lambda.destroy();
    const daemon = startDaemon(endpoint.url, ['--function', 'durable', '--queues', q.name, '--durable', 'async']);
    await started(daemon);
    await until(async () => (await countMessages(q.url)) === 0, 20_000, 'the message deleted', 100);
    assert.equal(await stopDaemon(daemon), 0);
    assert.equal(endpoint.durable.executions.get(name)?.refused, 1, 'the daemon started it once more and was refused');
    assert.equal(runsByMessage(endpoint, q).get(id!), 1, 'the handler ran once, for the first start');
    const line = daemon.logs().find((l) => l['msg'] === 'durable execution already started under this name; counted as started');
    assert.equal(line?.['durableExecutionName'], name);
  });

  it('sync: kill -9 during the execution; the redelivered message (new receipt handle, receive count 2) reattaches to it and is deleted when it ends', async () => {
    const q = await createQueue('wl-durable-sync', { VisibilityTimeout: '2' });
    const [id] = await sendMessages(q.url, [JSON.stringify({ sleepMs: 6000 })]);
    const name = durableExecutionName(q.arn, id!);
    const args = ['--function', 'durable', '--queues', q.name, '--durable', 'sync'];
    const first = startDaemon(endpoint.url, args);
    await started(first);
    await endpoint.waitFor(() => endpoint.durable.executions.get(name)?.invocation.status === 'running', 20_000);
    first.child.kill('SIGKILL');
    await first.exited;
    const second = startDaemon(endpoint.url, args);
    await started(second);
    await until(() => (endpoint.durable.executions.get(name)?.reattached ?? 0) >= 1, 20_000, 'the redelivery reattached', 50);
    assert.equal(endpoint.durable.executions.get(name)!.invocation.status, 'running', 'while the execution still runs');
    await until(async () => (await countMessages(q.url)) === 0, 20_000, 'the message deleted', 100);
    assert.equal(await stopDaemon(second), 0);
    assert.equal(endpoint.durable.executions.get(name)!.invocation.status, 'success');
    assert.equal(endpoint.durable.executions.get(name)!.refused, 0, 'the redelivery sent the same payload');
    assertOneExecutionEach(endpoint, q, [id!]);
  });

  it('async: a message whose event is over 1 MB is never invoked; counted and logged with its id and size on each receive, it reaches the DLQ', async () => {
    const { queue: q, dlq } = await createQueueWithDlq('wl-durable-big', 2, { VisibilityTimeout: '1' });
    // Both within SQS's 1 MiB; with its record around it, the first is over Lambda's 1 MB for an Event invoke, the second not.
    // One per call: a SendMessageBatch takes 1 MiB in all.
    const [big] = await sendMessages(q.url, ['x'.repeat(1_048_500)]);
    const [fits] = await sendMessages(q.url, ['y'.repeat(1_047_000)]);
    const daemon = startDaemon(endpoint.url, ['--function', 'durable', '--queues', q.name, '--durable', 'async']);
    await started(daemon);
    await until(async () => (await countMessages(dlq.url)) === 1, 30_000, 'the message in the DLQ', 200).catch(async (err: unknown) => {
      await stopDaemon(daemon);
      throw err;
    });
    assert.equal(await stopDaemon(daemon), 0);
    assert.equal(runsByMessage(endpoint, q).get(big!), undefined, 'never invoked');
    assert.equal(runsByMessage(endpoint, q).get(fits!), 1, 'the one that fits was invoked');
    assert.equal(await countMessages(q.url), 0);
    const lines = daemon
      .logs()
      .filter(
        (l) => l['msg'] === "event over the invocation's payload limit; not invoked, the message stays for the queue's redrive policy",
      );
    assert.equal(lines.length, 2, 'once per receive (maxReceiveCount 2)');
    assert.equal(lines[0]!['messageId'], big);
    assert.equal(lines[0]!['limitBytes'], 1_048_576);
    assert.ok((lines[0]!['bytes'] as number) > 1_048_576);
    assert.ok(!daemon.stdout().includes('xxxxxxxx'), 'the body is never logged');
    assert.ok(!daemon.stdout().includes('yyyyyyyy'));
  });

  it(
    'chaos, async: lost Invoke answers, Lambda 5xx, failed deletes, SIGTERM and kill -9 restarts: 0 executions started twice for one message, none lost',
    { timeout: 180_000 },
    async () => {
      const { queue: q, dlq } = await createQueueWithDlq('wl-durable-chaos', 10, { VisibilityTimeout: '2' });
      const n = 150;
      const ids = await sendMessages(
        q.url,
        Array.from({ length: n }, (_, i) => JSON.stringify({ sleepMs: 50 + ((i * 97) % 1500) })),
      );
      const lambdaProxy = await startFaultProxy({ upstream: endpoint.url });
      const sqsProxy = await startFaultProxy({ upstream: localstackEndpoint() });
      const events = { operation: 'Invoke', invocationType: 'Event' } as const;
      // A start whose answer is lost (before or after Lambda answered) or a 5xx: an unknown outcome, invoked again
      // under the same name after a visibility timeout.
      const lost = [
        lambdaProxy.inject({ ...events, fault: { kind: 'reset-after-send', when: 'sent' }, probability: 0.05 }),
        lambdaProxy.inject({ ...events, fault: { kind: 'reset-after-send', when: 'answered' }, probability: 0.05 }),
        lambdaProxy.inject({ ...events, fault: { kind: 'status', status: 500, errorType: 'ServiceException' }, probability: 0.03 }),
      ];
      const failedDeletes = sqsProxy.inject({
        operation: 'DeleteMessageBatch',
        fault: { kind: 'status', status: 500, errorType: 'InternalError' },
        probability: 0.1,
      });
      const args = ['--function', 'durable', '--queues', q.name, '--durable', 'async', '--concurrency', '6'];
      const env = { AWS_ENDPOINT_URL_SQS: sqsProxy.url };
      let sigterm = 0;
      let kill9 = 0;
      for (let cycle = 1; cycle <= 8; cycle++) {
        const daemon = startDaemon(lambdaProxy.url, args, env);
        await started(daemon);
        await delay(500 + Math.floor(Math.random() * 1500));
        if (cycle % 2 === 0) {
          kill9++;
          daemon.child.kill('SIGKILL');
          await daemon.exited;
        } else {
          sigterm++;
          await stopDaemon(daemon);
        }
      }
      const last = startDaemon(lambdaProxy.url, args, env);
      await started(last);
      await until(async () => (await countMessages(q.url)) === 0, 90_000, 'the queue empty', 200);
      assert.equal(await stopDaemon(last), 0);
      await endpoint.waitFor(
        () => [...executionsByMessage(endpoint, q).values()].every((e) => e[0]!.invocation.status !== 'running'),
        20_000,
      );
      const faults = lost.reduce((s, r) => s + r.hits, 0);
      const reattached = [...executionsByMessage(endpoint, q).values()].reduce((s, e) => s + e[0]!.reattached, 0);
      const refused = [...executionsByMessage(endpoint, q).values()].reduce((s, e) => s + e[0]!.refused, 0);
      console.log(
        `durable chaos: ${n} messages, ${sigterm} SIGTERM and ${kill9} kill -9 restarts, ${faults} lost or failed Invoke answers, ` +
          `${failedDeletes.hits} failed DeleteMessageBatch, ${reattached} starts answered with the existing execution, ${refused} refused, ` +
          `${endpoint.durable.executions.size} executions in the endpoint so far`,
      );
      await lambdaProxy.close();
      await sqsProxy.close();
      assert.ok(faults > 0 && kill9 > 0, 'the run did meet faults and kill -9');
      assertOneExecutionEach(endpoint, q, ids);
      assert.equal(await countMessages(dlq.url), 0, 'nothing reached the DLQ');
    },
  );
});
