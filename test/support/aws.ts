// AWS clients and SQS helpers for integration tests against LocalStack (localstack/localstack.sh start) or, where
// a helper takes an SQS client, any SQS implementation (test/support/sqs-servers.ts: ElasticMQ, moto).
// Every helper builds what it needs and keeps no module-level state, so test files can run in parallel.
import { randomUUID } from 'node:crypto';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { LambdaClient } from '@aws-sdk/client-lambda';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
  type Message,
  type MessageAttributeValue,
  type QueueAttributeName,
  type SendMessageBatchRequestEntry,
} from '@aws-sdk/client-sqs';
import { phaseTls } from './phase-tls.ts';

export const TEST_REGION = 'us-east-1';
export const TEST_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' } as const;
/** LocalStack's default account: it appears in every queue ARN and URL. */
export const LOCALSTACK_ACCOUNT_ID = '000000000000';

/** From LOCALSTACK_ENDPOINT; default http://127.0.0.1:4566. */
export function localstackEndpoint(): string {
  return process.env['LOCALSTACK_ENDPOINT'] ?? 'http://127.0.0.1:4566';
}

/**
 * Environment for a child process (the daemon under test) that talks to LocalStack:
 * `spawn(cmd, args, { env: { ...process.env, ...awsTestEnv({ lambdaEndpoint }) } })`.
 * Uses the SDK's service-specific endpoint variables, so SQS and CloudWatch go to LocalStack while Lambda goes
 * to `lambdaEndpoint` (the test Lambda endpoint) when given.
 */
export function awsTestEnv(opts: { lambdaEndpoint?: string } = {}): Record<string, string> {
  const endpoint = localstackEndpoint();
  const tls = phaseTls();
  return {
    AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
    AWS_REGION: TEST_REGION,
    AWS_DEFAULT_REGION: TEST_REGION,
    AWS_ENDPOINT_URL_SQS: endpoint,
    AWS_ENDPOINT_URL_CLOUDWATCH: endpoint,
    // Never reach for instance metadata or a developer's profile while testing.
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: '/dev/null',
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
    // The TLS phase's private CA, given as a user behind one gives it (phase-tls.ts).
    ...(tls === undefined ? {} : { AWS_CA_BUNDLE: tls.bundlePath }),
    ...(opts.lambdaEndpoint === undefined ? {} : { AWS_ENDPOINT_URL_LAMBDA: opts.lambdaEndpoint }),
  };
}

const clientConfig = (endpoint = localstackEndpoint()) => ({ endpoint, region: TEST_REGION, credentials: TEST_CREDENTIALS });

/**
 * An SQSClient for LocalStack, or for another SQS implementation at `endpoint`. The explicit endpoint matters:
 * LocalStack's queue URLs name localhost:4566, and without it the SDK would send each call to the QueueUrl's
 * host instead.
 */
export function sqsClient(endpoint?: string): SQSClient {
  return new SQSClient(clientConfig(endpoint));
}

/**
 * A LambdaClient for the test Lambda endpoint at `endpoint`, with one attempt: the SDK would otherwise retry
 * throttles and 5xx and hide what the endpoint answered.
 */
export function lambdaClient(endpoint: string): LambdaClient {
  return new LambdaClient({ endpoint, region: TEST_REGION, credentials: TEST_CREDENTIALS, maxAttempts: 1 });
}

export function cloudWatchClient(): CloudWatchClient {
  return new CloudWatchClient(clientConfig());
}

export interface TestQueue {
  name: string;
  url: string;
  arn: string;
}

/** prefix + '-' + 8 random hex chars (+ '.fifo' when prefix ends with .fifo), within SQS's 80-char limit. */
export function uniqueQueueName(prefix: string): string {
  const fifo = prefix.endsWith('.fifo');
  const base = (fifo ? prefix.slice(0, -5) : prefix).replace(/[^a-zA-Z0-9_-]/g, '-').slice(0, 66);
  return `${base}-${randomUUID().slice(0, 8)}${fifo ? '.fifo' : ''}`;
}

/**
 * Creates a uniquely named queue. A prefix ending in `.fifo` makes a FIFO queue (FifoQueue=true is added).
 * `attributes` are SQS queue attributes as strings, e.g. { VisibilityTimeout: '5' }.
 */
export async function createQueue(
  prefix: string,
  attributes: Partial<Record<QueueAttributeName, string>> = {},
  client: SQSClient = sqsClient(),
): Promise<TestQueue> {
  const name = uniqueQueueName(prefix);
  const fifo = name.endsWith('.fifo');
  const created = await client.send(
    new CreateQueueCommand({ QueueName: name, Attributes: { ...(fifo ? { FifoQueue: 'true' } : {}), ...attributes } }),
  );
  const url = created.QueueUrl;
  if (url === undefined) throw new Error(`CreateQueue ${name} returned no QueueUrl`);
  const attrs = await client.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  const arn = attrs.Attributes?.['QueueArn'];
  if (arn === undefined) throw new Error(`GetQueueAttributes ${name} returned no QueueArn`);
  return { name, url, arn };
}

