// Queues found, not listed (--queues-prefix, --queues-tag) against LocalStack, ElasticMQ and moto: queues that
// appear are added and queues that vanish are removed while messages flow, without a restart; every message is
// invoked once and none is left invisible. The SQS calls, as their API references define them:
// ListQueues (QueueNamePrefix, MaxResults, NextToken):
//   https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ListQueues.html
// ListQueueTags: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ListQueueTags.html
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, UntagQueueCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { awsTestEnv, bodies, messageCounts, sendMessages, sqsClient } from '../support/aws.ts';
import { runCli, type CliRun } from '../support/cli.ts';
import { startDaemon, started, stopDaemon, problems } from '../support/daemon.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type InvocationRecord, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureSqsServer, sqsServers } from '../support/sqs-servers.ts';

const CHANGED = "the route's queues changed; queues that left settle what they have in flight";

const bodiesOf = (invocations: readonly InvocationRecord[]): string[] =>
  invocations.flatMap((i) => ((i.payload as { Records?: { body: string }[] } | null)?.Records ?? []).map((r) => r.body));

async function create(sqs: SQSClient, name: string, tags?: Record<string, string>): Promise<string> {
  const out = await sqs.send(new CreateQueueCommand({ QueueName: name, ...(tags ? { tags } : {}) }));
  return out.QueueUrl!;
}

/** Every body sent was invoked exactly once. */
function onceEach(endpoint: LambdaEndpoint, sent: readonly string[]): void {
  const got = bodiesOf(endpoint.invocations).filter((b) => sent.includes(b));
  const seen = new Map<string, number>();
  for (const b of got) seen.set(b, (seen.get(b) ?? 0) + 1);
  assert.deepEqual(
    [...seen].filter(([, n]) => n !== 1),
    [],
    'each message invoked once',
  );
  assert.deepEqual(
    sent.filter((b) => !seen.has(b)),
    [],
    'every message invoked',
  );
}

