import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { pino } from 'pino';
import { createOtelTracer } from '../../src/operator/tracing/otel.ts';
import { TEST_REGION, countMessages, createQueue, sendMessages, sqsClient } from '../support/aws.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { message, queue, silentLogger, until } from '../support/factories.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

/**
 * The OTel adapter against a real OTLP/HTTP receiver: a node:http server standing in for the Collector's
 * 4318 port. Spans go through the real BatchSpanProcessor and exporter, over HTTP, and are read back from
 * what was POSTed to /v1/traces.
 */

interface Received {
  readonly path: string;
  readonly contentType: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Buffer;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  name: string;
  kind: number;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes?: OtlpAttribute[];
  links?: { traceId: string; spanId: string; flags?: number; attributes?: OtlpAttribute[] }[];
  status?: { code?: number; message?: string };
  events?: { name: string; attributes?: OtlpAttribute[] }[];
}
interface OtlpRequest {
  resourceSpans: { resource: { attributes: OtlpAttribute[] }; scopeSpans: { scope: { name: string }; spans: OtlpSpan[] }[] }[];
}

// OTLP's SpanKind and StatusCode enums.
const CLIENT = 3;
const CONSUMER = 5;
const STATUS_ERROR = 2;

class OtlpReceiver {
  readonly requests: Received[] = [];
  status = 200;
  #server: Server | undefined;

  async start(): Promise<string> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        this.requests.push({ path: req.url ?? '', contentType: req.headers['content-type'] ?? '', headers: req.headers, body });
        const json = String(req.headers['content-type']).startsWith('application/json');
        res.writeHead(this.status, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
        res.end(json ? '{}' : '');
      });
    });
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise((resolve) => this.#server?.close(resolve));
  }

  /** Every span POSTed as OTLP/JSON so far, with its resource attributes. */
  spans(): (OtlpSpan & { resource: Record<string, unknown>; scope: string })[] {
    return this.requests.flatMap((r) => {
      assert.equal(r.path, '/v1/traces');
      const req = JSON.parse(r.body.toString('utf8')) as OtlpRequest;
      return req.resourceSpans.flatMap((rs) =>
        rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => ({ ...s, resource: attrs(rs.resource.attributes), scope: ss.scope.name }))),
      );
    });
  }
}

function attrs(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of list ?? []) {
    const v = a.value;
    out[a.key] = v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : v.boolValue);
  }
  return out;
}

const xrayTraceId = '5759e988bd862e3fe1be46a994272793';
const w3cTraceId = '4bf92f3577b34da6a3ce929d0e0e4736';

