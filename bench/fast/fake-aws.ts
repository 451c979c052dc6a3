// A fast fake of the AWS endpoints a consumer uses, for bench/fast.ts: SQS (AWS JSON 1.0, X-Amz-Target
// "AmazonSQS.<Op>"), Lambda Invoke (REST) and CloudWatch PutMetricData (AWS JSON 1.0, X-Amz-Target
// "GraniteServiceVersion20100801.PutMetricData"), the wire protocols of the installed SDK clients. It runs in
// its own process (so its CPU is not the consumer's), keeps everything in memory, does not check signatures,
// and has no waits of its own beyond what it is told (an invocation's duration).
//
//   node bench/fast/fake-aws.ts [--port 0] [--tls]      prints {"port":N} on stdout once listening
//   --tls: HTTPS with test/fixtures/tls's certificate for "localhost" (Node clients trust it with NODE_EXTRA_CA_CERTS,
//          Go ones with SSL_CERT_FILE), to measure what TLS costs a client, as against real SQS; queue URLs are then
//          https://localhost:N/...
//
// Control API (plain JSON, unsigned), used by the benchmark between runs:
//   POST /_bench/reset {"queue":"q","messages":N,"invokeMs":0,"bodyBytes":64} -> {"url","arn"}
//   GET  /_bench/stats -> {"received","deleted","invoked","invokedRecords","inFlightInvokes","maxInFlightInvokes",...}
//   GET  /_bench/calls -> [{"at","service":"sqs","operation","queueUrl"}, ...]: every SQS call since the start, as
//        test/support/fault-proxy.ts records them (bench/idle.ts counts with it where a proxy would need more file
//        descriptors than a process may open: 10,000 long polls are 20,000 sockets in a proxy)
//
// bench/many-queues.ts uses it as an SQS endpoint with many queues: CreateQueue (idempotent), SendMessage
// (wakes a waiting long poll at once), ListQueues (QueueNamePrefix, MaxResults, NextToken) and ListQueueTags
// (tags given at CreateQueue). Every queue keeps its own long polls, so 10,000 queues each with a poll in flight
// are 10,000 open requests and 10,000 timers here, nothing more.
//
// Queue semantics are what a benchmark needs, not all of SQS: N messages are loaded at reset; a received
// message is invisible until deleted or released (ChangeMessageVisibility 0); visibility timeouts never
// expire (a run lasts seconds). ReceiveMessage long-polls: with nothing visible it waits up to WaitTimeSeconds
// for a release, and a closed connection ends the wait.
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' }, tls: { type: 'boolean', default: false } } });
const fixture = (name: string) => readFileSync(new URL(`../../test/fixtures/tls/${name}`, import.meta.url));

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

interface FakeMessage {
  readonly id: string;
  readonly body: string;
  readonly md5: string;
  readonly sentAt: number;
  receiveCount: number;
  firstReceiveAt: number;
  receipt: string;
}

interface Waiter {
  readonly max: number;
  readonly res: ServerResponse;
  readonly attributes: boolean;
  readonly timer: NodeJS.Timeout;
}

class FakeQueue {
  readonly name: string;
  tags: Record<string, string> = {};
  /** Visible messages; `head` avoids shifting the array. */
  visible: FakeMessage[] = [];
  head = 0;
  readonly inFlight = new Map<string, FakeMessage>();
  readonly waiters = new Set<Waiter>();
  receipts = 0;

  constructor(name: string) {
    this.name = name;
  }

  take(max: number): FakeMessage[] {
    const out: FakeMessage[] = [];
    const now = Date.now();
    while (out.length < max && this.head < this.visible.length) {
      const m = this.visible[this.head]!;
      this.head += 1;
      m.receiveCount += 1;
      if (m.firstReceiveAt === 0) m.firstReceiveAt = now;
      this.receipts += 1;
      m.receipt = `${this.name}.${m.id}.${this.receipts}`;
      this.inFlight.set(m.receipt, m);
      out.push(m);
    }
    if (this.head > 4096 && this.head * 2 > this.visible.length) {
      this.visible = this.visible.slice(this.head);
      this.head = 0;
    }
    return out;
  }

