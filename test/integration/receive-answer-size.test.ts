// The largest ReceiveMessage answers SQS may legally send are read, on LocalStack, ElasticMQ and moto, with both
// clients. A message is at most 1 MiB, body and attributes ("Amazon SQS message quotas",
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html), and its body
// may hold #x9 #xA #xD and #x20 to #xD7FF and more (SendMessage API reference, MessageBody,
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html). In the JSON answer
// every `"` doubles, and LocalStack and moto write DEL (#x7F) as \u007f, six bytes: ten such messages make an answer
// of 20 to 60 MiB. Refused, they were received all the same and came back after their visibility timeout, one more
// receive count each time, never invoked.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { countMessages, createQueue, sqsClient } from '../support/aws.ts';
import type { CliRun } from '../support/cli.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type InvocationRecord, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureSqsServer, sqsServers } from '../support/sqs-servers.ts';

/** SQS's largest message body (no attributes): 1 MiB. */
const MAX_MESSAGE_BYTES = 1_048_576;

interface Rec {
  messageId: string;
  receiptHandle: string;
  body: string;
  eventSourceARN: string;
  attributes: Record<string, string>;
}
const records = (inv: InvocationRecord): Rec[] => (inv.payload as { Records?: Rec[] } | null)?.Records ?? [];
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

describe('ReceiveMessage answers of ten 1 MiB messages that JSON escapes grow', { concurrency: 3 }, () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({ functions: { record: { handler: functionFixture('record.mjs') } } });
  });
  after(() => endpoint.stop());

  for (const server of sqsServers()) {
    describe(server.name, { concurrency: 1 }, () => {
      let sqs: SQSClient;
      const runs: CliRun[] = [];
      before(async () => {
        await ensureSqsServer(server);
        sqs = sqsClient(server.endpoint);
      });
      after(() => {
        for (const run of runs) if (run.child.exitCode === null) run.child.kill('SIGKILL');
        sqs.destroy();
      });

      for (const awsClient of ['lean', 'sdk'] as const) {
        it(`every message is invoked, from its first receive, and no receive twice (--aws-client ${awsClient})`, async (t) => {
          // 30 s, not 5: the visibility timeout runs from when the server hands the messages out, and a Python
          // server writing 60 MiB to the SDK's parser took more than 5 s with other test files beside it (one
          // message invoked twice, moto, --aws-client sdk). A refused answer still shows: its messages come back
          // after 30 s with a receive count of 2, within the minute waited for them.
          const q = await createQueue('wl-escapes', { VisibilityTimeout: '30' }, sqs);
          // 7 of `"` (2 MiB each in any answer: over 16 MiB on ElasticMQ, which writes the rest as they are) and 3 of DEL.
          const bodies = Array.from({ length: 10 }, (_, i) => (i < 7 ? '"' : '\u007f').repeat(MAX_MESSAGE_BYTES));
          const sent = new Map<string, string>();
          // One at a time: a SendMessageBatch carries at most 1 MiB in all.
          for (const body of bodies) {
            const r = await sqs.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: body }));
            sent.set(r.MessageId ?? '', sha256(body));
          }
          const run = startDaemon(
            endpoint.url,
            ['--aws-client', awsClient, '--function', 'record', '--queues', q.name, '--batch-size', '10'],
            { AWS_ENDPOINT_URL_SQS: server.endpoint },
          );
          runs.push(run);
          await started(run);
          const mine = () => endpoint.invocations.flatMap(records).filter((r) => r.eventSourceARN === q.arn);
          await until(() => mine().length >= sent.size, 60_000, 'every message invoked', 100);
          await until(async () => (await countMessages(q.url, sqs)) === 0, 20_000, 'all deleted', 200);
          assert.equal(await stopDaemon(run), 0);
          const recs = mine();
          // A receive is invoked once: its receipt handle is never seen twice. A message may be handed out by two
          // receives all the same: standard queues deliver at least once ("Amazon SQS at-least-once delivery",
          // https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues-at-least-once-delivery.html),
          // and moto does so under load: its ReceiveMessage reads `message.visible` and marks it received without a
          // lock, in threads that run concurrent receives (moto/sqs/models.py, receive_message).
          const handles = recs.map((r) => r.receiptHandle);
          assert.equal(new Set(handles).size, handles.length, 'a receive invoked twice');
          const twice = recs.filter((r, i) => recs.findIndex((o) => o.messageId === r.messageId) !== i);
          if (twice.length > 0) {
            t.diagnostic(
              `handed out by two receives: ${JSON.stringify(twice.map((r) => ({ id: r.messageId, receiveCount: r.attributes['ApproximateReceiveCount'] })))}`,
            );
          }
          assert.deepEqual([...new Set(recs.map((r) => r.messageId))].sort(), [...sent.keys()].sort(), 'each invoked');
          for (const r of recs) assert.equal(sha256(r.body), sent.get(r.messageId), `body of ${r.messageId} intact`);
          // A refused answer would leave its messages to come back after 30 s, on their second receive at the earliest.
          for (const id of sent.keys()) {
            const counts = recs.filter((r) => r.messageId === id).map((r) => r.attributes['ApproximateReceiveCount']);
            assert.ok(counts.includes('1'), `${id} invoked on its first receive (receive counts ${counts.join(', ')})`);
          }
        });
      }
    });
  }
});