function tracedMessages() {
  return [
    message({
      MessageId: 'x-1',
      Attributes: { AWSTraceHeader: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1' },
    }),
    message({
      MessageId: 'w-1',
      MessageAttributes: { traceparent: { DataType: 'String', StringValue: `00-${w3cTraceId}-00f067aa0ba902b7-01` } },
    }),
    message({
      MessageId: 'bad-1',
      Attributes: { AWSTraceHeader: 'Root=1-nonsense;Parent=zz' },
      MessageAttributes: { traceparent: { DataType: 'String', StringValue: 'garbage' } },
    }),
    message({ MessageId: 'none-1' }),
  ];
}

describe('OpenTelemetry tracer against an OTLP/HTTP receiver', () => {
  const receiver = new OtlpReceiver();
  let endpoint = '';
  before(async () => {
    endpoint = await receiver.start();
  });
  after(() => receiver.stop());
  beforeEach(() => {
    receiver.requests.length = 0;
    receiver.status = 200;
  });

  // A long schedule delay: nothing is exported before shutdown(), which must flush it all.
  const env = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '60000',
    OTEL_SERVICE_NAME: 'orders-worker',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    ...extra,
  });

  it('exports receive, process and settle spans with the messaging attributes, kinds and producer links, on shutdown', async () => {
    const tracer = await createOtelTracer(env(), silentLogger, { functionRegion: 'eu-west-1' });
    assert.ok(tracer);
    const q = queue('orders', { url: 'https://sqs.us-east-2.amazonaws.com/123456789012/orders', region: 'us-east-2' });
    const messages = tracedMessages();
    const receivedAt = Date.now() - 250;
    tracer.received(q, messages, receivedAt, receivedAt + 200);
    const invoked = await tracer.process(q, 'order-handler', messages, async () => 'invoked');
    assert.equal(invoked, 'invoked', 'process returns what run() returned');
    const deleted = await tracer.settle(q, 'delete', messages.slice(0, 3), async () => ({ done: 3 }));
    assert.deepEqual(deleted, { done: 3 });
    await tracer.settle(q, 'release', [messages[3]!], async () => undefined);

    assert.equal(receiver.requests.length, 0, 'the batch processor holds spans until its delay or a flush');
    await tracer.shutdown();
    assert.ok(receiver.requests.length > 0, 'shutdown() flushed the buffered spans');
    assert.match(receiver.requests[0]!.contentType, /^application\/json/);

    const spans = receiver.spans();
    assert.deepEqual(
      spans.map((s) => [s.name, s.kind]),
      [
        ['receive orders', CLIENT],
        ['process orders', CONSUMER],
        ['delete orders', CLIENT],
        ['release orders', CLIENT],
      ],
    );
    const [receive, process, del, release] = spans;
    assert.equal(receive!.resource['service.name'], 'orders-worker');
    assert.equal(receive!.resource['deployment.environment.name'], 'test');
    assert.equal(receive!.scope, 'workerless');

    const common = {
      'messaging.system': 'aws_sqs',
      'messaging.destination.name': 'orders',
      'aws.sqs.queue.url': 'https://sqs.us-east-2.amazonaws.com/123456789012/orders',
      'server.address': 'sqs.us-east-2.amazonaws.com',
      'server.port': 443,
      'cloud.region': 'us-east-2',
    };
    assert.deepEqual(attrs(receive!.attributes), {
      ...common,
      'messaging.operation.type': 'receive',
      'messaging.operation.name': 'receive',
      'messaging.batch.message_count': 4,
    });
    assert.deepEqual(attrs(process!.attributes), {
      ...common,
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.batch.message_count': 4,
      'faas.invoked_name': 'order-handler',
      'faas.invoked_provider': 'aws',
      'faas.invoked_region': 'eu-west-1',
    });
    assert.deepEqual(attrs(del!.attributes), {
      ...common,
      'messaging.operation.type': 'settle',
      'messaging.operation.name': 'delete',
      'messaging.batch.message_count': 3,
    });
    assert.deepEqual(attrs(release!.attributes), {
      ...common,
      'messaging.operation.type': 'settle',
      'messaging.operation.name': 'release',
      'messaging.batch.message_count': 1,
      'messaging.message.id': 'none-1',
    });

    // The receive span keeps the times it was reported with.
    assert.equal(BigInt(receive!.startTimeUnixNano), BigInt(receivedAt) * 1_000_000n);
    assert.equal(BigInt(receive!.endTimeUnixNano), BigInt(receivedAt + 200) * 1_000_000n);

    // One link per valid producer context, tagged with its message; the malformed and missing headers add none.
    const expectedLinks = [
      { traceId: xrayTraceId, spanId: '53995c3f42cd8ad8', message: 'x-1' },
      { traceId: w3cTraceId, spanId: '00f067aa0ba902b7', message: 'w-1' },
    ];
    for (const span of [receive!, process!]) {
      assert.deepEqual(
        (span.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId, message: attrs(l.attributes)['messaging.message.id'] })),
        expectedLinks,
        span.name,
      );
      // Links, not parents: each dispatch span starts its own trace.
      assert.notEqual(span.traceId, xrayTraceId);
      assert.notEqual(span.traceId, w3cTraceId);
    }
    assert.deepEqual(del!.links ?? [], []);
    for (const s of spans) assert.notEqual(s.status?.code, STATUS_ERROR, s.name);
    // The payload never reaches the collector.
    for (const r of receiver.requests) assert.doesNotMatch(r.body.toString('utf8'), /body-\d+/);
  });

  it('marks a process span ERROR when run() rejects, recording the exception without the message bodies, and rethrows', async () => {
    const tracer = await createOtelTracer(env(), silentLogger);
    assert.ok(tracer);
    const q = queue('orders');
    const messages = [message({ MessageId: 'only-1', Body: 'secret-body' })];
    const boom = Object.assign(new Error('socket hang up'), { name: 'NetworkError', $response: { body: 'secret-body' } });
    await assert.rejects(
      tracer.process(q, 'fn', messages, async () => {
        throw boom;
      }),
      (err: unknown) => err === boom,
    );
    await tracer.shutdown();
    const [span] = receiver.spans();
    assert.equal(span?.name, 'process orders');
    assert.equal(span.status?.code, STATUS_ERROR);
    assert.equal(attrs(span.attributes)['error.type'], 'NetworkError');
    assert.equal(attrs(span.attributes)['messaging.message.id'], 'only-1', 'a one-message span names its message');
    const exception = span.events?.find((e) => e.name === 'exception');
    assert.equal(attrs(exception?.attributes)['exception.type'], 'NetworkError');
    assert.equal(attrs(exception?.attributes)['exception.message'], 'socket hang up');
    assert.doesNotMatch(receiver.requests.map((r) => r.body.toString('utf8')).join(''), /secret-body/);
  });

  it('marks a span ERROR with error.type when its failure callback says the resolved result failed', async () => {
    const tracer = await createOtelTracer(env(), silentLogger);
    assert.ok(tracer);
    type Result = { ok: true } | { ok: false; code: string };
    const failed = (r: Result) => (r.ok ? undefined : r.code);
    const q = queue('orders');
    await tracer.process(q, 'fn', [message()], async (): Promise<Result> => ({ ok: false, code: 'TooManyRequestsException' }), failed);
    await tracer.process(q, 'fn', [message()], async (): Promise<Result> => ({ ok: true }), failed);
    await tracer.settle(
      q,
      'delete',
      [message()],
      async () => ({ failed: ['m'] }),
      (r) => (r.failed.length > 0 ? 'PartialDelete' : undefined),
    );
    await tracer.shutdown();
    const spans = receiver.spans();
    assert.deepEqual(
      spans.map((s) => [s.name, s.status?.code === STATUS_ERROR, attrs(s.attributes)['error.type']]),
      [
        ['process orders', true, 'TooManyRequestsException'],
        ['process orders', false, undefined],
        ['delete orders', true, 'PartialDelete'],
      ],
    );
  });

  it('sends the OTEL_EXPORTER_OTLP_HEADERS and exports protobuf by default (the OTLP spec default)', async () => {
    const tracer = await createOtelTracer(
      {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${endpoint}/v1/traces`,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc%20123',
        OTEL_BSP_SCHEDULE_DELAY: '60000',
      },
      silentLogger,
    );
    assert.ok(tracer);
    tracer.received(queue('payments'), [message()], Date.now() - 5, Date.now());
    await tracer.shutdown();
    assert.equal(receiver.requests.length, 1);
    const [req] = receiver.requests;
    assert.equal(req?.path, '/v1/traces');
    assert.equal(req.contentType, 'application/x-protobuf');
    assert.equal(req.headers['x-api-key'], 'abc 123');
    // Protobuf strings are raw UTF-8: the span name, system and service name are in the body as written.
    const body = req.body.toString('latin1');
    for (const s of ['receive payments', 'aws_sqs', 'workerless']) assert.ok(body.includes(s), `${s} in the protobuf body`);
  });

  it('exports on its own schedule, gzip-compressed when asked', async () => {
    const tracer = await createOtelTracer(env({ OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip' }), silentLogger);
    assert.ok(tracer);
    tracer.received(queue('orders'), [message()], Date.now() - 5, Date.now());
    const deadline = Date.now() + 5_000;
    while (receiver.requests.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(receiver.requests.length, 1, 'exported before shutdown');
    assert.equal(receiver.requests[0]?.headers['content-encoding'], 'gzip');
    assert.equal(receiver.spans()[0]?.name, 'receive orders');
    await tracer.shutdown();
  });

  it('logs a failing collector once, and shutdown() still resolves', async () => {
    receiver.status = 400; // not retryable, so the export fails at once
    const lines: { msg: string; level: number }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as { msg: string; level: number }) });
    const tracer = await createOtelTracer(env({ OTEL_BSP_SCHEDULE_DELAY: '20' }), logger);
    assert.ok(tracer);
    for (let i = 0; i < 3; i++) {
      tracer.received(queue('orders'), [message()], Date.now() - 5, Date.now());
      const before = receiver.requests.length;
      const deadline = Date.now() + 5_000;
      while (receiver.requests.length === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 50));
    await tracer.shutdown();
    assert.ok(receiver.requests.length >= 3);
    assert.equal(lines.filter((l) => l.msg.startsWith('trace export failed')).length, 1, JSON.stringify(lines));
    assert.equal(lines.filter((l) => l.msg.startsWith('tracing on')).length, 1);
  });

  it('is off (undefined) when the environment does not ask for traces or turns them off', async () => {
    assert.equal(await createOtelTracer({}, silentLogger), undefined);
    assert.equal(await createOtelTracer({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SDK_DISABLED: 'true' }, silentLogger), undefined);
    assert.equal(await createOtelTracer({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_EXPORTER: 'none' }, silentLogger), undefined);
  });

  it('rejects invalid OTEL_* values with an OtelConfigError before exporting anything', async () => {
    await assert.rejects(createOtelTracer({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, silentLogger), {
      name: 'OtelConfigError',
      message: /OTEL_EXPORTER_OTLP_PROTOCOL .*got "grpc"/,
    });
  });
});

describe('the real CLI with OTEL_EXPORTER_OTLP_ENDPOINT, against LocalStack', () => {
  const receiver = new OtlpReceiver();
  let collector = '';
  let lambda: LambdaEndpoint;
  before(async () => {
    collector = await receiver.start();
    lambda = await startLambdaEndpoint({
      functions: { record: { handler: fileURLToPath(new URL('../fixtures/functions/record.mjs', import.meta.url)) } },
    });
  });
  after(async () => {
    await lambda.stop();
    await receiver.stop();
  });

  it('exports the spans of every step, linked to each producer, and flushes them at SIGTERM', async () => {
    const q = await createQueue('wl-tracing');
    // The X-Ray header SQS keeps as the AWSTraceHeader system attribute, and a W3C traceparent message attribute.
    const sent = await sqsClient().send(
      new SendMessageCommand({
        QueueUrl: q.url,
        MessageBody: 'traced-by-xray',
        MessageSystemAttributes: {
          AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1' },
        },
      }),
    );
    const [w3cId] = await sendMessages(q.url, [
      { body: 'traced-by-w3c', attributes: { traceparent: { DataType: 'String', StringValue: `00-${w3cTraceId}-00f067aa0ba902b7-01` } } },
    ]);
    // Spans wait in the batch processor for a minute: only the flush at shutdown can deliver them in time.
    const daemon = startDaemon(lambda.url, ['--function', 'record', '--queues', q.name], {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '60000',
      OTEL_SERVICE_NAME: 'workerless-under-test',
    });
    await started(daemon);
    await until(async () => (await countMessages(q.url)) === 0, 20_000, 'both messages invoked and deleted', 200);
    assert.equal(receiver.requests.length, 0, 'nothing exported before shutdown');
    assert.equal(await stopDaemon(daemon), 0);

    const spans = receiver.spans().filter((s) => attrs(s.attributes)['messaging.destination.name'] === q.name);
    const named = (name: string) => spans.filter((s) => s.name === name);
    assert.ok(named(`receive ${q.name}`).length >= 1, spans.map((s) => s.name).join(', '));
    assert.ok(named(`process ${q.name}`).length >= 1);
    assert.ok(named(`delete ${q.name}`).length >= 1);
    assert.ok(named(`receive ${q.name}`).every((s) => s.kind === CLIENT));
    assert.ok(named(`process ${q.name}`).every((s) => s.kind === CONSUMER));
    assert.ok(named(`delete ${q.name}`).every((s) => s.kind === CLIENT));
    assert.equal(spans[0]!.resource['service.name'], 'workerless-under-test');

    const process = named(`process ${q.name}`);
    const sum = (list: OtlpSpan[]) => list.reduce((n, s) => n + Number(attrs(s.attributes)['messaging.batch.message_count']), 0);
    assert.equal(sum(process), 2, 'every message was in one process span');
    assert.equal(sum(named(`delete ${q.name}`)), 2);
    for (const s of process) {
      const a = attrs(s.attributes);
      assert.equal(a['messaging.system'], 'aws_sqs');
      assert.equal(a['aws.sqs.queue.url'], q.url);
      assert.equal(a['faas.invoked_name'], 'record');
      assert.equal(a['faas.invoked_provider'], 'aws');
      assert.equal(a['faas.invoked_region'], TEST_REGION);
      assert.notEqual(s.status?.code, STATUS_ERROR);
    }
    const linked = (list: OtlpSpan[]) =>
      list
        .flatMap((s) => s.links ?? [])
        .map((l) => `${String(attrs(l.attributes)['messaging.message.id'])} ${l.traceId} ${l.spanId}`)
        .sort();
    const expected = [`${sent.MessageId} ${xrayTraceId} 53995c3f42cd8ad8`, `${w3cId} ${w3cTraceId} 00f067aa0ba902b7`].sort();
    assert.deepEqual(linked(process), expected);
    assert.deepEqual(linked(named(`receive ${q.name}`)), expected);
    for (const r of receiver.requests) assert.doesNotMatch(r.body.toString('utf8'), /traced-by-/, 'no message body is exported');
  });

  it('exits 2 naming the variable when an OTEL_* value is invalid', async () => {
    const daemon = startDaemon(lambda.url, ['--function', 'record', '--queues', 'whatever'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    });
    const { code } = await daemon.exited;
    assert.equal(code, 2, daemon.stderr());
    assert.match(daemon.stderr(), /OTEL_EXPORTER_OTLP_PROTOCOL .*got "grpc"/);
  });
});