  release(m: FakeMessage): void {
    this.visible.push(m);
    this.wake();
  }

  /** Answers waiting long polls while messages are visible. */
  wake(): void {
    for (const w of this.waiters) {
      if (this.head >= this.visible.length) break;
      this.waiters.delete(w);
      clearTimeout(w.timer);
      sendMessages(w.res, this.take(w.max), w.attributes);
    }
  }
}

const stats = {
  received: 0,
  deleted: 0,
  released: 0,
  invoked: 0,
  invokedRecords: 0,
  inFlightInvokes: 0,
  maxInFlightInvokes: 0,
  receiveCalls: 0,
  emptyReceives: 0,
  metricCalls: 0,
  sent: 0,
};
const queues = new Map<string, FakeQueue>();
let invokeMs = 0;
let port = 0;
/** Every SQS call (GET /_bench/calls). */
const calls: { at: number; service: 'sqs'; operation: string; queueUrl: string | undefined }[] = [];

/** A queue's URL: over --tls, https://localhost as the certificate names it (real SQS's queue URLs are https too). */
function queueUrl(name: string): string {
  return values.tls ? `https://localhost:${port}/${ACCOUNT}/${name}` : `http://127.0.0.1:${port}/${ACCOUNT}/${name}`;
}

function queueOf(url: unknown): FakeQueue | undefined {
  if (typeof url !== 'string') return undefined;
  return queues.get(url.slice(url.lastIndexOf('/') + 1));
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/x-amz-json-1.0',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
    ...headers,
  });
  res.end(text);
}

function sqsError(res: ServerResponse, code: string, queryCode: string, message: string): void {
  json(res, 400, { __type: `com.amazonaws.sqs#${code}`, message }, { 'x-amzn-query-error': `${queryCode};Sender` });
}

function sendMessages(res: ServerResponse, messages: FakeMessage[], attributes: boolean): void {
  stats.received += messages.length;
  if (messages.length === 0) stats.emptyReceives += 1;
  json(res, 200, {
    Messages: messages.map((m) => ({
      MessageId: m.id,
      ReceiptHandle: m.receipt,
      MD5OfBody: m.md5,
      Body: m.body,
      ...(attributes
        ? {
            Attributes: {
              SenderId: 'AIDAFAKE',
              SentTimestamp: String(m.sentAt),
              ApproximateReceiveCount: String(m.receiveCount),
              ApproximateFirstReceiveTimestamp: String(m.firstReceiveAt),
            },
          }
        : {}),
    })),
  });
}

type Input = Record<string, unknown>;
type Entry = { Id?: string; ReceiptHandle?: string; VisibilityTimeout?: number };

function newMessage(body: string, now: number): FakeMessage {
  return {
    id: randomUUID(),
    body,
    md5: createHash('md5').update(body).digest('hex'),
    sentAt: now,
    receiveCount: 0,
    firstReceiveAt: 0,
    receipt: '',
  };
}

