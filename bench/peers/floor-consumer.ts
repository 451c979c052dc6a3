// The benchmark's floor: an SQS -> Lambda consumer with no AWS SDK at all, so its CPU per message is what
// the calls themselves cost (SigV4 signing with node:crypto, JSON, keep-alive HTTP/1.1 with node:http, or over
// https:// endpoints node:https with its keep-alive Agent, which also reuses TLS sessions: its default cache).
// It checks MD5OfBody like the SDK does, so it does the same work per message as an SDK consumer.
//
//   node bench/peers/floor-consumer.ts --queue-url URL --function NAME [--concurrency C] [--shape 3|1.2]
//
// --shape 3 (default): C loops, each ReceiveMessage (1 message, 1 s long poll) -> Invoke -> DeleteMessage.
// --shape 1.2: C loops share ReceiveMessage calls of 10 messages and DeleteMessageBatch calls of up to 10
//   (flushed at 10 or after 2 ms): about 0.1 + 1 + 0.1 calls per message.
// Endpoints from AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL_LAMBDA / AWS_ENDPOINT_URL, credentials from
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, region from AWS_REGION.
// Prints {"msg":"ready"} after GetQueueAttributes and a DryRun Invoke; SIGTERM stops it (exit 0).
import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    'queue-url': { type: 'string' },
    function: { type: 'string' },
    concurrency: { type: 'string', default: '10' },
    shape: { type: 'string', default: '3' },
  },
});
const queueUrl = values['queue-url'] ?? '';
const functionName = values.function ?? '';
const concurrency = Number(values.concurrency);
const shape = values.shape;
if (!queueUrl || !functionName || !Number.isInteger(concurrency) || concurrency < 1 || (shape !== '3' && shape !== '1.2')) {
  process.stderr.write('usage: node bench/peers/floor-consumer.ts --queue-url URL --function NAME [--concurrency C] [--shape 3|1.2]\n');
  process.exit(2);
}

const env = process.env;
const region = env['AWS_REGION'] ?? 'us-east-1';
const accessKeyId = env['AWS_ACCESS_KEY_ID'] ?? '';
const secretAccessKey = env['AWS_SECRET_ACCESS_KEY'] ?? '';
const sessionToken = env['AWS_SESSION_TOKEN'];
const sqsEndpoint = new URL(env['AWS_ENDPOINT_URL_SQS'] ?? env['AWS_ENDPOINT_URL'] ?? `https://sqs.${region}.amazonaws.com`);
const lambdaEndpoint = new URL(env['AWS_ENDPOINT_URL_LAMBDA'] ?? env['AWS_ENDPOINT_URL'] ?? `https://lambda.${region}.amazonaws.com`);
// Both over plain HTTP or both over HTTPS (bench/fast.ts --tls; trust a test certificate with NODE_EXTRA_CA_CERTS).
const secure = sqsEndpoint.protocol === 'https:';
if (lambdaEndpoint.protocol !== sqsEndpoint.protocol || !['http:', 'https:'].includes(sqsEndpoint.protocol)) {
  process.stderr.write('the floor consumer wants both endpoints over http:, or both over https:\n');
  process.exit(2);
}
const { request } = secure ? https : http;
const agent = new (secure ? https : http).Agent({ keepAlive: true, maxSockets: Infinity });

const stop = new AbortController();
process.on('SIGTERM', () => stop.abort());
process.on('SIGINT', () => stop.abort());

// SigV4: the signing key changes once a day per service; cache it.
const keys = new Map<string, Buffer>();
function signingKey(date: string, service: string): Buffer {
  const id = `${date}/${service}`;
  let key = keys.get(id);
  if (!key) {
    const kDate = createHmac('sha256', `AWS4${secretAccessKey}`).update(date).digest();
    const kRegion = createHmac('sha256', kDate).update(region).digest();
    const kService = createHmac('sha256', kRegion).update(service).digest();
    key = createHmac('sha256', kService).update('aws4_request').digest();
    keys.set(id, key);
  }
  return key;
}

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function call(
  endpoint: URL,
  service: string,
  path: string,
  headers: Record<string, string>,
  body: string,
  signal?: AbortSignal,
): Promise<Answer> {
  const amzDate = new Date().toISOString().replace(/[:-]|\.\d{3}/g, '');
  const date = amzDate.slice(0, 8);
  const all: Record<string, string> = { ...headers, host: endpoint.host, 'x-amz-date': amzDate };
  if (sessionToken) all['x-amz-security-token'] = sessionToken;
  const names = Object.keys(all).sort();
  const signedHeaders = names.join(';');
  const canonical = `POST\n${path}\n\n${names.map((n) => `${n}:${all[n]}`).join('\n')}\n\n${signedHeaders}\n${sha256(body)}`;
  const scope = `${date}/${region}/${service}/aws4_request`;
  const signature = createHmac('sha256', signingKey(date, service))
    .update(`AWS4-HMAC-SHA256\n${amzDate}\n${scope}\n${sha256(canonical)}`)
    .digest('hex');
  all['authorization'] = `AWS4-HMAC-SHA256 Credential=${accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
  all['content-length'] = String(Buffer.byteLength(body));
  return new Promise((resolve, reject) => {
    const req = request(
      { agent, host: endpoint.hostname, port: endpoint.port, method: 'POST', path, headers: all, ...(signal ? { signal } : {}) },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function sqs(op: string, input: unknown, signal?: AbortSignal): Promise<Record<string, unknown>> {
  const answer = await call(
    sqsEndpoint,
    'sqs',
    '/',
    { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${op}` },
    JSON.stringify(input),
    signal,
  );
  if (answer.status !== 200) throw new Error(`${op}: HTTP ${answer.status} ${answer.body}`);
  return JSON.parse(answer.body) as Record<string, unknown>;
}