/** A queue whose RedrivePolicy moves a message to a new DLQ after maxReceiveCount receives. */
export async function createQueueWithDlq(
  prefix: string,
  maxReceiveCount: number,
  attributes: Partial<Record<QueueAttributeName, string>> = {},
  client: SQSClient = sqsClient(),
): Promise<{ queue: TestQueue; dlq: TestQueue }> {
  const fifo = prefix.endsWith('.fifo');
  const dlqPrefix = fifo ? `${prefix.slice(0, -5)}-dlq.fifo` : `${prefix}-dlq`;
  const dlq = await createQueue(dlqPrefix, {}, client);
  const queue = await createQueue(
    prefix,
    { ...attributes, RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount }) },
    client,
  );
  return { queue, dlq };
}

export interface MessageToSend {
  body: string;
  attributes?: Record<string, MessageAttributeValue>;
  /** FIFO only. */
  groupId?: string;
  /** FIFO only; default a random id so queues without content-based deduplication accept it. */
  deduplicationId?: string;
  delaySeconds?: number;
}

/** `n` message bodies: `<prefix>-0`, `<prefix>-1`, ... */
export const bodies = (n: number, prefix: string): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

/** Sends with SendMessageBatch in chunks of 10 (the SQS maximum); returns the message ids in order. */
export async function sendMessages(
  url: string,
  messages: ReadonlyArray<string | MessageToSend>,
  client: SQSClient = sqsClient(),
): Promise<string[]> {
  const fifo = url.endsWith('.fifo');
  const ids: string[] = [];
  for (let start = 0; start < messages.length; start += 10) {
    const chunk = messages.slice(start, start + 10);
    const entries: SendMessageBatchRequestEntry[] = chunk.map((m, i) => {
      const message = typeof m === 'string' ? { body: m } : m;
      return {
        Id: String(i),
        MessageBody: message.body,
        MessageAttributes: message.attributes,
        DelaySeconds: message.delaySeconds,
        ...(fifo ? { MessageGroupId: message.groupId ?? 'default', MessageDeduplicationId: message.deduplicationId ?? randomUUID() } : {}),
      };
    });
    const result = await client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: entries }));
    if (result.Failed !== undefined && result.Failed.length > 0) {
      throw new Error(`SendMessageBatch to ${url} failed: ${JSON.stringify(result.Failed)}`);
    }
    const byId = new Map((result.Successful ?? []).map((s) => [s.Id, s.MessageId]));
    for (let i = 0; i < chunk.length; i += 1) {
      const id = byId.get(String(i));
      if (id === undefined) throw new Error(`SendMessageBatch to ${url}: no result for entry ${i}`);
      ids.push(id);
    }
  }
  return ids;
}

/**
 * Receives (with all system and message attributes) and deletes until a receive comes back empty;
 * returns what it removed. Messages still in flight elsewhere are not waited for.
 */
export async function drainQueue(url: string, opts: { waitTimeSec?: number; client?: SQSClient } = {}): Promise<Message[]> {
  const client = opts.client ?? sqsClient();
  const drained: Message[] = [];
  for (;;) {
    const received = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: opts.waitTimeSec ?? 1,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    const messages = received.Messages ?? [];
    if (messages.length === 0) return drained;
    drained.push(...messages);
    await client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
      }),
    );
  }
}

export interface MessageCounts {
  /** ApproximateNumberOfMessages */
  visible: number;
  /** ApproximateNumberOfMessagesNotVisible (received, not yet deleted or released) */
  notVisible: number;
  /** ApproximateNumberOfMessagesDelayed */
  delayed: number;
}

export async function messageCounts(url: string, client: SQSClient = sqsClient()): Promise<MessageCounts> {
  const result = await client.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  const get = (name: QueueAttributeName): number => Number(result.Attributes?.[name] ?? 0);
  return {
    visible: get('ApproximateNumberOfMessages'),
    notVisible: get('ApproximateNumberOfMessagesNotVisible'),
    delayed: get('ApproximateNumberOfMessagesDelayed'),
  };
}

/** Messages still in the queue: visible + not visible (in flight) + delayed. */
export async function countMessages(url: string, client: SQSClient = sqsClient()): Promise<number> {
  const counts = await messageCounts(url, client);
  return counts.visible + counts.notVisible + counts.delayed;
}

export async function deleteQueue(url: string, client: SQSClient = sqsClient()): Promise<void> {
  await client.send(new DeleteQueueCommand({ QueueUrl: url }));
}

/** `n` fresh queues named `prefix`-..., created 50 at a time. */
export async function createQueues(
  n: number,
  prefix: string,
  sqs: SQSClient,
  attributes: Record<string, string> = {},
): Promise<TestQueue[]> {
  const queues: TestQueue[] = [];
  for (let i = 0; i < n; i += 50)
    queues.push(...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => createQueue(prefix, attributes, sqs)))));
  return queues;
}

/** Deletes `queues`, 50 at a time, ignoring failures. */
export async function deleteQueues(queues: readonly TestQueue[], sqs: SQSClient): Promise<void> {
  for (let i = 0; i < queues.length; i += 50)
    await Promise.all(queues.slice(i, i + 50).map((q) => deleteQueue(q.url, sqs).catch(() => {})));
}
