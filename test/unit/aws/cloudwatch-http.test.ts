// PutMetricData on the lean path (--aws-client lean) against a local HTTP server: the request is the one the
// installed SDK's CloudWatchClient sends (AWS JSON 1.0, same target, headers and body), errors carry the SDK's
// names and classification, a hung call gives up at its deadline, and the run's wiring (createAwsAdapters)
// sends it to the configured endpoint and counts it as the other lean calls are counted.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { CloudWatchClient, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import pino from 'pino';
import { AwsCallError } from '../../../src/core/errors.ts';
import { createAwsAdapters } from '../../../src/aws/adapters.ts';
import { resolveAwsEndpoints } from '../../../src/aws/endpoints.ts';
import { SignedHttp } from '../../../src/aws/signed-http.ts';
import { CloudWatchMetrics } from '../../../src/operator/metrics/cloudwatch.ts';
import type { PutMetricDataRequest } from '../../../src/core/telemetry/metrics-publisher.ts';
import { CloudWatchHttpPublisher, putMetricDataBody } from '../../../src/aws/cloudwatch-http.ts';
import type { MetricDatum } from '../../../src/core/telemetry/metrics-sink.ts';
import { RecordingServer } from '../../support/recording-server.ts';

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };

/** Every awsQueryError code in @aws-sdk/client-cloudwatch's error schemas (3.1162), and codes it does not know. */
const AWS_QUERY_ERRORS = [
  'ConcurrentModificationException',
  'InternalServiceError',
  'InvalidFormat',
  'InvalidNextToken',
  'InvalidParameterCombination',
  'InvalidParameterInput',
  'InvalidParameterValue',
  'LimitExceeded',
  'LimitExceededException',
  'MissingParameter',
  'ResourceConflict',
  'ResourceNotFound',
  'ResourceNotFoundException',
  'ValidationError',
  'AccessDenied',
  'Throttling',
];

const request: PutMetricDataRequest = {
  Namespace: 'Workerless-test',
  MetricData: [
    {
      MetricName: 'ProcessingDuration',
      Unit: 'Milliseconds',
      Timestamp: new Date(Date.UTC(2026, 10, 23, 16, 0, 0, 123)),
      Dimensions: [
        { Name: 'Function', Value: 'fn' },
        { Name: 'Queue', Value: 'jobs' },
      ],
      StatisticValues: { SampleCount: 3, Sum: 60.5, Minimum: 10, Maximum: 30.25 },
    },
    { MetricName: 'CheckRun', Unit: 'Count', Value: 1 },
  ],
};