const invokePath = `/2015-03-31/functions/${encodeURIComponent(functionName)}/invocations`;
async function invoke(type: 'RequestResponse' | 'DryRun', payload: string): Promise<Answer> {
  return call(lambdaEndpoint, 'lambda', invokePath, { 'content-type': 'application/octet-stream', 'x-amz-invocation-type': type }, payload);
}

interface Message {
  MessageId: string;
  ReceiptHandle: string;
  Body: string;
  MD5OfBody: string;
}

const attributes = await sqs('GetQueueAttributes', { QueueUrl: queueUrl, AttributeNames: ['QueueArn'] });
const queueArn = (attributes['Attributes'] as Record<string, string> | undefined)?.['QueueArn'] ?? '';
await invoke('DryRun', '');
process.stdout.write(`${JSON.stringify({ msg: 'ready', pid: process.pid, concurrency, shape })}\n`);

async function receive(max: number): Promise<Message[]> {
  const out = await sqs('ReceiveMessage', { QueueUrl: queueUrl, MaxNumberOfMessages: max, WaitTimeSeconds: 1 }, stop.signal);
  const messages = (out['Messages'] as Message[] | undefined) ?? [];
  for (const m of messages) {
    if (createHash('md5').update(m.Body).digest('hex') !== m.MD5OfBody) throw new Error(`MD5OfBody mismatch for ${m.MessageId}`);
  }
  return messages;
}

/** Invokes the function with one message; true when it succeeded (the message may be deleted). */
async function handle(m: Message): Promise<boolean> {
  const event = JSON.stringify({
    Records: [
      {
        messageId: m.MessageId,
        receiptHandle: m.ReceiptHandle,
        body: m.Body,
        attributes: {},
        messageAttributes: {},
        md5OfBody: m.MD5OfBody,
        eventSource: 'aws:sqs',
        eventSourceARN: queueArn,
        awsRegion: region,
      },
    ],
  });
  const answer = await invoke('RequestResponse', event);
  return answer.status === 200 && answer.headers['x-amz-function-error'] === undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const report = (what: string, err: unknown) => process.stderr.write(`${what}: ${String(err)}\n`);

async function loopThreeCalls(): Promise<void> {
  while (!stop.signal.aborted) {
    let messages: Message[];
    try {
      messages = await receive(1);
    } catch (err) {
      if (stop.signal.aborted) break;
      report('receive failed', err);
      await sleep(1000);
      continue;
    }
    for (const m of messages) {
      try {
        if (await handle(m)) await sqs('DeleteMessage', { QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle });
      } catch (err) {
        report(`message ${m.MessageId} failed`, err);
      }
    }
  }
}

// --shape 1.2: one buffer of received messages shared by the loops, one buffer of receipts to delete.
const ready: Message[] = [];
const waiting: ((m: Message | undefined) => void)[] = [];
let receivesInFlight = 0;
const toDelete: string[] = [];
let deleteTimer: NodeJS.Timeout | undefined;

function fill(): void {
  // One receive of 10 per 10 waiting loops, so that loops never wait on each other's receive.
  while (!stop.signal.aborted && receivesInFlight * 10 < waiting.length) {
    receivesInFlight += 1;
    receive(10).then(
      (messages) => {
        receivesInFlight -= 1;
        for (const m of messages) {
          const w = waiting.shift();
          if (w) w(m);
          else ready.push(m);
        }
        fill();
      },
      async (err: unknown) => {
        if (!stop.signal.aborted) {
          report('receive failed', err);
          await sleep(1000);
        }
        receivesInFlight -= 1;
        fill();
      },
    );
  }
  if (stop.signal.aborted) for (const w of waiting.splice(0)) w(undefined);
}

function next(): Promise<Message | undefined> {
  const m = ready.shift();
  if (m) return Promise.resolve(m);
  return new Promise((resolve) => {
    waiting.push(resolve);
    fill();
  });
}

function flushDeletes(): void {
  if (deleteTimer) clearTimeout(deleteTimer);
  deleteTimer = undefined;
  const receipts = toDelete.splice(0, 10);
  if (receipts.length === 0) return;
  sqs('DeleteMessageBatch', { QueueUrl: queueUrl, Entries: receipts.map((r, i) => ({ Id: String(i), ReceiptHandle: r })) }).catch(
    (err: unknown) => report('delete failed', err),
  );
}

function deleteLater(receipt: string): void {
  toDelete.push(receipt);
  if (toDelete.length >= 10) flushDeletes();
  else deleteTimer ??= setTimeout(flushDeletes, 2);
}

async function loopShared(): Promise<void> {
  while (!stop.signal.aborted) {
    const m = await next();
    if (!m) break;
    try {
      if (await handle(m)) deleteLater(m.ReceiptHandle);
    } catch (err) {
      report(`message ${m.MessageId} failed`, err);
    }
  }
}

stop.signal.addEventListener('abort', () => fill());
await Promise.all(Array.from({ length: concurrency }, () => (shape === '3' ? loopThreeCalls() : loopShared())));
while (toDelete.length > 0) flushDeletes();
// Let the last deletes go out, then close the idle keep-alive sockets.
setTimeout(() => agent.destroy(), 200);
