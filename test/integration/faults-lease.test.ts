// Issue 8, case 3: the visibility lease keeps every message of a batch invisible from its receive until its
// settle call has completed, through a refused entry, a few seconds of SQS 5xx and a delete that takes longer
// than the visibility timeout. Each test invokes longer than the queue's visibility timeout with spare worker
// loops polling the queue, so a lapse in the lease shows up as a second, overlapping run of the same message.
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { countMessages, createQueue, localstackEndpoint, messageCounts, sendMessages, sqsClient } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { problems, startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { QUIET_EVERY } from '../../src/dispatch/queue-visibility.ts';
import { until } from '../support/factories.ts';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { describeRuns, overlappingRuns, runsByMessage } from '../support/message-runs.ts';

describe('fault injection: the visibility lease', () => {
  let endpoint: LambdaEndpoint;
  let sqsProxy: FaultProxy | undefined;
  let daemon: CliRun | undefined;
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({
      functions: { lease: { handler: functionFixture('lease.mjs'), timeoutSec: 30, env: { SQS_ENDPOINT: localstackEndpoint() } } },
    });
  });
  after(() => endpoint.stop());

  /** The daemon under test, talking to SQS through a fresh fault proxy. */
  const start = async (queueName: string, args: string[]): Promise<{ proxy: FaultProxy; daemon: CliRun }> => {
    sqsProxy = await startFaultProxy({ upstream: localstackEndpoint() });
    daemon = startDaemon(endpoint.url, ['--function', 'lease', '--queues', queueName, '--concurrency', '3', ...args], {
      AWS_ENDPOINT_URL_SQS: sqsProxy.url,
    });
    await started(daemon);
    return { proxy: sqsProxy, daemon };
  };
  const cleanUp = async () => {
    if (daemon && daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    await sqsProxy?.close();
    daemon = undefined;
    sqsProxy = undefined;
  };

  it('3a. the function deletes one message of the batch itself (--delete never): the others stay leased and run once at a time', async () => {
    try {
      // Visibility 2 s, invocation 6 s: without the lease the other two messages would be handed out again at 2 s.
      const q = await createQueue('wl-fault-lease-self-delete', { VisibilityTimeout: '2' });
      const [selfDeleted, ...others] = await sendMessages(q.url, [
        JSON.stringify({ sleepMs: 6_000, deleteSelf: true }),
        JSON.stringify({ sleepMs: 6_000 }),
        JSON.stringify({ sleepMs: 6_000 }),
      ]);
      const t0 = Date.now();
      const { proxy, daemon } = await start(q.name, ['--batch-size', '10', '--delete', 'never']);
      await endpoint.waitFor(() => runsByMessage(endpoint, q.arn).get(selfDeleted!)?.[0]?.status === 'success', 15_000);
      const batch = runsByMessage(endpoint, q.arn);
      const firstRequest = batch.get(selfDeleted!)?.[0]?.requestId;
      const batchMates = others.filter((id) => batch.get(id)?.[0]?.requestId === firstRequest);
      assert.ok(batchMates.length > 0, `precondition: another message shared the self-deleting batch: ${describeRuns(batch, t0)}`);
      // Kept under --delete never, the others come back once their last extension runs out; let them run again.
      await until(
        () => others.every((id) => (runsByMessage(endpoint, q.arn).get(id)?.length ?? 0) >= 2),
        10_000,
        'the kept messages delivered again',
        50,
      );
      assert.equal(await stopDaemon(daemon), 0);

      const runs = runsByMessage(endpoint, q.arn);
      const summary = describeRuns(runs, t0);
      assert.deepEqual(overlappingRuns(runs), [], `no message ran twice at once: ${summary}\n${problems(daemon)}`);
      assert.equal(runs.get(selfDeleted!)?.length, 1, `the self-deleted message ran once: ${summary}`);
      for (const id of batchMates) {
        const [first, second] = runs.get(id)!;
        assert.ok(first!.endedAt! - first!.startedAt >= 6_000, 'the first run outlasted the visibility timeout three times');
        assert.ok(second!.startedAt >= first!.endedAt!, `the second run started after the first ended: ${summary}`);
        assert.equal(second!.receiveCount, 2, 'received again only after the first run was over');
      }
      // The refused entry dropped exactly the deleted message from the lease; the extensions of the others went on.
      const refused = daemon
        .logs()
        .filter((l) => l['msg'] === 'SQS refused to extend the visibility of some messages; no longer extending those');
      assert.deepEqual(
        refused.flatMap((l) => (l['failed'] as { id: string }[]).map((f) => f.id)),
        [selfDeleted],
        problems(daemon),
      );
      const extensions = proxy.calls('ChangeMessageVisibilityBatch').filter((c) => c.status === 200 && c.at - t0 < 8_000);
      assert.ok(extensions.length >= 4, `extensions during the first run: ${extensions.length}`);
      const counts = await messageCounts(q.url);
      assert.equal(counts.visible + counts.notVisible, 2, 'the two kept messages are still on the queue, the deleted one is gone');
      console.log(`lease, self-deleted entry: ${summary} (ms from start, duration, status, receive count)`);
    } finally {
      await cleanUp();
    }
  });

  it('3b. two seconds of 500s on ChangeMessageVisibilityBatch during a long invocation: retried while visibility remains, no second run', async () => {
    try {
      // Visibility 8 s: the lease extends when 4 s remain (half the timeout), so 2 s of errors leave room to retry.
      const q = await createQueue('wl-fault-lease-5xx', { VisibilityTimeout: '8' });
      const [id] = await sendMessages(q.url, [JSON.stringify({ sleepMs: 12_000 })]);
      const t0 = Date.now();
      const { proxy, daemon } = await start(q.name, []);
      await endpoint.waitFor(() => (runsByMessage(endpoint, q.arn).get(id!)?.length ?? 0) === 1, 15_000);
      const runStart = runsByMessage(endpoint, q.arn).get(id!)![0]!.startedAt;
      // From just before the first extension (due 4 s after the receive) until 2 s later.
      await delay(Math.max(0, runStart + 3_500 - Date.now()));
      const rule = proxy.inject({
        operation: 'ChangeMessageVisibilityBatch',
        fault: { kind: 'status', status: 500, errorType: 'InternalError' },
        forMs: 2_000,
      });
      await rule.ended;
      await endpoint.waitFor(() => runsByMessage(endpoint, q.arn).get(id!)?.[0]?.status === 'success', 15_000);
      await until(async () => (await countMessages(q.url)) === 0, 5_000, 'the message deleted', 50);
      await delay(2_000); // a second delivery would come at once: the message was held past its first timeout
      assert.equal(await stopDaemon(daemon), 0);

      const runs = runsByMessage(endpoint, q.arn);
      const summary = describeRuns(runs, t0);
      assert.equal(runs.get(id!)?.length, 1, `invoked once: ${summary}\n${problems(daemon)}`);
      const changes = proxy.calls('ChangeMessageVisibilityBatch');
      const failed = changes.filter((c) => c.status === 500);
      assert.ok(failed.length >= 2, `the extension failed repeatedly: ${changes.map((c) => `${c.at - runStart}:${c.status}`).join(' ')}`);
      const recovered = changes.find((c) => c.status === 200 && c.at > failed.at(-1)!.at);
      assert.ok(recovered, 'an extension got through after the errors');
      assert.ok(daemon.logs().some((l) => l['msg'] === 'ChangeMessageVisibilityBatch failed; retrying while visibility remains'));
      assert.ok(!daemon.logs().some((l) => String(l['msg']).startsWith('could not extend visibility')), problems(daemon));
      console.log(
        `lease, 2 s of 500s: ${failed.length} failed extensions, the next one ${recovered.at - failed.at(-1)!.at} ms later, ${recovered.at - runStart} ms into the run; ${summary}`,
      );
    } finally {
      await cleanUp();
    }
  });

  it('3c. a DeleteMessageBatch that takes longer than the visibility timeout: the lease holds until it completes, no second run', async () => {
    try {
      // The first delete hangs (it does not reach SQS) until its 5 s deadline, then the retry deletes. A delay
      // fault would not prove anything here: it forwards the delete at once and only holds the answer back.
      const q = await createQueue('wl-fault-lease-slow-delete', { VisibilityTimeout: '2' });
      const [id] = await sendMessages(q.url, [JSON.stringify({ sleepMs: 500 })]);
      const t0 = Date.now();
      const { proxy, daemon } = await start(q.name, []);
      const rule = proxy.inject({ operation: 'DeleteMessageBatch', fault: { kind: 'hang' }, count: 1 });
      await endpoint.waitFor(() => runsByMessage(endpoint, q.arn).get(id!)?.[0]?.status === 'success', 15_000);
      await rule.ended;
      await until(async () => (await countMessages(q.url)) === 0, 15_000, 'the message deleted by the retry', 50);
      const deletedAt = Date.now();
      await delay(2_500); // longer than the visibility timeout
      assert.equal(await stopDaemon(daemon), 0);

      const runs = runsByMessage(endpoint, q.arn);
      const summary = describeRuns(runs, t0);
      assert.equal(runs.get(id!)?.length, 1, `invoked once: ${summary}\n${problems(daemon)}`);
      const deletes = proxy.calls('DeleteMessageBatch');
      assert.deepEqual(
        deletes.map((c) => c.fault ?? c.status),
        ['hang', 200],
      );
      const heldMs = deletes[1]!.at - runs.get(id!)![0]!.endedAt!;
      assert.ok(heldMs > 2_000, `the delete completed ${heldMs} ms after the run: longer than the visibility timeout`);
      const extensions = proxy.calls('ChangeMessageVisibilityBatch').filter((c) => c.at > deletes[0]!.at && c.at < deletes[1]!.at);
      assert.ok(
        extensions.length >= 2 && extensions.every((c) => c.status === 200),
        `extensions while the delete hung: ${extensions.length}`,
      );
      assert.ok(
        daemon.logs().some((l) => l['msg'] === 'DeleteMessageBatch failed' && (l['err'] as { code?: string }).code === 'TimeoutError'),
      );
      console.log(
        `lease, slow delete: deleted ${heldMs} ms after the run ended (queue empty ${deletedAt - t0} ms after start), ${extensions.length} extensions meanwhile; ${summary}`,
      );
    } finally {
      await cleanUp();
    }
  });

  it('3d. SQS refusing connections for 6 s while a delete is due: the delete is retried while the lease holds, no second run', async () => {
    try {
      const q = await createQueue('wl-fault-lease-delete-outage', { VisibilityTimeout: '10' });
      const [id] = await sendMessages(q.url, [JSON.stringify({ sleepMs: 1_000 })]);
      const t0 = Date.now();
      const { proxy, daemon } = await start(q.name, []);
      await endpoint.waitFor(() => runsByMessage(endpoint, q.arn).get(id!)?.[0]?.status === 'running', 15_000);
      // Refused from before the run ends (so the delete meets it) until 6 s later; visibility lasts 10 s.
      const rule = proxy.inject({ fault: { kind: 'refuse' }, forMs: 6_000 });
      await rule.ended;
      await until(async () => (await countMessages(q.url)) === 0, 15_000, 'the message deleted once SQS answers again', 100).catch(
        () => undefined,
      );
      await delay(1_000);
      assert.equal(await stopDaemon(daemon), 0);
      const runs = runsByMessage(endpoint, q.arn);
      assert.equal(runs.get(id!)?.length, 1, `invoked once: ${describeRuns(runs, t0)}\n${problems(daemon)}`);
      assert.equal(await countMessages(q.url), 0, `deleted: ${problems(daemon)}`);
    } finally {
      await cleanUp();
    }
  });

  // Issue 20, case 1: the queue's timeout lowered (console, Terraform) while the daemon runs without
  // --visibility-timeout. Before, receives stated none, so SQS applied the new 5 s while every lease assumed the
  // 60 s read at start-up: one message ran 5 times, 0 extensions.
  it("3e. the queue's visibility timeout lowered from 60 to 5 s while running: one run per message, extensions sent once the change is read", async () => {
    try {
      const q = await createQueue('wl-fault-lease-lowered', { VisibilityTimeout: '60' });
      const t0 = Date.now();
      // 1 s long polls: a poll sent before the re-read states 60 s, and the messages it returns rightly keep 60 s.
      const { proxy, daemon } = await start(q.name, ['--visibility-refresh', '2s', '--poll-for', '1']);
      await sqsClient().send(new SetQueueAttributesCommand({ QueueUrl: q.url, Attributes: { VisibilityTimeout: '5' } }));
      // Received before the daemon has read the change: the receive states the 60 s its lease assumes.
      const early = await sendMessages(q.url, [JSON.stringify({ sleepMs: 8_000 })]);
      const changed = "the queue's visibility timeout changed; receives from now on state it, leases already open keep theirs";
      // A queue whose last poll came back empty is re-read only every QUIET_EVERY-th refresh, and this one is quiet
      // but for the one receive: when the first refresh ran before the change reached SQS (a CI run on a loaded host,
      // where SetQueueAttributes took over the 2 s), the change is read QUIET_EVERY refreshes later, 12 s after the
      // start, and a 10 s wait failed. Wait for that refresh, and 5 s more for a loaded host.
      await until(() => daemon.logs().some((l) => l['msg'] === changed), (QUIET_EVERY + 1) * 2_000 + 5_000, 'the change read', 100);
      await delay(1_500); // the long polls sent before it are over
      // Received after it: 5 s stated, and the lease extends by 5 s while the 8 s run goes on.
      const late = await sendMessages(q.url, [JSON.stringify({ sleepMs: 8_000 }), JSON.stringify({ sleepMs: 8_000 })]);
      const ids = [...early, ...late];
      await endpoint.waitFor(() => ids.every((id) => runsByMessage(endpoint, q.arn).get(id)?.[0]?.status === 'success'), 30_000);
      await until(async () => (await countMessages(q.url)) === 0, 10_000, 'the messages deleted', 100);
      await delay(2_000);
      assert.equal(await stopDaemon(daemon), 0);

      const runs = runsByMessage(endpoint, q.arn);
      const summary = describeRuns(runs, t0);
      assert.deepEqual(overlappingRuns(runs), [], `no message ran twice at once: ${summary}\n${problems(daemon)}`);
      for (const id of ids) assert.equal(runs.get(id)?.length, 1, `${id} ran once: ${summary}`);
      const extensions = proxy.calls('ChangeMessageVisibilityBatch').filter((c) => c.status === 200);
      const receives = proxy.calls('ReceiveMessage').filter((c) => c.status === 200);
      assert.ok(
        extensions.length >= 2,
        `extensions by 5 s during the later runs: ${extensions.length} (${receives.length} receives)\n${problems(daemon)}`,
      );
      assert.deepEqual(
        daemon
          .logs()
          .filter((l) => l['msg'] === changed)
          .map((l) => [l['fromSec'], l['toSec']]),
        [[60, 5]],
        'logged once',
      );
      console.log(`lease, timeout lowered 60 -> 5 s: ${extensions.length} extensions; ${summary}`);
    } finally {
      await cleanUp();
    }
  });

  // Issue 20, case 2: a lease that lapsed was still invoked. Before, the retry loop re-sent the payload after every
  // throttle without asking the lease: the message came back, another loop received it, and both invoked it.
  it('3f. ChangeMessageVisibilityBatch answering 500 while Lambda throttles for 12 s (4 s visibility): 0 overlapping runs, each message once', async () => {
    try {
      const q = await createQueue('wl-fault-lease-lapsed', { VisibilityTimeout: '4' });
      const t0 = Date.now();
      const { proxy, daemon } = await start(q.name, []);
      proxy.inject({ operation: 'ChangeMessageVisibilityBatch', fault: { kind: 'status', status: 500, errorType: 'InternalError' } });
      endpoint.setReservedConcurrency('lease', 0);
      const ids = await sendMessages(q.url, [JSON.stringify({ sleepMs: 200 }), JSON.stringify({ sleepMs: 200 })]);
      await delay(12_000);
      endpoint.setReservedConcurrency('lease', undefined);
      await endpoint.waitFor(
        () =>
          ids.every((id) =>
            runsByMessage(endpoint, q.arn)
              .get(id)
              ?.some((r) => r.status === 'success'),
          ),
        20_000,
      );
      await until(async () => (await countMessages(q.url)) === 0, 10_000, 'the messages deleted', 100);
      await delay(5_000); // a second run would come within a visibility timeout
      assert.equal(await stopDaemon(daemon), 0);

      const runs = runsByMessage(endpoint, q.arn);
      const summary = describeRuns(runs, t0);
      assert.deepEqual(overlappingRuns(runs), [], `no message ran twice at once: ${summary}\n${problems(daemon)}`);
      for (const id of ids) assert.equal(runs.get(id)?.length, 1, `${id} ran once: ${summary}`);
      const throttled = endpoint.rejected.filter((r) => r.statusCode === 429 && r.at >= t0).length;
      assert.ok(throttled > 0, 'Lambda throttled');
      const lapsed = daemon
        .logs()
        .filter(
          (l) => l['msg'] === 'the visibility lease lapsed before the invocation; not invoking these messages, SQS delivers them again',
        );
      assert.ok(lapsed.length > 0, `a lapsed batch was not invoked: ${problems(daemon)}`);
      console.log(`lease, lapsed while throttled: ${throttled} throttles, ${lapsed.length} lapsed batches not invoked; ${summary}`);
    } finally {
      await cleanUp();
    }
  });
});
