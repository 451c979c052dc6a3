import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OtelConfigError, describeProblem, resolveOtelEnv } from '../../../../src/operator/tracing/otel-env.ts';
import { invokedFunction } from '../../../../src/operator/tracing/otel.ts';
import { parseAwsTraceHeader, parseTraceparent, producerContexts } from '../../../../src/operator/tracing/producer-context.ts';
import { message } from '../../../support/factories.ts';

describe('parseAwsTraceHeader', () => {
  it('prepends the 8-digit epoch to the 24 random digits to make the W3C trace id, and takes Parent as the span id', () => {
    assert.deepEqual(parseAwsTraceHeader('Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1'), {
      traceId: '5759e988bd862e3fe1be46a994272793',
      spanId: '53995c3f42cd8ad8',
      sampled: true,
      source: 'AWSTraceHeader',
    });
  });

  it('accepts fields in any order, spaces, extra keys and upper-case hex; Sampled=0 or ? or missing is not sampled', () => {
    const reordered = parseAwsTraceHeader(
      'Sampled=0; Lineage=a87bd80c:1|68fd508a:5 ;Parent=53995C3F42CD8AD8; Root=1-5759E988-BD862E3FE1BE46A994272793',
    );
    assert.equal(reordered?.traceId, '5759e988bd862e3fe1be46a994272793');
    assert.equal(reordered?.spanId, '53995c3f42cd8ad8');
    assert.equal(reordered?.sampled, false);
    assert.equal(parseAwsTraceHeader('Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=?')?.sampled, false);
    assert.equal(parseAwsTraceHeader('Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8')?.sampled, false);
    // ALB adds Self=; it is not the producer's span and is ignored.
    assert.equal(
      parseAwsTraceHeader('Self=1-67891234-12456789abcdef012345678;Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8')
        ?.spanId,
      '53995c3f42cd8ad8',
    );
  });

  for (const [why, header] of [
    ['no Parent: nothing to link to', 'Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1'],
    ['no Root', 'Parent=53995c3f42cd8ad8;Sampled=1'],
    ['version other than 1', 'Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8'],
    ['epoch too short', 'Root=1-5759e98-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8'],
    ['random part too long', 'Root=1-5759e988-bd862e3fe1be46a9942727930;Parent=53995c3f42cd8ad8'],
    ['non-hex trace id', 'Root=1-5759e988-bd862e3fe1be46a99427279z;Parent=53995c3f42cd8ad8'],
    ['short Parent', 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad'],
    ['all-zero trace id', 'Root=1-00000000-000000000000000000000000;Parent=53995c3f42cd8ad8'],
    ['all-zero parent', 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=0000000000000000'],
    ['lower-case keys', 'root=1-5759e988-bd862e3fe1be46a994272793;parent=53995c3f42cd8ad8'],
    ['garbage', '\u0000\u00ff;;==;Root=;Parent='],
    ['empty', ''],
  ] as const) {
    it(`ignores a malformed header (${why})`, () => {
      assert.equal(parseAwsTraceHeader(header), undefined);
    });
  }
});

describe('parseTraceparent', () => {
  it('reads version 00 with its sampled flag', () => {
    assert.deepEqual(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      sampled: true,
      source: 'traceparent',
    });
    assert.equal(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')?.sampled, false);
  });

  it('keeps the tracestate that came with it, and lets a later version append fields', () => {
    assert.equal(
      parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'congo=t61rcWkgMzE')?.traceState,
      'congo=t61rcWkgMzE',
    );
    assert.equal(
      parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds')?.spanId,
      '00f067aa0ba902b7',
    );
  });

  for (const [why, header] of [
    ['version ff', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'],
    ['version 00 with extra fields', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra'],
    ['all-zero trace id', '00-00000000000000000000000000000000-00f067aa0ba902b7-01'],
    ['all-zero span id', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01'],
    ['short trace id', '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01'],
    ['non-hex', '00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01'],
    ['an X-Ray header', 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1'],
    ['garbage', 'not a traceparent'],
  ] as const) {
    it(`ignores a malformed traceparent (${why})`, () => {
      assert.equal(parseTraceparent(header), undefined);
    });
  }
});

describe('producerContexts', () => {
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const xray = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';

  it('finds the traceparent message attribute and the AWSTraceHeader system attribute, each once', () => {
    const m = message({
      Attributes: { AWSTraceHeader: xray },
      MessageAttributes: {
        traceparent: { DataType: 'String', StringValue: traceparent },
        tracestate: { DataType: 'String', StringValue: 'k=v' },
      },
    });
    assert.deepEqual(
      producerContexts(m).map((c) => [c.source, c.traceId, c.spanId, c.traceState]),
      [
        ['traceparent', '4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7', 'k=v'],
        ['AWSTraceHeader', '5759e988bd862e3fe1be46a994272793', '53995c3f42cd8ad8', undefined],
      ],
    );
  });

  it('links one context once when both headers name the same span', () => {
    const same = message({
      Attributes: { AWSTraceHeader: xray },
      MessageAttributes: { traceparent: { DataType: 'String', StringValue: '00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01' } },
    });
    assert.equal(producerContexts(same).length, 1);
  });

  it('returns nothing for a message without headers or with invalid ones, and never looks at the body', () => {
    assert.deepEqual(producerContexts(message()), []);
    const bad = message({
      Attributes: { AWSTraceHeader: 'Root=garbage' },
      MessageAttributes: { traceparent: { DataType: 'Binary', BinaryValue: new Uint8Array([1]) } },
    });
    assert.deepEqual(producerContexts(bad), []);
    const body = message({ Body: traceparent });
    assert.deepEqual(producerContexts(body), []);
  });
});

describe('resolveOtelEnv', () => {
  it('is off without any OTEL_* that asks for traces', () => {
    assert.equal(resolveOtelEnv({}), undefined);
    assert.equal(resolveOtelEnv({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), undefined);
    assert.equal(resolveOtelEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }), undefined, 'empty counts as unset');
  });

  it('is on with an endpoint or OTEL_TRACES_EXPORTER=otlp, with the spec defaults', () => {
    const s = resolveOtelEnv({ OTEL_TRACES_EXPORTER: 'otlp' });
    assert.deepEqual(s, {
      serviceName: 'workerless',
      resourceAttributes: {},
      exporter: { protocol: 'http/protobuf', url: 'http://localhost:4318/v1/traces', headers: {}, timeoutMs: 10_000, compression: 'none' },
      batch: { scheduledDelayMs: 5_000, exportTimeoutMs: 30_000, maxQueueSize: 2_048, maxExportBatchSize: 512 },
      sampler: { name: 'always_on', ratio: 1 },
    });
    assert.ok(Object.isFrozen(s) && Object.isFrozen(s.exporter));
    assert.equal(resolveOtelEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })?.exporter.url, 'http://collector:4318/v1/traces');
    assert.equal(
      resolveOtelEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otlp.example.com/base/' })?.exporter.url,
      'https://otlp.example.com/base/v1/traces',
    );
  });

  it('uses the traces endpoint as is, and the traces-specific variables over the general ones', () => {
    const s = resolveOtelEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://general:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/custom',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TIMEOUT: '1000',
      OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '2500',
      OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip',
      OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=general',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'b=traces%20only,api-key=se%3Dcret',
    });
    assert.equal(s?.exporter.url, 'http://traces:9999/custom');
    assert.equal(s?.exporter.protocol, 'http/json');
    assert.equal(s?.exporter.timeoutMs, 2500);
    assert.equal(s?.exporter.compression, 'gzip');
    assert.deepEqual(s?.exporter.headers, { a: '1', b: 'traces only', 'api-key': 'se=cret' });
  });

  it('takes the service name from OTEL_SERVICE_NAME, then OTEL_RESOURCE_ATTRIBUTES, then "workerless"', () => {
    const base = {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs,deployment.environment.name=prod%2Feu',
    };
    assert.equal(resolveOtelEnv(base)?.serviceName, 'from-attrs');
    assert.deepEqual(resolveOtelEnv(base)?.resourceAttributes, { 'service.name': 'from-attrs', 'deployment.environment.name': 'prod/eu' });
    assert.equal(resolveOtelEnv({ ...base, OTEL_SERVICE_NAME: 'orders-worker' })?.serviceName, 'orders-worker');
  });

  it('is off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, whatever else is set', () => {
    assert.equal(resolveOtelEnv({ OTEL_SDK_DISABLED: 'TRUE', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), undefined);
    assert.equal(
      resolveOtelEnv({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }),
      undefined,
    );
    assert.ok(resolveOtelEnv({ OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }));
  });

  it('reads the batch processor and sampler variables', () => {
    const s = resolveOtelEnv({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_BSP_EXPORT_TIMEOUT: '3000',
      OTEL_BSP_MAX_QUEUE_SIZE: '100',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '50',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    });
    assert.deepEqual(s?.batch, { scheduledDelayMs: 200, exportTimeoutMs: 3000, maxQueueSize: 100, maxExportBatchSize: 50 });
    assert.deepEqual(s?.sampler, { name: 'traceidratio', ratio: 0.25 });
    assert.deepEqual(resolveOtelEnv({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'always_off' })?.sampler, {
      name: 'always_off',
      ratio: 1,
    });
  });

  it('reports every invalid variable at once, by name and value, in an OtelConfigError', () => {
    let caught: unknown;
    try {
      resolveOtelEnv({
        OTEL_TRACES_EXPORTER: 'otlp,zipkin',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_TIMEOUT: '10s',
        OTEL_EXPORTER_OTLP_COMPRESSION: 'brotli',
        OTEL_BSP_SCHEDULE_DELAY: '-1',
        OTEL_BSP_MAX_QUEUE_SIZE: '10',
        OTEL_TRACES_SAMPLER: 'xray',
        OTEL_RESOURCE_ATTRIBUTES: 'ok=1,=nokey,bad=%E0%A4%A',
      });
    } catch (err) {
      caught = err;
    }
    assert.ok(caught instanceof OtelConfigError, String(caught));
    assert.deepEqual(caught.problems.map(describeProblem), [
      'OTEL_TRACES_EXPORTER must be otlp or none (workerless exports traces over OTLP only), got "otlp,zipkin"',
      'OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (grpc is not supported; OTLP/HTTP listens on port 4318), got "grpc"',
      'OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, got "collector:4318"',
      'OTEL_EXPORTER_OTLP_TIMEOUT must be a whole number of milliseconds greater than 0, got "10s"',
      'OTEL_EXPORTER_OTLP_COMPRESSION must be gzip or none, got "brotli"',
      'OTEL_BSP_SCHEDULE_DELAY must be a whole number of at least 0, got "-1"',
      'OTEL_BSP_MAX_EXPORT_BATCH_SIZE must not exceed OTEL_BSP_MAX_QUEUE_SIZE (10), got "512"',
      'OTEL_TRACES_SAMPLER must be always_on, always_off, traceidratio or their parentbased_ forms, got "xray"',
      'OTEL_RESOURCE_ATTRIBUTES must be a comma-separated list of key=value (values percent-encoded), got "=nokey"',
      'OTEL_RESOURCE_ATTRIBUTES must be a comma-separated list of key=value (values percent-encoded), got "bad=%E0%A4%A"',
    ]);
    assert.match(caught.message, /OTEL_EXPORTER_OTLP_PROTOCOL/);
  });

  it('never repeats a header value in a problem: they are often API keys', () => {
    assert.throws(
      () => resolveOtelEnv({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=%zzsecret,justsecret' }),
      (err: unknown) => {
        assert.ok(err instanceof OtelConfigError);
        assert.deepEqual(
          err.problems.map((p) => p.value),
          ['x-api-key=***', '***'],
        );
        assert.doesNotMatch(err.message, /secret/);
        return true;
      },
    );
  });

  it('rejects OTEL_SDK_DISABLED values other than true or false', () => {
    assert.throws(() => resolveOtelEnv({ OTEL_SDK_DISABLED: 'yes' }), /OTEL_SDK_DISABLED must be true or false, got "yes"/);
  });
});

describe('invokedFunction', () => {
  it('gives the function name for faas.invoked_name whatever form --function takes, and the region of a full ARN', () => {
    assert.deepEqual(invokedFunction('my-fn', 'eu-west-1'), { name: 'my-fn', region: 'eu-west-1' });
    assert.deepEqual(invokedFunction('my-fn:live', undefined), { name: 'my-fn', region: undefined });
    assert.deepEqual(invokedFunction('123456789012:function:my-fn:3', 'eu-west-1'), { name: 'my-fn', region: 'eu-west-1' });
    assert.deepEqual(invokedFunction('arn:aws:lambda:ap-south-1:123456789012:function:my-fn:live', 'eu-west-1'), {
      name: 'my-fn',
      region: 'ap-south-1',
    });
    assert.deepEqual(invokedFunction('arn:aws-cn:lambda:cn-north-1:123456789012:function:my-fn', undefined), {
      name: 'my-fn',
      region: 'cn-north-1',
    });
  });
});
