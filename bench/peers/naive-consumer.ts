// The benchmark's peer: an SQS -> Lambda consumer written the way people usually hand-roll one.
// C async loops, each: ReceiveMessage (1 message, 1 s long poll) -> a minimal {"Records":[...]} event ->
// Invoke (RequestResponse) -> DeleteMessage. No batching, no sharing between loops.
//
//   node bench/peers/naive-consumer.ts --queue-url URL --function NAME [--concurrency C] [--batch-size B]
//
// With --batch-size B > 1 (bench/fast.ts): each loop receives up to B messages, invokes once with all of them
// as Records and deletes them with one DeleteMessageBatch.
//
// Endpoints, region and credentials come from the environment (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_LAMBDA,
// AWS_REGION, ...), exactly as for workerless. Prints {"msg":"ready"} on stdout once its clients have made
// their first calls (the queue's ARN, a DryRun invoke), so a benchmark can leave start-up out of its figures.
// Stops on SIGTERM/SIGINT: no new receives, the message in hand is finished, exit 0.
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import {
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import { peerArgs } from './peer-args.ts';

const { queueUrl, functionName, concurrency, batchSize } = peerArgs('naive-consumer.ts');

const stop = new AbortController();
process.on('SIGTERM', () => stop.abort());
process.on('SIGINT', () => stop.abort());

// Same setting as workerless: with a custom SQS endpoint (LocalStack) send every call there, not to the
// queue URL's host. Everything else is the SDK's defaults.
const customSqsEndpoint = Boolean(process.env['AWS_ENDPOINT_URL_SQS'] ?? process.env['AWS_ENDPOINT_URL']);
const sqs = new SQSClient({ useQueueUrlAsEndpoint: !customSqsEndpoint });
const lambda = new LambdaClient({});

const region = process.env['AWS_REGION'] ?? 'us-east-1';
const attributes = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
const queueArn = attributes.Attributes?.['QueueArn'] ?? '';
await lambda.send(new InvokeCommand({ FunctionName: functionName, InvocationType: 'DryRun' }));
process.stdout.write(`${JSON.stringify({ msg: 'ready', pid: process.pid, concurrency })}\n`);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function toEvent(messages: Message[]): string {
  return JSON.stringify({
    Records: messages.map((message) => ({
      messageId: message.MessageId,
      receiptHandle: message.ReceiptHandle,
      body: message.Body,
      attributes: {},
      messageAttributes: {},
      md5OfBody: message.MD5OfBody,
      eventSource: 'aws:sqs',
      eventSourceARN: queueArn,
      awsRegion: region,
    })),
  });
}

async function handle(messages: Message[]): Promise<void> {
  const result = await lambda.send(
    new InvokeCommand({ FunctionName: functionName, InvocationType: 'RequestResponse', Payload: Buffer.from(toEvent(messages)) }),
  );
  if (result.FunctionError !== undefined) {
    process.stderr.write(`function error for ${messages.map((m) => m.MessageId).join(',')}: ${result.FunctionError}\n`);
    return; // the messages come back after their visibility timeout
  }
  if (messages.length === 1) {
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: messages[0]!.ReceiptHandle }));
    return;
  }
  await sqs.send(
    new DeleteMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
    }),
  );
}

async function loop(): Promise<void> {
  while (!stop.signal.aborted) {
    let messages: Message[];
    try {
      const received = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: batchSize, WaitTimeSeconds: 1 }),
        { abortSignal: stop.signal },
      );
      messages = received.Messages ?? [];
    } catch (err) {
      if (stop.signal.aborted) break;
      process.stderr.write(`receive failed: ${String(err)}\n`);
      await sleep(1000);
      continue;
    }
    if (messages.length === 0) continue;
    try {
      await handle(messages);
    } catch (err) {
      process.stderr.write(`messages ${messages.map((m) => m.MessageId).join(',')} failed: ${String(err)}\n`);
    }
  }
}

await Promise.all(Array.from({ length: concurrency }, () => loop()));
sqs.destroy();
lambda.destroy();
