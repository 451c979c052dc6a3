// The benchmark's library peer: npm's sqs-consumer (bbc/sqs-consumer) with one Lambda Invoke per message.
// sqs-consumer runs one poll loop per Consumer, so concurrency C is C consumers on one queue, sharing one
// SQSClient and one LambdaClient. Batch size 1: handleMessage invokes with that message and returns it
// (sqs-consumer then deletes it with DeleteMessage). Batch size B > 1: handleMessageBatch invokes once with
// all B messages and returns them (one DeleteMessageBatch).
//
//   node bench/peers/sqs-consumer-peer.ts --queue-url URL --function NAME [--concurrency C] [--batch-size B]
//
// Endpoints, region and credentials from the environment, as for workerless. Prints {"msg":"ready"} after
// GetQueueAttributes and a DryRun Invoke; SIGTERM stops the consumers and exits 0.
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { GetQueueAttributesCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';
import { Consumer } from 'sqs-consumer';
import { peerArgs } from './peer-args.ts';

const { queueUrl, functionName, concurrency, batchSize } = peerArgs('sqs-consumer-peer.ts');

const customSqsEndpoint = Boolean(process.env['AWS_ENDPOINT_URL_SQS'] ?? process.env['AWS_ENDPOINT_URL']);
const sqs = new SQSClient({ useQueueUrlAsEndpoint: !customSqsEndpoint });
const lambda = new LambdaClient({});
const region = process.env['AWS_REGION'] ?? 'us-east-1';
const attributes = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
const queueArn = attributes.Attributes?.['QueueArn'] ?? '';
await lambda.send(new InvokeCommand({ FunctionName: functionName, InvocationType: 'DryRun' }));

function toEvent(messages: Message[]): Uint8Array {
  return Buffer.from(
    JSON.stringify({
      Records: messages.map((m) => ({
        messageId: m.MessageId,
        receiptHandle: m.ReceiptHandle,
        body: m.Body,
        attributes: {},
        messageAttributes: {},
        md5OfBody: m.MD5OfBody,
        eventSource: 'aws:sqs',
        eventSourceARN: queueArn,
        awsRegion: region,
      })),
    }),
  );
}

async function invoke(messages: Message[]): Promise<void> {
  const out = await lambda.send(
    new InvokeCommand({ FunctionName: functionName, InvocationType: 'RequestResponse', Payload: toEvent(messages) }),
  );
  // Throwing leaves the messages on the queue (sqs-consumer emits processing_error).
  if (out.FunctionError !== undefined) throw new Error(`function error: ${out.FunctionError}`);
}

const consumers = Array.from({ length: concurrency }, () =>
  Consumer.create({
    queueUrl,
    sqs,
    batchSize,
    waitTimeSeconds: 1,
    useQueueUrlAsEndpoint: !customSqsEndpoint,
    ...(batchSize === 1
      ? {
          handleMessage: async (message: Message) => {
            await invoke([message]);
            return message;
          },
        }
      : {
          handleMessageBatch: async (messages: Message[]) => {
            await invoke(messages);
            return messages;
          },
        }),
  }),
);
for (const c of consumers) {
  c.on('error', (err) => process.stderr.write(`sqs-consumer error: ${err.message}\n`));
  c.on('processing_error', (err) => process.stderr.write(`processing error: ${err.message}\n`));
  c.start();
}
process.stdout.write(`${JSON.stringify({ msg: 'ready', pid: process.pid, concurrency, batchSize })}\n`);

const stop = () => {
  for (const c of consumers) c.stop();
  setTimeout(() => {
    sqs.destroy();
    lambda.destroy();
    process.exit(0);
  }, 200);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
