// A durable route sends the same event on every delivery of a message (src/invoke/durable-event.ts), because Lambda
// answers a second start under a name with the existing execution only when the payload is identical, and refuses
// another payload with DurableExecutionAlreadyStartedException (AWS Lambda Developer Guide, "Idempotency"). That
// rests on what SQS keeps across receives: this checks it against LocalStack, ElasticMQ and moto, receiving each
// message twice as the daemon receives (every system and message attribute).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ChangeMessageVisibilityCommand, ReceiveMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { createQueue, sendMessages, sqsClient } from '../support/aws.ts';
import { ensureSqsServer, sqsServers } from '../support/sqs-servers.ts';
import { durableEvent } from '../../src/invoke/durable-event.ts';
import { toRecord } from '../../src/invoke/sqs-event.ts';

describe('durable event: the same bytes on every delivery, on LocalStack, ElasticMQ and moto', () => {
  for (const server of sqsServers()) {
    describe(server.name, () => {
      let sqs: SQSClient;
      before(async () => {
        await ensureSqsServer(server);
        sqs = sqsClient(server.endpoint);
      });
      after(() => sqs.destroy());

      const receive = async (url: string): Promise<Message> => {
        const out = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: 1,
            WaitTimeSeconds: 5,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
        );
        const m = out.Messages?.[0];
        assert.ok(m, 'a message was received');
        return m;
      };

      it('a message received twice (new receipt handle, receive count 2) gives the same durable event', async () => {
        const q = await createQueue('wl-durable-conf', { VisibilityTimeout: '30' }, sqs);
        const region = 'us-east-1';
        await sendMessages(q.url, [{ body: '{"order":7}', attributes: { tenant: { DataType: 'String', StringValue: 'acme' } } }], sqs);
        const first = await receive(q.url);
        await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: q.url, ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: 0 }));
        const second = await receive(q.url);
        assert.equal(second.MessageId, first.MessageId);
        // What differs between the two receives, as the trigger's event would carry it.
        const a = toRecord(first, { arn: q.arn, region });
        const b = toRecord(second, { arn: q.arn, region });
        assert.notEqual(JSON.stringify(a), JSON.stringify(b), 'the trigger event differs between receives');
        assert.equal(durableEvent(second, { arn: q.arn, region }), durableEvent(first, { arn: q.arn, region }));
      });
    });
  }
});
