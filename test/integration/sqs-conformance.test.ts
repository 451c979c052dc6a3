// The daemon against three SQS implementations: LocalStack, and two that neither we nor LocalStack wrote,
// ElasticMQ and moto (scripts/sqs-servers.sh; scripts/test.sh starts them). Our fakes share our reading of SQS;
// an independent implementation catches what they cannot: protocol details, error shapes, attribute handling,
// visibility arithmetic. The three run in parallel, each scenario on its own queues.
// Where an implementation lacks a feature, the test skips by name with what the implementation answered.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, it, type TestContext } from 'node:test';
import { ReceiveMessageCommand, SendMessageCommand, type MessageAttributeValue, type SQSClient } from '@aws-sdk/client-sqs';
import { countMessages, createQueue, drainQueue, messageCounts, sendMessages, sqsClient } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { SQS_RECORD_KEYS, until } from '../support/factories.ts';
import { functionFixture } from '../support/functions.ts';
import {
  MAX_SYNC_PAYLOAD_BYTES,
  startLambdaEndpoint,
  type InvocationRecord,
  type LambdaEndpoint,
} from '../support/lambda-endpoint/server.ts';
import { ensureSqsServer, sqsServers } from '../support/sqs-servers.ts';
import { freePort, get, sample } from '../support/http.ts';

/** SQS's largest message since August 2025: body and message attributes together (AWS SQS quotas page). */
const MAX_MESSAGE_BYTES = 1_048_576;

/** An SQS event record as the payload carries it (the fields these tests read). */
interface Rec {
  [key: string]: unknown;
  messageId: string;
  body: string;
  eventSourceARN: string;
  attributes: Record<string, string>;
  messageAttributes: Record<string, { binaryValue?: string; stringValue?: string; dataType: string }>;
}

const records = (inv: InvocationRecord): Rec[] => (inv.payload as { Records?: Rec[] } | null)?.Records ?? [];
const ofQueue = (endpoint: LambdaEndpoint, arn: string): InvocationRecord[] =>
  endpoint.invocations.filter((i) => records(i)[0]?.eventSourceARN === arn);
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
/** The error, when it is the implementation's answer that it refuses the request (HTTP 400); else rethrows it. */
function refusal(error: unknown): Error {
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  if (status !== 400) throw error;
  return error as Error;
}