function sqs(op: string, input: Input, res: ServerResponse): void {
  if (op === 'CreateQueue') {
    const name = String(input['QueueName']);
    if (!/^[\w-]{1,80}$/.test(name)) return sqsError(res, 'InvalidParameterValue', 'InvalidParameterValue', `bad queue name ${name}`);
    let q = queues.get(name);
    if (!q) {
      q = new FakeQueue(name);
      queues.set(name, q);
    }
    q.tags = { ...q.tags, ...((input['tags'] as Record<string, string> | undefined) ?? {}) };
    return json(res, 200, { QueueUrl: queueUrl(name) });
  }
  if (op === 'ListQueues') {
    // Names in creation order; the token is the index of the next one.
    const prefix = typeof input['QueueNamePrefix'] === 'string' ? input['QueueNamePrefix'] : '';
    const max = input['MaxResults'] === undefined ? 1000 : Math.min(1000, Math.max(1, Number(input['MaxResults'])));
    const names = [...queues.keys()].filter((n) => n.startsWith(prefix));
    const from = Number(input['NextToken'] ?? 0);
    const page = names.slice(from, from + max);
    const more = input['MaxResults'] !== undefined && from + max < names.length;
    return json(res, 200, { QueueUrls: page.map(queueUrl), ...(more ? { NextToken: String(from + max) } : {}) });
  }
  if (op === 'GetQueueUrl') {
    const q = queues.get(String(input['QueueName']));
    if (!q) return sqsError(res, 'QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue', 'The specified queue does not exist.');
    return json(res, 200, { QueueUrl: queueUrl(q.name) });
  }
  const q = queueOf(input['QueueUrl']);
  if (!q) return sqsError(res, 'QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue', 'The specified queue does not exist.');
  switch (op) {
    case 'GetQueueAttributes':
      return json(res, 200, {
        Attributes: {
          QueueArn: `arn:aws:sqs:${REGION}:${ACCOUNT}:${q.name}`,
          VisibilityTimeout: '120',
          ApproximateNumberOfMessages: String(q.visible.length - q.head),
          ApproximateNumberOfMessagesNotVisible: String(q.inFlight.size),
        },
      });
    case 'ListQueueTags':
      return json(res, 200, { Tags: q.tags });
    case 'SendMessage': {
      const m = newMessage(String(input['MessageBody']), Date.now());
      stats.sent += 1;
      q.visible.push(m);
      q.wake();
      return json(res, 200, { MessageId: m.id, MD5OfMessageBody: m.md5 });
    }
    case 'ReceiveMessage': {
      stats.receiveCalls += 1;
      const max = Math.min(10, Math.max(1, Number(input['MaxNumberOfMessages'] ?? 1)));
      const wantsAttributes = Array.isArray(input['MessageSystemAttributeNames']) || Array.isArray(input['AttributeNames']);
      const got = q.take(max);
      const waitSec = Number(input['WaitTimeSeconds'] ?? 0);
      if (got.length > 0 || waitSec <= 0) return sendMessages(res, got, wantsAttributes);
      const waiter: Waiter = {
        max,
        res,
        attributes: wantsAttributes,
        timer: setTimeout(() => {
          q.waiters.delete(waiter);
          sendMessages(res, [], wantsAttributes);
        }, waitSec * 1000),
      };
      q.waiters.add(waiter);
      res.on('close', () => {
        if (q.waiters.delete(waiter)) clearTimeout(waiter.timer);
      });
      return;
    }
    case 'DeleteMessage':
    case 'DeleteMessageBatch': {
      const entries: Entry[] =
        op === 'DeleteMessage'
          ? [{ Id: '0', ReceiptHandle: String(input['ReceiptHandle']) }]
          : ((input['Entries'] as Entry[] | undefined) ?? []);
      const failed: unknown[] = [];
      const ok: unknown[] = [];
      for (const e of entries) {
        if (q.inFlight.delete(e.ReceiptHandle ?? '')) {
          stats.deleted += 1;
          ok.push({ Id: e.Id });
        } else {
          failed.push({ Id: e.Id, Code: 'ReceiptHandleIsInvalid', Message: 'unknown receipt handle', SenderFault: true });
        }
      }
      return json(res, 200, op === 'DeleteMessage' ? {} : { Successful: ok, Failed: failed });
    }
    case 'ChangeMessageVisibility':
    case 'ChangeMessageVisibilityBatch': {
      const entries: Entry[] =
        op === 'ChangeMessageVisibility'
          ? [{ Id: '0', ReceiptHandle: String(input['ReceiptHandle']), VisibilityTimeout: Number(input['VisibilityTimeout']) }]
          : ((input['Entries'] as Entry[] | undefined) ?? []);
      const ok: unknown[] = [];
      const failed: unknown[] = [];
      for (const e of entries) {
        const m = q.inFlight.get(e.ReceiptHandle ?? '');
        if (!m) {
          failed.push({ Id: e.Id, Code: 'ReceiptHandleIsInvalid', Message: 'unknown receipt handle', SenderFault: true });
          continue;
        }
        ok.push({ Id: e.Id });
        if (e.VisibilityTimeout === 0) {
          q.inFlight.delete(m.receipt);
          stats.released += 1;
          q.release(m);
        }
      }
      return json(res, 200, op === 'ChangeMessageVisibility' ? {} : { Successful: ok, Failed: failed });
    }
    default:
      return json(res, 400, { __type: 'com.amazonaws.sqs#UnsupportedOperation', message: `${op} is not faked` });
  }
}

