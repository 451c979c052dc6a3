// The benchmark's peer: an SQS -> Lambda consumer written the way people usually hand-roll one.
// C async loops, each: ReceiveMessage (1 message, 1 s long poll) -> a minimal {"Records":[...]} event ->
// Invoke (RequestResponse) -> DeleteMessage. No batching, no sharing between loops.
//
//   node bench/peers/naive-consumer.ts --queue-url URL --function NAME [--concurrency C]
//
// Endpoints, region and credentials come from the environment (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_LAMBDA,
// AWS_REGION, ...), exactly as for workerless. Prints {"msg":"ready"} on stdout once its clients have made
// their first calls (the queue's ARN, a DryRun invoke), so a benchmark can leave start-up out of its figures.
// Stops on SIGTERM/SIGINT: no new receives, the message in hand is finished, exit 0.
import { parseArgs } from 'node:util';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { DeleteMessageCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';

const { values } = parseArgs({
  options: {
    'queue-url': { type: 'string' },
    function: { type: 'string' },
    concurrency: { type: 'string', default: '10' },
  },
});
const queueUrl = values['queue-url'];
const functionName = values.function;
const concurrency = Number(values.concurrency);
if (!queueUrl || !functionName || !Number.isInteger(concurrency) || concurrency < 1) {
  process.stderr.write('usage: node bench/peers/naive-consumer.ts --queue-url URL --function NAME [--concurrency C]\n');
  process.exit(2);
}

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

function toEvent(message: Message): string {
  return JSON.stringify({
    Records: [
      {
        messageId: message.MessageId,
        receiptHandle: message.ReceiptHandle,
        body: message.Body,
        attributes: {},
        messageAttributes: {},
        md5OfBody: message.MD5OfBody,
        eventSource: 'aws:sqs',
        eventSourceARN: queueArn,
        awsRegion: region,
      },
    ],
  });
}

async function handle(message: Message): Promise<void> {
  const result = await lambda.send(
    new InvokeCommand({ FunctionName: functionName, InvocationType: 'RequestResponse', Payload: Buffer.from(toEvent(message)) }),
  );
  if (result.FunctionError !== undefined) {
    process.stderr.write(`function error for ${message.MessageId}: ${result.FunctionError}\n`);
    return; // the message comes back after its visibility timeout
  }
  await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }));
}

async function loop(): Promise<void> {
  while (!stop.signal.aborted) {
    let messages: Message[];
    try {
      const received = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, WaitTimeSeconds: 1 }),
        { abortSignal: stop.signal },
      );
      messages = received.Messages ?? [];
    } catch (err) {
      if (stop.signal.aborted) break;
      process.stderr.write(`receive failed: ${String(err)}\n`);
      await sleep(1000);
      continue;
    }
    for (const message of messages) {
      try {
        await handle(message);
      } catch (err) {
        process.stderr.write(`message ${message.MessageId} failed: ${String(err)}\n`);
      }
    }
  }
}

await Promise.all(Array.from({ length: concurrency }, () => loop()));
sqs.destroy();
lambda.destroy();