describe('CloudWatch PutMetricData on the lean path', () => {
  const server = new RecordingServer();
  const seen = server.seen;
  let origin: URL;
  let http: SignedHttp;
  let publisher: CloudWatchHttpPublisher;
  let sdk: CloudWatchClient;
  before(async () => {
    origin = new URL('/prefix', await server.listen());
    http = new SignedHttp({ service: 'monitoring', region: 'us-east-1', credentials: () => Promise.resolve(credentials), maxSockets: 1 });
    publisher = new CloudWatchHttpPublisher(http, origin);
    sdk = new CloudWatchClient({ region: 'us-east-1', endpoint: origin.href, credentials, maxAttempts: 1 });
  });
  after(() => {
    sdk.destroy();
    http.destroy();
    server.close();
  });

  it('sends what the SDK sends: AWS JSON 1.0, GraniteServiceVersion20100801.PutMetricData, the same body, signed for monitoring', async () => {
    server.handler = (_req, res) => res.end('{}');
    seen.length = 0;
    await sdk.send(new PutMetricDataCommand(request));
    await publisher.putMetricData(request, AbortSignal.timeout(5_000));
    const [bySdk, lean] = seen;
    assert.ok(bySdk && lean);
    for (const header of ['content-type', 'x-amz-target', 'x-amzn-query-mode'])
      assert.equal(lean.headers[header], bySdk.headers[header], header);
    assert.equal(lean.headers['x-amz-target'], 'GraniteServiceVersion20100801.PutMetricData');
    assert.equal(lean.headers['content-type'], 'application/x-amz-json-1.0');
    assert.equal(lean.path, bySdk.path);
    assert.equal(lean.path, '/prefix/');
    assert.match(
      String(lean.headers['authorization']),
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/us-east-1\/monitoring\/aws4_request, SignedHeaders=.*host.*x-amz-target.*, Signature=[0-9a-f]{64}$/,
    );
    assert.deepEqual(JSON.parse(lean.body), JSON.parse(bySdk.body));
    assert.deepEqual(JSON.parse(lean.body), {
      Namespace: 'Workerless-test',
      MetricData: [
        {
          MetricName: 'ProcessingDuration',
          Unit: 'Milliseconds',
          Timestamp: 1_795_449_600.123,
          Dimensions: [
            { Name: 'Function', Value: 'fn' },
            { Name: 'Queue', Value: 'jobs' },
          ],
          StatisticValues: { SampleCount: 3, Sum: 60.5, Minimum: 10, Maximum: 30.25 },
        },
        { MetricName: 'CheckRun', Unit: 'Count', Value: 1 },
      ],
    });
  });

  it('writes non-finite numbers as Smithy JSON does, and sends what CloudWatchMetrics aggregated as statistic sets', async () => {
    assert.equal(
      putMetricDataBody({ Namespace: 'n', MetricData: [{ MetricName: 'm', Value: Number.NaN, Values: [Infinity, -Infinity] }] }),
      '{"Namespace":"n","MetricData":[{"MetricName":"m","Value":"NaN","Values":["Infinity","-Infinity"]}]}',
    );
    server.handler = (_req, res) => res.end('{}');
    seen.length = 0;
    const metrics = new CloudWatchMetrics(publisher, pino({ level: 'silent' }), { namespace: 'Workerless-test' });
    const datum = (value: number): MetricDatum => ({
      name: 'InvocationDuration',
      unit: 'Milliseconds',
      value,
      dimensions: { Function: 'fn' },
    });
    for (const v of [5, 7, 3]) metrics.record(datum(v));
    await metrics.flush();
    assert.equal(seen.length, 1);
    const body = JSON.parse(seen[0]!.body) as { Namespace: string; MetricData: Record<string, unknown>[] };
    assert.equal(body.Namespace, 'Workerless-test');
    const [sent] = body.MetricData;
    assert.equal(typeof sent?.['Timestamp'], 'number');
    assert.deepEqual(
      { ...sent, Timestamp: 0 },
      {
        MetricName: 'InvocationDuration',
        Unit: 'Milliseconds',
        Timestamp: 0,
        Dimensions: [{ Name: 'Function', Value: 'fn' }],
        StatisticValues: { SampleCount: 3, Sum: 15, Minimum: 3, Maximum: 7 },
      },
    );
  });

  it('names CloudWatch errors as the installed SDK does, for every awsQuery code of its schema', async () => {
    for (const code of AWS_QUERY_ERRORS) {
      server.handler = (_req, res) => {
        res.writeHead(400, { 'x-amzn-query-error': `${code};Sender`, 'content-type': 'application/x-amz-json-1.0' });
        res.end(JSON.stringify({ __type: `com.amazonaws.cloudwatch#${code}`, message: 'refused' }));
      };
      const sdkName = await sdk.send(new PutMetricDataCommand(request)).then(
        () => 'no error',
        (err: unknown) => (err as Error).name,
      );
      const leanName = await publisher.putMetricData(request, AbortSignal.timeout(5_000)).then(
        () => 'no error',
        (err: unknown) => (err instanceof AwsCallError ? err.error.code : String(err)),
      );
      assert.equal(leanName, sdkName, code);
    }
  });

  it('classifies failures once: 400 fatal at once, 500 retried like the SDK (3 attempts) then retryable, throttling throttled', async () => {
    const failWith = async (status: number, code: string) => {
      server.handler = (_req, res) => {
        res.writeHead(status, { 'x-amzn-query-error': `${code};Sender` });
        res.end(JSON.stringify({ message: 'no' }));
      };
      seen.length = 0;
      const err = await publisher.putMetricData(request, AbortSignal.timeout(10_000)).then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof AwsCallError);
      assert.equal(err.operation, 'PutMetricData');
      return { ...err.error, attempts: seen.length };
    };
    assert.deepEqual(await failWith(400, 'InvalidParameterValue'), {
      kind: 'fatal',
      code: 'InvalidParameterValueException',
      message: 'no',
      status: 400,
      attempts: 1,
    });
    assert.deepEqual(await failWith(500, 'InternalServiceError'), {
      kind: 'retryable',
      code: 'InternalServiceFault',
      message: 'no',
      status: 500,
      attempts: 3,
    });
    assert.deepEqual(await failWith(400, 'Throttling'), { kind: 'throttled', code: 'Throttling', message: 'no', status: 400, attempts: 3 });
  });

  it('gives up a hung call at its deadline as a retryable TimeoutError, and CloudWatchMetrics logs it and keeps the data', async () => {
    server.handler = () => {}; // never answers
    const started = Date.now();
    await assert.rejects(publisher.putMetricData(request, AbortSignal.timeout(300)), (err: unknown) => {
      assert.ok(err instanceof AwsCallError);
      assert.deepEqual({ ...err.error }, { kind: 'retryable', code: 'TimeoutError', message: 'no answer in time' });
      return true;
    });
    assert.ok(Date.now() - started < 2_000);

    // The same failure through the sink: one warning, the datum kept for the next flush.
    type Line = { msg: string; err?: { code?: string; message?: string }; pending?: number };
    const lines: Line[] = [];
    const logger = pino(
      { level: 'warn' },
      new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(JSON.parse(chunk.toString()) as Line), done()) }),
    );
    server.handler = (_req, res) => {
      res.writeHead(400, { 'x-amzn-query-error': 'MissingParameter;Sender' });
      res.end(JSON.stringify({ message: 'Namespace is required' }));
    };
    const metrics = new CloudWatchMetrics(publisher, logger, { namespace: 'n' });
    metrics.record({ name: 'PolledEventCount', unit: 'Count', value: 1, dimensions: {} });
    await metrics.flush();
    assert.deepEqual(
      lines.map((l) => [l.msg, { code: l.err?.code, message: l.err?.message }, l.pending]),
      [
        [
          'PutMetricData failed, will retry at next flush',
          { code: 'MissingRequiredParameterException', message: 'Namespace is required' },
          1,
        ],
      ],
    );
    server.handler = (_req, res) => res.end('{}');
    seen.length = 0;
    await metrics.flush();
    assert.equal(seen.length, 1, 'the kept datum goes out at the next flush');
  });

  it('is what a lean run builds: the configured endpoint (AWS_ENDPOINT_URL_CLOUDWATCH over AWS_ENDPOINT_URL), counted like the other lean calls', async () => {
    const saved = { id: process.env['AWS_ACCESS_KEY_ID'], secret: process.env['AWS_SECRET_ACCESS_KEY'] };
    process.env['AWS_ACCESS_KEY_ID'] = credentials.accessKeyId;
    process.env['AWS_SECRET_ACCESS_KEY'] = credentials.secretAccessKey;
    // The endpoints as a run resolves them (src/aws/endpoints.ts reads the environment, as the SDK does).
    process.env['AWS_ENDPOINT_URL'] = 'http://127.0.0.1:1';
    process.env['AWS_ENDPOINT_URL_CLOUDWATCH'] = origin.href;
    const endpoints = await resolveAwsEndpoints('eu-west-1', undefined);
    delete process.env['AWS_ENDPOINT_URL'];
    delete process.env['AWS_ENDPOINT_URL_CLOUDWATCH'];
    const recorded: MetricDatum[] = [];
    const metrics = { record: (d: MetricDatum) => recorded.push(d) };
    const viaEnv = await createAwsAdapters('lean', { region: 'eu-west-1', endpointUrl: undefined }, endpoints, { maxSockets: 4, metrics });
    try {
      server.handler = (_req, res) => res.end('{}');
      seen.length = 0;
      const cw = await viaEnv.cloudwatch();
      assert.equal(await viaEnv.cloudwatch(), cw, 'built once');
      await cw.putMetricData(request, AbortSignal.timeout(5_000));
      assert.equal(seen.length, 1);
      assert.equal(seen[0]!.path, '/prefix/');
      assert.match(String(seen[0]!.headers['authorization']), /\/eu-west-1\/monitoring\/aws4_request/);
      server.handler = (_req, res) => {
        res.writeHead(400, { 'x-amzn-query-error': 'InvalidParameterValue;Sender' });
        res.end('{}');
      };
      await assert.rejects(cw.putMetricData(request, AbortSignal.timeout(5_000)), AwsCallError);
      assert.deepEqual(
        recorded.map((d) => [d.name, d.value, d.dimensions]),
        [
          ['AwsApiCalls', 1, { Service: 'cloudwatch', Operation: 'PutMetricData', Outcome: 'ok' }],
          ['AwsApiCalls', 1, { Service: 'cloudwatch', Operation: 'PutMetricData', Outcome: 'fatal' }],
        ],
      );
    } finally {
      viaEnv.destroy();
      if (saved.id === undefined) delete process.env['AWS_ACCESS_KEY_ID'];
      else process.env['AWS_ACCESS_KEY_ID'] = saved.id;
      if (saved.secret === undefined) delete process.env['AWS_SECRET_ACCESS_KEY'];
      else process.env['AWS_SECRET_ACCESS_KEY'] = saved.secret;
    }
  });
});