function invoke(req: IncomingMessage, res: ServerResponse): void {
  if (req.headers['x-amz-invocation-type'] === 'DryRun') {
    res.writeHead(204, { 'x-amzn-requestid': randomUUID() });
    res.end();
    return;
  }
  stats.invoked += 1;
  stats.inFlightInvokes += 1;
  if (stats.inFlightInvokes > stats.maxInFlightInvokes) stats.maxInFlightInvokes = stats.inFlightInvokes;
  const answer = () => {
    stats.inFlightInvokes -= 1;
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': 4,
      'x-amz-executed-version': '$LATEST',
      'x-amzn-requestid': randomUUID(),
    });
    res.end('null');
  };
  if (invokeMs > 0) setTimeout(answer, invokeMs);
  else answer();
}

function reset(input: Input, res: ServerResponse): void {
  const name = String(input['queue']);
  const n = Number(input['messages'] ?? 0);
  const bodyBytes = Number(input['bodyBytes'] ?? 64);
  invokeMs = Number(input['invokeMs'] ?? 0);
  for (const key of Object.keys(stats) as (keyof typeof stats)[]) stats[key] = 0;
  queues.clear();
  const q = new FakeQueue(name);
  const pad = 'x'.repeat(Math.max(0, bodyBytes - 24));
  const now = Date.now();
  for (let i = 0; i < n; i++) q.visible.push(newMessage(`{"n":${i},"pad":"${pad}"}`, now));
  queues.set(name, q);
  json(res, 200, { url: queueUrl(name), arn: `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}` });
}

const serverOptions = { keepAliveTimeout: 120_000, requestTimeout: 0, headersTimeout: 60_000 };
const handler = (req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const url = req.url ?? '/';
    const text = chunks.length === 0 ? '' : Buffer.concat(chunks).toString('utf8');
    const target = req.headers['x-amz-target'];
    if (typeof target === 'string') {
      const dot = target.indexOf('.');
      const service = target.slice(0, dot);
      const op = target.slice(dot + 1);
      if (service === 'AmazonSQS') {
        const input = text ? (JSON.parse(text) as Input) : {};
        const queueUrl = typeof input['QueueUrl'] === 'string' ? input['QueueUrl'] : undefined;
        calls.push({ at: Date.now(), service: 'sqs', operation: op, queueUrl });
        return sqs(op, input, res);
      }
      if (service === 'GraniteServiceVersion20100801' && op === 'PutMetricData') {
        stats.metricCalls += 1;
        return json(res, 200, {});
      }
      return json(res, 400, { __type: 'UnknownOperationException', message: target });
    }
    if (req.method === 'POST' && url.startsWith('/2015-03-31/functions/') && url.includes('/invocations')) return invoke(req, res);
    if (url === '/_bench/reset') return reset(text ? (JSON.parse(text) as Input) : {}, res);
    if (url === '/_bench/stats') return json(res, 200, stats);
    if (url === '/_bench/calls') return json(res, 200, calls);
    json(res, 404, { message: `no fake for ${req.method} ${url}` });
  });
};
const server = values.tls
  ? createTlsServer({ ...serverOptions, key: fixture('localhost-key.pem'), cert: fixture('localhost-cert.pem') }, handler)
  : createServer(serverOptions, handler);
server.maxHeadersCount = 64;
server.listen(Number(values.port), '127.0.0.1', () => {
  const address = server.address();
  port = typeof address === 'object' && address ? address.port : 0;
  process.stdout.write(`${JSON.stringify({ port })}\n`);
});
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