describe('queues found by prefix or tag, against LocalStack, ElasticMQ and moto', { concurrency: 3 }, () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({ functions: { record: { handler: functionFixture('record.mjs') } } });
  });
  after(() => endpoint.stop());

  for (const server of sqsServers()) {
    describe(server.name, { concurrency: 1 }, () => {
      let sqs: SQSClient;
      const runs: CliRun[] = [];
      const made: string[] = [];
      before(async () => {
        await ensureSqsServer(server);
        sqs = sqsClient(server.endpoint);
      });
      after(async () => {
        for (const run of runs) if (run.child.exitCode === null) run.child.kill('SIGKILL');
        for (const url of made) await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
        sqs.destroy();
      });
      const daemon = (args: string[]) => {
        const run = startDaemon(endpoint.url, ['--function', 'record', '--queues-refresh', '1s', ...args], {
          AWS_ENDPOINT_URL_SQS: server.endpoint,
        });
        runs.push(run);
        return run;
      };
      const changed = (run: CliRun, pred: (l: Record<string, unknown>) => boolean) =>
        run.waitForLog((l) => l['msg'] === CHANGED && pred(l), 30_000);
      const has = (field: string, name: string) => (l: Record<string, unknown>) => (l[field] as string[]).includes(name);

      it('by prefix (--aws-client lean): a queue created while it runs is added, a deleted one removed; each message once', async () => {
        const prefix = `wl-disc-${randomUUID().slice(0, 8)}-`;
        const a = await create(sqs, `${prefix}a`);
        made.push(a);
        // Not under the prefix: never received from.
        const other = await create(sqs, `wl-other-${randomUUID().slice(0, 8)}`);
        made.push(other);
        await sendMessages(other, ['other-0'], sqs);
        const run = daemon(['--aws-client', 'lean', '--queues-prefix', prefix, '--concurrency', '2']);
        await started(run);
        const sent = bodies(5, `${prefix}a-first`);
        await sendMessages(a, sent, sqs);
        await endpoint.waitFor((inv) => bodiesOf(inv).filter((b) => sent.includes(b)).length >= 5, 20_000);

        const b = await create(sqs, `${prefix}b`);
        made.push(b);
        await changed(run, has('added', `${prefix}b`));
        const toB = bodies(5, `${prefix}b`);
        const toA = bodies(5, `${prefix}a-second`);
        await Promise.all([sendMessages(b, toB, sqs), sendMessages(a, toA, sqs)]);
        const all = [...sent, ...toB, ...toA];
        await endpoint.waitFor((inv) => all.every((x) => bodiesOf(inv).includes(x)), 20_000);

        await sqs.send(new DeleteQueueCommand({ QueueUrl: b }));
        await changed(run, has('removed', `${prefix}b`));
        const last = bodies(3, `${prefix}a-last`);
        await sendMessages(a, last, sqs);
        await endpoint.waitFor((inv) => last.every((x) => bodiesOf(inv).includes(x)), 20_000);
        assert.equal(await stopDaemon(run), 0, problems(run));
        onceEach(endpoint, [...all, ...last]);
        assert.ok(!bodiesOf(endpoint.invocations).includes('other-0'), 'a queue outside the prefix is never read');
        assert.deepEqual(await messageCounts(a, sqs), { visible: 0, notVisible: 0, delayed: 0 });
      });

      it('by tag (--aws-client sdk): a tagged queue is added with its weight, an untagged one removed at the full re-read; none stranded', async () => {
        const prefix = `wl-tag-${randomUUID().slice(0, 8)}-`;
        const value = randomUUID().slice(0, 8);
        const tagged = { workerless: value };
        const a = await create(sqs, `${prefix}a`, tagged);
        const untagged = await create(sqs, `${prefix}x`, { workerless: 'other' });
        made.push(a, untagged);
        await sendMessages(untagged, ['untagged-0'], sqs);
        const run = daemon(['--aws-client', 'sdk', '--queues-prefix', prefix, '--queues-tag', `workerless=${value}`]);
        await started(run);
        const b = await create(sqs, `${prefix}b`, { ...tagged, 'workerless:weight': '3' });
        made.push(b);
        const added = await changed(run, has('added', `${prefix}b`));
        assert.equal(added['queues'], 2);
        const toA = bodies(4, `${prefix}a`);
        const toB = bodies(4, `${prefix}b`);
        await Promise.all([sendMessages(a, toA, sqs), sendMessages(b, toB, sqs)]);
        await endpoint.waitFor((inv) => [...toA, ...toB].every((x) => bodiesOf(inv).includes(x)), 20_000);

        // Untagged while it stays: seen at the full re-read (10 x --queues-refresh).
        await sqs.send(new UntagQueueCommand({ QueueUrl: b, TagKeys: ['workerless'] }));
        await changed(run, has('removed', `${prefix}b`));
        // A long poll on b sent before it left ends as it would have (--poll-for 1): what it returns is invoked.
        await delay(2_500);
        const late = bodies(3, `${prefix}b-late`);
        await sendMessages(b, late, sqs);
        const toA2 = bodies(3, `${prefix}a-late`);
        await sendMessages(a, toA2, sqs);
        await endpoint.waitFor((inv) => toA2.every((x) => bodiesOf(inv).includes(x)), 20_000);
        assert.equal(await stopDaemon(run), 0, problems(run));
        onceEach(endpoint, [...toA, ...toB, ...toA2]);
        const invoked = bodiesOf(endpoint.invocations);
        assert.deepEqual(
          invoked.filter((x) => late.includes(x) || x === 'untagged-0'),
          [],
          'queues without the tag are not read',
        );
        // Nothing stranded: what the removed queue holds is visible, none is held invisible.
        assert.deepEqual(await messageCounts(b, sqs), { visible: 3, notVisible: 0, delayed: 0 });
        const attrs = await sqs.send(
          new GetQueueAttributesCommand({ QueueUrl: a, AttributeNames: ['ApproximateNumberOfMessagesNotVisible'] }),
        );
        assert.equal(attrs.Attributes?.['ApproximateNumberOfMessagesNotVisible'], '0');
      });
    });
  }

  it('workerless check (LocalStack) lists what a prefix matches, and fails when it matches nothing', async () => {
    await ensureSqsServer(sqsServers()[0]!);
    const sqs = sqsClient();
    const prefix = `wl-chk-${randomUUID().slice(0, 8)}-`;
    const urls = [await create(sqs, `${prefix}a`), await create(sqs, `${prefix}b`)];
    try {
      const check = async (p: string) => {
        const run = runCli(
          ['check', '--function', 'record', '--queues-prefix', p, '--metrics', 'off'],
          awsTestEnv({ lambdaEndpoint: endpoint.url }),
        );
        const { code } = await run.exited;
        return { code, first: run.stdout().split('\n')[0] };
      };
      assert.deepEqual(await check(prefix), { code: 0, first: `ok   queues by prefix ${prefix} (2 found: ${prefix}a, ${prefix}b)` });
      assert.deepEqual(await check(`${prefix}none`), {
        code: 1,
        first: `FAIL queues by prefix ${prefix}none: matches no queue: a run starts with a warning and receives nothing until a matching queue appears`,
      });
    } finally {
      for (const url of urls) await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
      sqs.destroy();
    }
  });
});