describe('SQS conformance: the daemon against LocalStack, ElasticMQ and moto', { concurrency: 3 }, () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({
      functions: {
        record: { handler: functionFixture('record.mjs') },
        partial: { handler: functionFixture('partial.mjs') },
        slow: { handler: functionFixture('slow.mjs'), timeoutSec: 30 },
        lease: { handler: functionFixture('lease.mjs'), timeoutSec: 30 },
        // Reserved concurrency 0: every synchronous invoke is throttled (429), as AWS does.
        throttled: { handler: functionFixture('record.mjs'), reservedConcurrency: 0 },
        // Tenant isolation mode: refuses an Invoke without a tenant id; tenant.mjs fails in a shared environment.
        saas: { handler: functionFixture('tenant.mjs'), tenancy: { TenantIsolationMode: 'PER_TENANT' } },
      },
    });
  });
  after(() => endpoint.stop());

  for (const server of sqsServers()) {
    describe(server.name, { concurrency: 1 }, () => {
      let sqs: SQSClient;
      before(async () => {
        await ensureSqsServer(server);
        sqs = sqsClient(server.endpoint);
      });
      /** Every daemon started here: one a failed assertion left running is killed, so the file still ends. */
      const runs: CliRun[] = [];
      after(() => {
        for (const run of runs) if (run.child.exitCode === null) run.child.kill('SIGKILL');
        sqs.destroy();
      });
      // moto's ReceiveMessage takes no lock between "is this message visible" and marking it received
      // (moto/sqs/models.py, receive_message), and its server answers each request on a thread of its own: two
      // receives at once can both take the same message, under load about one FIFO run in twenty here. AWS does not
      // ("Exactly-once processing in Amazon SQS", SQS Developer Guide), and LocalStack and ElasticMQ do not either.
      // So on moto the FIFO cases run one loop, which keeps receives one at a time; their order and tenant rules are
      // the same, and LocalStack and ElasticMQ still run them with several loops.
      const fifoLoops = (loops: number) => String(server.name === 'moto' ? 1 : loops);
      /** The real CLI with SQS at this implementation and Lambda at the test endpoint. */
      const daemon = (args: string[], awsClient: 'lean' | 'sdk' = 'lean') => {
        const run = startDaemon(endpoint.url, ['--aws-client', awsClient, ...args], { AWS_ENDPOINT_URL_SQS: server.endpoint });
        runs.push(run);
        return run;
      };

      for (const awsClient of ['lean', 'sdk'] as const) {
        it(`payload: string, number, binary and custom-type attributes and the system attributes (--aws-client ${awsClient})`, async () => {
          const q = await createQueue('wl-conf-payload', {}, sqs);
          const blob = Buffer.from([0, 1, 2, 250, 255]);
          const sent = await sqs.send(
            new SendMessageCommand({
              QueueUrl: q.url,
              MessageBody: 'Test message.',
              MessageAttributes: {
                city: { DataType: 'String', StringValue: 'Any City' },
                count: { DataType: 'Number', StringValue: '42' },
                blob: { DataType: 'Binary', BinaryValue: blob },
              },
            }),
          );
          const plain = await sqs.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: '{"plain":true}' }));
          // Custom data types (Type.label) are SQS's too; the label must survive into the payload.
          const custom = await sqs.send(
            new SendMessageCommand({
              QueueUrl: q.url,
              MessageBody: 'custom types',
              MessageAttributes: {
                photo: { DataType: 'Binary.jpeg', BinaryValue: blob },
                price: { DataType: 'Number.float', StringValue: '1.5' },
                note: { DataType: 'String.json', StringValue: '{"a":1}' },
              },
            }),
          );
          const run = daemon(['--function', 'record', '--queues', q.name, '--batch-size', '10'], awsClient);
          await started(run);
          await until(() => ofQueue(endpoint, q.arn).flatMap(records).length >= 3, 20_000, 'all three messages delivered', 50);
          assert.equal(await stopDaemon(run), 0);

          const all = ofQueue(endpoint, q.arn).flatMap(records);
          const rec = all.find((r) => r.messageId === sent.MessageId);
          assert.ok(rec, 'the message with attributes was delivered');
          assert.deepEqual(Object.keys(rec), SQS_RECORD_KEYS);
          assert.equal(rec.body, 'Test message.');
          assert.equal(rec['md5OfBody'], sent.MD5OfMessageBody);
          assert.equal(rec['md5OfMessageAttributes'], sent.MD5OfMessageAttributes);
          assert.equal(rec.eventSourceARN, q.arn);
          assert.equal(rec['awsRegion'], 'us-east-1');
          assert.deepEqual(rec.messageAttributes, {
            city: { stringValue: 'Any City', stringListValues: [], binaryListValues: [], dataType: 'String' },
            count: { stringValue: '42', stringListValues: [], binaryListValues: [], dataType: 'Number' },
            blob: { binaryValue: blob.toString('base64'), stringListValues: [], binaryListValues: [], dataType: 'Binary' },
          });
          for (const key of ['ApproximateReceiveCount', 'SentTimestamp', 'SenderId', 'ApproximateFirstReceiveTimestamp']) {
            assert.equal(typeof rec.attributes[key], 'string', `attributes.${key} is a string`);
          }
          assert.equal(rec.attributes['ApproximateReceiveCount'], '1');
          assert.match(rec.attributes['SentTimestamp'] ?? '', /^\d{13}$/);
          assert.match(rec.attributes['ApproximateFirstReceiveTimestamp'] ?? '', /^\d{13}$/);
          for (const v of Object.values(rec.attributes)) assert.equal(typeof v, 'string');
          assert.equal(rec.attributes['MessageGroupId'], undefined, 'no FIFO attributes on a standard queue');

          const customRec = all.find((r) => r.messageId === custom.MessageId);
          assert.ok(customRec, 'the message with custom data types was delivered');
          assert.deepEqual(customRec.messageAttributes, {
            photo: { binaryValue: blob.toString('base64'), stringListValues: [], binaryListValues: [], dataType: 'Binary.jpeg' },
            price: { stringValue: '1.5', stringListValues: [], binaryListValues: [], dataType: 'Number.float' },
            note: { stringValue: '{"a":1}', stringListValues: [], binaryListValues: [], dataType: 'String.json' },
          });
          assert.equal(customRec['md5OfMessageAttributes'], custom.MD5OfMessageAttributes);

          const plainRec = all.find((r) => r.messageId === plain.MessageId);
          assert.ok(plainRec, 'the message without attributes was delivered');
          assert.deepEqual(plainRec.messageAttributes, {});
          assert.equal(plainRec['md5OfMessageAttributes'], null);
          assert.equal(plainRec['md5OfBody'], plain.MD5OfMessageBody);
        });
      }

      it('a queue that does not exist: exit 1 with the same one line from both clients', async () => {
        // Each implementation words the error its own way (JSON __type with or without a namespace, the awsQuery
        // code in x-amzn-query-error); both clients must read it as the SDK's QueueDoesNotExist.
        for (const awsClient of ['lean', 'sdk'] as const) {
          const run = daemon(['--function', 'record', '--queues', 'wl-conf-no-such-queue'], awsClient);
          const { code } = await run.exited;
          assert.equal(code, 1, `--aws-client ${awsClient}`);
          assert.equal(
            run.stderr(),
            'workerless: queue wl-conf-no-such-queue: does not exist (QueueDoesNotExist)\n',
            `--aws-client ${awsClient}`,
          );
        }
      });

      it('FIFO: SequenceNumber, MessageGroupId and MessageDeduplicationId, in order within each group', async () => {
        const q = await createQueue('wl-conf-order.fifo', {}, sqs);
        const sent: { id: string; group: string; body: string; dedup: string }[] = [];
        // Two groups, interleaved, one SendMessage at a time so the order within each group is the send order.
        for (let i = 0; i < 12; i++) {
          const group = i % 2 === 0 ? 'g-a' : 'g-b';
          const body = `${group}-${Math.floor(i / 2)}`;
          const dedup = `d-${i}`;
          const r = await sqs.send(
            new SendMessageCommand({ QueueUrl: q.url, MessageBody: body, MessageGroupId: group, MessageDeduplicationId: dedup }),
          );
          sent.push({ id: r.MessageId ?? '', group, body, dedup });
        }
        const run = daemon(['--function', 'record', '--queues', q.name, '--batch-size', '2', '--concurrency', fifoLoops(4)]);
        await started(run);
        await until(() => ofQueue(endpoint, q.arn).flatMap(records).length >= sent.length, 20_000, 'every message delivered', 50);
        await until(async () => (await countMessages(q.url, sqs)) === 0, 10_000, 'queue empty', 200);
        assert.equal(await stopDaemon(run), 0);

        const got = [...ofQueue(endpoint, q.arn)].sort((a, b) => a.startedAt - b.startedAt).flatMap(records);
        assert.equal(got.length, sent.length, 'each message delivered once');
        for (const group of ['g-a', 'g-b']) {
          assert.deepEqual(
            got.filter((r) => r.attributes['MessageGroupId'] === group).map((r) => r.body),
            sent.filter((s) => s.group === group).map((s) => s.body),
            `group ${group} in send order`,
          );
        }
        for (const r of got) {
          const s = sent.find((m) => m.id === r.messageId);
          assert.ok(s, `${r.messageId} was sent`);
          assert.equal(r.attributes['MessageDeduplicationId'], s.dedup);
          assert.match(r.attributes['SequenceNumber'] ?? '', /^\d+$/);
        }
      });

      for (const awsClient of ['lean', 'sdk'] as const) {
        it(`success deletes; batchItemFailures keep exactly the listed messages, which come back (--aws-client ${awsClient})`, async () => {
          const q = await createQueue('wl-conf-partial', { VisibilityTimeout: '2' }, sqs);
          const bodies = ['ok-1', 'fail-1', 'ok-2', 'ok-3', 'fail-2', 'ok-4'];
          await sendMessages(q.url, bodies, sqs);
          const run = daemon(['--function', 'partial', '--queues', q.name, '--batch-size', '10'], awsClient);
          await started(run);
          const delivered = () => ofQueue(endpoint, q.arn).flatMap(records);
          // The failed ones come back after the visibility timeout: a second delivery with receive count 2.
          await until(
            () =>
              ['fail-1', 'fail-2'].every((b) => delivered().some((r) => r.body === b && r.attributes['ApproximateReceiveCount'] === '2')),
            20_000,
            'both failed messages delivered again',
            50,
          );
          assert.equal(await stopDaemon(run), 0);
          const okDeliveries = delivered().filter((r) => r.body.startsWith('ok-'));
          assert.deepEqual(okDeliveries.map((r) => r.body).sort(), ['ok-1', 'ok-2', 'ok-3', 'ok-4'], 'each success delivered once');
          await until(async () => (await messageCounts(q.url, sqs)).notVisible === 0, 15_000, 'kept messages visible again', 200);
          const left = await drainQueue(q.url, { client: sqs });
          assert.deepEqual(left.map((m) => m.Body).sort(), ['fail-1', 'fail-2'], 'the successes were deleted, the failures kept');
        });
      }

      it('visibility extension: a function slower than the visibility timeout is not delivered again meanwhile', async () => {
        const q = await createQueue('wl-conf-lease', { VisibilityTimeout: '3' }, sqs);
        const [id] = await sendMessages(q.url, [JSON.stringify({ sleepMs: 7000 })], sqs);
        // Two loops, so the daemon itself would receive the message again if its visibility ran out.
        const run = daemon(['--function', 'lease', '--queues', q.name, '--concurrency', '2']);
        await started(run);
        await until(() => ofQueue(endpoint, q.arn).length === 1, 20_000, 'the invocation started', 50);
        // Over two visibility timeouts pass while the function runs; a receive of ours after the first finds nothing.
        await delay(3500);
        const stolen = await sqs.send(new ReceiveMessageCommand({ QueueUrl: q.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 2 }));
        assert.deepEqual(stolen.Messages ?? [], [], 'the message stayed invisible while its function ran');
        await until(() => ofQueue(endpoint, q.arn)[0]?.status === 'success', 20_000, 'the invocation finished', 50);
        await until(async () => (await countMessages(q.url, sqs)) === 0, 10_000, 'the message deleted', 200);
        assert.equal(await stopDaemon(run), 0);
        const deliveries = ofQueue(endpoint, q.arn).flatMap(records);
        assert.deepEqual(
          deliveries.map((r) => [r.messageId, r.attributes['ApproximateReceiveCount']]),
          [[id, '1']],
          'delivered once',
        );
      });

      it("backlog gauges: visible, in flight and delayed in /metrics match the queue's own counts (issue 23)", async () => {
        const q = await createQueue('wl-conf-backlog', { VisibilityTimeout: '60' }, sqs);
        await sendMessages(
          q.url,
          [
            ...Array.from({ length: 6 }, () => JSON.stringify({ sleepMs: 10_000 })),
            ...Array.from({ length: 2 }, (_, i) => ({ body: `delayed-${i}`, delaySeconds: 600 })),
          ],
          sqs,
        );
        const port = await freePort();
        const run = daemon([
          '--function',
          'slow',
          '--queues',
          q.name,
          '--concurrency',
          '2',
          '--visibility-refresh',
          '1s',
          '--http-port',
          String(port),
        ]);
        await started(run);
        await until(
          () => ofQueue(endpoint, q.arn).filter((i) => i.status === 'running').length === 2,
          20_000,
          'two invocations running',
          50,
        );
        const labels = { function: 'slow', queue: q.name };
        let gauges: number[] = [];
        let counts: number[] = [];
        await until(
          async () => {
            const text = (await get(`http://127.0.0.1:${port}`, '/metrics'))?.body ?? '';
            gauges = ['visible', 'not_visible', 'delayed'].map((k) => sample(text, `workerless_queue_messages_${k}`, labels) ?? -1);
            const c = await messageCounts(q.url, sqs);
            counts = [c.visible, c.notVisible, c.delayed];
            return gauges.join() === counts.join();
          },
          6_000,
          'the gauges to match the queue',
          200,
        ).catch(() => {});
        assert.deepEqual(counts, [4, 2, 2], "the queue's own counts");
        assert.deepEqual(gauges, counts, 'the gauges');
        assert.equal(await stopDaemon(run), 0);
      });

      // A stop lets a throttled batch retry for --shutdown-timeout minus 15 s (drainRetryMs in src/daemon/shutdown.ts), then releases it: 15 releases
      // at once; 17 retries for 2 s first. With --adaptive-concurrency the Invoke also waits for a permit.
      const releasePaths = [
        { name: 'released at once', args: ['--shutdown-timeout', '15'] },
        { name: 'after 2 s of retries, with --adaptive-concurrency', args: ['--shutdown-timeout', '17', '--adaptive-concurrency', 'on'] },
      ];
      for (const path of releasePaths) {
        it(`release on shutdown while the function is throttled (${path.name}): the messages are visible again at once`, async () => {
          // One loop: the release is what this proves; with more loops see the next test.
          const { back } = await releaseOnShutdown(['--concurrency', '1', ...path.args]);
          assert.deepEqual(back.map((m) => m.Body).sort(), ['r-1', 'r-2', 'r-3']);
          assert.deepEqual(
            back.map((m) => m.Attributes?.['ApproximateReceiveCount']),
            ['2', '2', '2'],
            'received once by the daemon, once by the drain',
          );
        });
      }

      it(
        'release on shutdown with several loops: a stop raises the receive count by one at most',
        // Found by this suite (LocalStack and ElasticMQ; moto's long poll does not wake up for a released message,
        // AWS's does): a loop's long poll that was open at the stop received what another loop had just released, was
        // throttled and released it again, once per loop, so one SIGTERM could walk messages into a DLQ. The drain now
        // releases only once the dispatcher's own receives have returned (Receiver.quiet()).
        async () => {
          const { back } = await releaseOnShutdown(['--concurrency', '4', '--shutdown-timeout', '15']);
          assert.deepEqual(
            back.map((m) => m.Attributes?.['ApproximateReceiveCount']),
            ['2', '2', '2'],
            'received once by the daemon, once by the drain',
          );
        },
      );

      /** Three messages held by a daemon whose function is throttled, stopped; what a drain then finds. */
      async function releaseOnShutdown(args: string[]) {
        const q = await createQueue('wl-conf-release', { VisibilityTimeout: '60' }, sqs);
        await sendMessages(q.url, ['r-1', 'r-2', 'r-3'], sqs);
        const run = daemon(['--function', 'throttled', '--queues', q.name, '--batch-size', '10', ...args]);
        await started(run);
        await run.waitForLog((l) => l['msg'] === 'function throttled, retrying', 20_000);
        assert.equal((await messageCounts(q.url, sqs)).notVisible, 3, 'the daemon holds the messages');
        assert.equal(await stopDaemon(run), 0);
        // With a 60 s visibility timeout only a release (ChangeMessageVisibilityBatch to 0) makes them visible now.
        await until(async () => (await messageCounts(q.url, sqs)).visible === 3, 5_000, 'the messages visible again', 200);
        assert.equal((await messageCounts(q.url, sqs)).notVisible, 0);
        return { back: await drainQueue(q.url, { client: sqs }) };
      }

      it('SIGTERM mid-invocation: the invocations finish, their messages are deleted, none runs twice', async () => {
        const q = await createQueue('wl-conf-sigterm', { VisibilityTimeout: '30' }, sqs);
        const ids = await sendMessages(
          q.url,
          Array.from({ length: 3 }, () => JSON.stringify({ sleepMs: 2000 })),
          sqs,
        );
        const run = daemon(['--function', 'slow', '--queues', q.name, '--concurrency', '3', '--batch-size', '1']);
        await started(run);
        await until(
          () => ofQueue(endpoint, q.arn).filter((i) => i.status === 'running').length === 3,
          20_000,
          'three invocations running',
          20,
        );
        const stoppedAt = Date.now();
        assert.equal(await stopDaemon(run), 0);
        const mine = ofQueue(endpoint, q.arn);
        assert.deepEqual(
          mine
            .flatMap(records)
            .map((r) => r.messageId)
            .sort(),
          [...ids].sort(),
          'each message invoked once',
        );
        assert.ok(
          mine.every((i) => i.status === 'success' && (i.endedAt ?? 0) >= stoppedAt),
          'all three ran to the end',
        );
        assert.equal(await countMessages(q.url, sqs), 0, 'and were deleted');
      });

      it('a MessageGroupId on a standard queue (fair queues) is passed through and never treated as FIFO', async (t: TestContext) => {
        // SQS fair queues (July 2025): on a standard queue the group is a tenant key only, with no ordering.
        const q = await createQueue('wl-conf-fair', { VisibilityTimeout: '30' }, sqs);
        const bodies = ['fail-1', 'ok-1', 'ok-2', 'ok-3'];
        const ids: string[] = [];
        for (const body of bodies) {
          try {
            const r = await sqs.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: body, MessageGroupId: 'tenant-a' }));
            ids.push(r.MessageId ?? '');
          } catch (error) {
            // AWS accepts it since July 2025. Older ElasticMQ releases refused it (elasticmq#1137); 1.7.1 accepts it
            // on both protocols and returns it (checked 2026-11-24), as moto 5.2.5 and LocalStack 4.13.1 do.
            const e = refusal(error);
            t.skip(`${server.name} refuses MessageGroupId on a standard queue: ${e.name}: ${e.message}`);
            return;
          }
        }
        const run = daemon(['--function', 'partial', '--queues', q.name, '--batch-size', '10']);
        await started(run);
        await until(() => ofQueue(endpoint, q.arn).flatMap(records).length >= bodies.length, 20_000, 'all four invoked', 20);
        // The FIFO rule would keep the failed message and every later one of its group; here only the failed one stays.
        await until(async () => (await countMessages(q.url, sqs)) <= 1, 15_000, 'the successes deleted', 200);
        assert.equal(await stopDaemon(run), 0);
        assert.equal(await countMessages(q.url, sqs), 1, 'only the failed message stays');
        const recs = ofQueue(endpoint, q.arn).flatMap(records);
        assert.deepEqual(recs.map((r) => r.messageId).sort(), [...ids].sort(), 'each delivered once');
        if (recs.every((r) => r.attributes['MessageGroupId'] === undefined)) {
          t.skip(`${server.name} accepts MessageGroupId on a standard queue but does not return it in ReceiveMessage's attributes`);
          return;
        }
        for (const r of recs) {
          assert.equal(r.attributes['MessageGroupId'], 'tenant-a', 'passed through in attributes');
          assert.equal(r.attributes['SequenceNumber'], undefined, 'no FIFO sequence number');
        }
      });

      it('tenant-isolated function, FIFO, tenant from a String attribute: one tenant per invocation, each group in order', async () => {
        const q = await createQueue('wl-conf-tenant.fifo', {}, sqs);
        const sent: { id: string; group: string; tenant: string }[] = [];
        // Group g-a changes tenant every other message (the split cuts it there); g-b is one tenant.
        for (let i = 0; i < 12; i++) {
          const group = i % 2 === 0 ? 'g-a' : 'g-b';
          const tenant = group === 'g-b' ? 't3' : i % 4 === 0 ? 't1' : 't2';
          const r = await sqs.send(
            new SendMessageCommand({
              QueueUrl: q.url,
              MessageBody: `${group}-${i}`,
              MessageGroupId: group,
              MessageDeduplicationId: `d-${i}`,
              MessageAttributes: { tenant: { DataType: 'String', StringValue: tenant } },
            }),
          );
          sent.push({ id: r.MessageId ?? '', group, tenant });
        }
        const run = daemon([
          '--function',
          'saas',
          '--queues',
          q.name,
          '--tenant-id-from',
          'attribute:tenant',
          '--batch-size',
          '10',
          '--concurrency',
          fifoLoops(10),
        ]);
        await started(run);
        await until(() => ofQueue(endpoint, q.arn).flatMap(records).length >= sent.length, 20_000, 'every message delivered', 50);
        await until(async () => (await countMessages(q.url, sqs)) === 0, 10_000, 'queue empty', 200);
        assert.equal(await stopDaemon(run), 0);

        const invs = ofQueue(endpoint, q.arn);
        for (const inv of invs) {
          assert.equal(inv.status, 'success', JSON.stringify(inv.error));
          assert.deepEqual([...new Set(records(inv).map((r) => r.messageAttributes['tenant']?.stringValue))], [inv.tenantId]);
        }
        // Invocations in arrival order, records in payload order.
        const got = invs.flatMap(records);
        assert.deepEqual(got.map((r) => r.messageId).sort(), sent.map((m) => m.id).sort(), 'each delivered once');
        for (const group of ['g-a', 'g-b'])
          assert.deepEqual(
            got.filter((r) => r.attributes['MessageGroupId'] === group).map((r) => r.messageId),
            sent.filter((m) => m.group === group).map((m) => m.id),
            `group ${group} in send order`,
          );
      });

      it('tenant-isolated function, fair queue, tenant from MessageGroupId: one tenant per invocation', async (t: TestContext) => {
        const q = await createQueue('wl-conf-tenant-fair', {}, sqs);
        const sent = new Map<string, string>();
        for (let i = 0; i < 12; i++) {
          const tenant = `tenant-${i % 3}`;
          try {
            const r = await sqs.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: `m-${i}`, MessageGroupId: tenant }));
            sent.set(r.MessageId ?? '', tenant);
          } catch (error) {
            const e = refusal(error);
            t.skip(`${server.name} refuses MessageGroupId on a standard queue: ${e.name}: ${e.message}`);
            return;
          }
        }
        const run = daemon(['--function', 'saas', '--queues', q.name, '--tenant-id-from', 'group', '--batch-size', '10']);
        await started(run);
        await until(() => ofQueue(endpoint, q.arn).flatMap(records).length >= sent.size, 20_000, 'every message delivered', 50);
        await until(async () => (await countMessages(q.url, sqs)) === 0, 10_000, 'queue empty', 200);
        assert.equal(await stopDaemon(run), 0);
        const invs = ofQueue(endpoint, q.arn);
        assert.deepEqual(
          invs
            .flatMap(records)
            .map((r) => r.messageId)
            .sort(),
          [...sent.keys()].sort(),
          'each delivered once',
        );
        for (const inv of invs) {
          assert.equal(inv.status, 'success', JSON.stringify(inv.error));
          assert.deepEqual([...new Set(records(inv).map((r) => sent.get(r.messageId)))], [inv.tenantId]);
        }
      });

      for (const awsClient of ['lean', 'sdk'] as const) {
        it(`1 MiB messages with binary attributes are split over invocations of at most 6 MB (--aws-client ${awsClient})`, async (t: TestContext) => {
          const q = await createQueue('wl-conf-large', {}, sqs);
          // SQS counts a message attribute as its name, data type and value: body + attribute = exactly 1 MiB.
          const blobs = Array.from({ length: 7 }, () => randomBytes(64 * 1024));
          const attributeBytes = 'blob'.length + 'Binary'.length + 64 * 1024;
          const messages = blobs.map((blob, i) => ({
            body: String(i).padEnd(MAX_MESSAGE_BYTES - attributeBytes, 'x'),
            attributes: { blob: { DataType: 'Binary', BinaryValue: blob } } satisfies Record<string, MessageAttributeValue>,
          }));
          const ids: string[] = [];
          for (const m of messages) {
            // One at a time: a SendMessageBatch carries at most 1 MiB in all.
            try {
              const r = await sqs.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: m.body, MessageAttributes: m.attributes }));
              ids.push(r.MessageId ?? '');
            } catch (error) {
              const e = refusal(error);
              t.skip(`${server.name} refuses a message of ${MAX_MESSAGE_BYTES} bytes (SQS's maximum): ${e.name}: ${e.message}`);
              return;
            }
          }
          const run = daemon(['--function', 'record', '--queues', q.name, '--batch-size', '10'], awsClient);
          await started(run);
          await until(() => ofQueue(endpoint, q.arn).flatMap(records).length >= ids.length, 30_000, 'every message delivered', 50);
          await until(async () => (await countMessages(q.url, sqs)) === 0, 15_000, 'all deleted', 200);
          assert.equal(await stopDaemon(run), 0);
          const invocations = ofQueue(endpoint, q.arn);
          for (const inv of invocations) {
            assert.equal(inv.status, 'success');
            assert.ok(inv.payloadBytes <= MAX_SYNC_PAYLOAD_BYTES, `an invocation of ${inv.payloadBytes} bytes is within 6 MB`);
          }
          assert.ok(invocations.length >= 2, `7 MiB of messages took ${invocations.length} invocations`);
          const recs = invocations.flatMap(records);
          assert.deepEqual(recs.map((r) => r.messageId).sort(), [...ids].sort(), 'each delivered once');
          for (const r of recs) {
            const i = ids.indexOf(r.messageId);
            assert.equal(sha256(r.body), sha256(messages[i]?.body ?? ''), `body of message ${i} intact`);
            const blob = r.messageAttributes['blob'];
            assert.equal(blob?.dataType, 'Binary');
            assert.equal(
              sha256(Buffer.from(blob?.binaryValue ?? '', 'base64')),
              sha256(blobs[i] ?? ''),
              `binary attribute of message ${i} intact`,
            );
          }
        });
      }
    });
  }
});
