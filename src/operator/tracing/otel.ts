import type { Message } from '@aws-sdk/client-sqs';
import {
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  createTraceState,
  type Attributes,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import { ATTR_ERROR_TYPE, ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT, ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { Logger } from 'pino';
import type { ResolvedQueue } from '../../core/queue.ts';
import { resolveOtelEnv, type OtelSettings } from './otel-env.ts';
import { producerContexts } from './producer-context.ts';
import type { DispatchTracer } from '../../core/telemetry/tracer.ts';

/**
 * Messaging and FaaS attribute names, copied from the semantic conventions (messaging/sqs.md, faas) rather than
 * imported from `@opentelemetry/semantic-conventions/incubating`, as OpenTelemetry advises for attributes still
 * in development: a minor release of that package may rename them under us.
 */
export const ATTR = {
  messagingSystem: 'messaging.system',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  destinationName: 'messaging.destination.name',
  batchCount: 'messaging.batch.message_count',
  messageId: 'messaging.message.id',
  queueUrl: 'aws.sqs.queue.url',
  cloudRegion: 'cloud.region',
  faasInvokedName: 'faas.invoked_name',
  faasInvokedProvider: 'faas.invoked_provider',
  faasInvokedRegion: 'faas.invoked_region',
} as const;

/** `messaging.system` MUST be "aws_sqs" for SQS (semantic conventions, messaging/sqs.md). */
const SQS = 'aws_sqs';
const SCOPE = 'workerless';

export interface OtelTracerOptions {
  /**
   * The region the function is invoked in, for `faas.invoked_region` when the function is given by name rather
   * than ARN; default AWS_REGION or AWS_DEFAULT_REGION from the environment.
   */
  readonly functionRegion?: string;
}

/**
 * Tells a span that its step failed although `run()` resolved (outcomes are values here, not exceptions):
 * returns the `error.type` to record, or undefined for success.
 */
export type FailureOf<T> = (result: T) => string | undefined;

/**
 * Builds the OpenTelemetry tracer when the standard OTEL_* environment asks for traces, undefined otherwise.
 * The SDK and the exporter are imported only then, so a daemon without tracing never loads them. The provider
 * is local to the returned tracer: nothing is registered globally. Throws OtelConfigError for invalid OTEL_*
 * values (the daemon exits 2, src/daemon/daemon.ts).
 */
export async function createOtelTracer(
  env: NodeJS.ProcessEnv,
  logger: Logger,
  options: OtelTracerOptions = {},
): Promise<OtelDispatchTracer | undefined> {
  const settings = resolveOtelEnv(env);
  if (!settings) return undefined;
  const log = logger.child({ component: 'tracing' });
  const [sdk, resources, exporter] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    loadExporter(settings),
  ]);
  const sampler =
    settings.sampler.name === 'always_off'
      ? new sdk.AlwaysOffSampler()
      : settings.sampler.name === 'traceidratio'
        ? new sdk.TraceIdRatioBasedSampler(settings.sampler.ratio)
        : new sdk.AlwaysOnSampler();
  const provider = new sdk.TracerProvider({
    resource: resources
      .defaultResource()
      .merge(resources.resourceFromAttributes({ ...settings.resourceAttributes, [ATTR_SERVICE_NAME]: settings.serviceName })),
    sampler,
    spanProcessors: [
      new sdk.BatchSpanProcessor({
        exporter: reportingFailures(exporter, log, settings.exporter.url),
        scheduledDelayMillis: settings.batch.scheduledDelayMs,
        exportTimeoutMillis: settings.batch.exportTimeoutMs,
        maxQueueSize: settings.batch.maxQueueSize,
        maxExportBatchSize: settings.batch.maxExportBatchSize,
      }),
    ],
  });
  log.info(
    {
      endpoint: settings.exporter.url,
      protocol: settings.exporter.protocol,
      serviceName: settings.serviceName,
      sampler: settings.sampler.name,
    },
    'tracing on: exporting spans over OTLP',
  );
  const functionRegion = options.functionRegion ?? (env['AWS_REGION'] || env['AWS_DEFAULT_REGION'] || undefined);
  return new OtelDispatchTracer(provider.getTracer(SCOPE), () => provider.shutdown(), log, functionRegion);
}

type ExporterConfig = NonNullable<ConstructorParameters<typeof import('@opentelemetry/exporter-trace-otlp-http').OTLPTraceExporter>[0]>;

async function loadExporter(settings: OtelSettings): Promise<SpanExporter> {
  // Given explicitly, so the exporter's own reading of process.env (which ignores invalid values with a
  // warning nobody sees) does not apply; only the TLS file variables are still read by the exporter.
  const config: ExporterConfig = {
    url: settings.exporter.url,
    headers: { ...settings.exporter.headers },
    timeoutMillis: settings.exporter.timeoutMs,
    // The exporter types this as a TypeScript enum whose values are these same strings.
    compression: settings.exporter.compression as ExporterConfig['compression'],
  };
  if (settings.exporter.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter(config);
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter(config);
}

/**
 * The SDK reports export failures only to the global diag logger, which workerless does not register. This
 * logs the first failure and the recovery, not every attempt, so an unreachable collector is one warning.
 */
function reportingFailures(exporter: SpanExporter, log: Logger, endpoint: string): SpanExporter {
  let failing = false;
  return {
    export(spans, done) {
      exporter.export(spans, (result) => {
        // ExportResultCode.SUCCESS is 0 (@opentelemetry/core).
        if (Number(result.code) !== 0 && !failing) {
          failing = true;
          log.warn(
            { endpoint, spans: spans.length, err: result.error },
            'trace export failed; spans are dropped until the collector answers',
          );
        } else if (Number(result.code) === 0 && failing) {
          failing = false;
          log.info({ endpoint }, 'trace export recovered');
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    ...(exporter.forceFlush ? { forceFlush: () => exporter.forceFlush!() } : {}),
  };
}

/**
 * Turns the dispatcher's steps into spans that follow the messaging semantic conventions for SQS:
 * - `receive <queue>`, kind CLIENT, operation type receive;
 * - `process <queue>`, kind CONSUMER, operation type process, with the FaaS client attributes of the Invoke;
 * - `delete <queue>` / `release <queue>`, kind CLIENT, operation type settle.
 * Span names are `{messaging.operation.name} {queue name}`. Each message's producer context (traceparent or
 * AWSTraceHeader) is a link on the receive and process spans; settle spans carry no links, as the conventions
 * make that optional and it would repeat the process span's. Message bodies are never read.
 */
export class OtelDispatchTracer implements DispatchTracer {
  readonly #tracer: Tracer;
  readonly #shutdown: () => Promise<void>;
  readonly #log: Logger;
  readonly #functionRegion: string | undefined;
  #closed: Promise<void> | undefined;

  constructor(tracer: Tracer, shutdown: () => Promise<void>, log: Logger, functionRegion: string | undefined) {
    this.#tracer = tracer;
    this.#shutdown = shutdown;
    this.#log = log;
    this.#functionRegion = functionRegion;
  }

  received(queue: ResolvedQueue, messages: readonly Message[], startedAt: number, endedAt: number): void {
    const span = this.#tracer.startSpan(`receive ${queue.name}`, {
      kind: SpanKind.CLIENT,
      startTime: startedAt,
      attributes: { ...queueAttributes(queue, messages), [ATTR.operationType]: 'receive', [ATTR.operationName]: 'receive' },
      links: links(messages),
    });
    span.end(endedAt);
  }

  process<T>(
    queue: ResolvedQueue,
    functionName: string,
    messages: readonly Message[],
    run: () => Promise<T>,
    failure?: FailureOf<T>,
  ): Promise<T> {
    const fn = invokedFunction(functionName, this.#functionRegion);
    const span = this.#tracer.startSpan(`process ${queue.name}`, {
      kind: SpanKind.CONSUMER,
      attributes: {
        ...queueAttributes(queue, messages),
        [ATTR.operationType]: 'process',
        [ATTR.operationName]: 'process',
        [ATTR.faasInvokedName]: fn.name,
        [ATTR.faasInvokedProvider]: 'aws',
        ...(fn.region ? { [ATTR.faasInvokedRegion]: fn.region } : {}),
      },
      links: links(messages),
    });
    return inSpan(span, run, failure);
  }

  settle<T>(
    queue: ResolvedQueue,
    operation: 'delete' | 'release',
    messages: readonly Message[],
    run: () => Promise<T>,
    failure?: FailureOf<T>,
  ): Promise<T> {
    const span = this.#tracer.startSpan(`${operation} ${queue.name}`, {
      kind: SpanKind.CLIENT,
      attributes: { ...queueAttributes(queue, messages), [ATTR.operationType]: 'settle', [ATTR.operationName]: operation },
    });
    return inSpan(span, run, failure);
  }

  /** Flushes buffered spans and stops the exporter; never rejects (a lost trace must not fail the shutdown). */
  shutdown(): Promise<void> {
    this.#closed ??= this.#shutdown().catch((err: unknown) => {
      this.#log.warn({ err }, 'trace export at shutdown failed; the last spans are lost');
    });
    return this.#closed;
  }
}

async function inSpan<T>(span: Span, run: () => Promise<T>, failure: FailureOf<T> | undefined): Promise<T> {
  try {
    const result = await run();
    const errorType = failure?.(result);
    if (errorType !== undefined) {
      span.setAttribute(ATTR_ERROR_TYPE, errorType);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    return result;
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    // Only the name, message and stack: never the error's other fields, which for SDK errors hold the request.
    span.recordException({ name: e.name, message: e.message, ...(e.stack ? { stack: e.stack } : {}) });
    span.setAttribute(ATTR_ERROR_TYPE, e.name);
    span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
    throw err;
  } finally {
    span.end();
  }
}

function queueAttributes(queue: ResolvedQueue, messages: readonly Message[]): Attributes {
  const attrs: Attributes = {
    [ATTR.messagingSystem]: SQS,
    [ATTR.destinationName]: queue.name,
    [ATTR.queueUrl]: queue.url,
    [ATTR.cloudRegion]: queue.region,
    // Receive, invoke and settle are batch operations here even for one message, so the count is always set.
    [ATTR.batchCount]: messages.length,
  };
  const only = messages.length === 1 ? messages[0]?.MessageId : undefined;
  if (only !== undefined) attrs[ATTR.messageId] = only;
  try {
    const url = new URL(queue.url);
    attrs[ATTR_SERVER_ADDRESS] = url.hostname;
    attrs[ATTR_SERVER_PORT] = url.port ? Number(url.port) : url.protocol === 'http:' ? 80 : 443;
  } catch {
    // A queue URL that does not parse has no server to name; the URL attribute still says what it was.
  }
  return attrs;
}

function links(messages: readonly Message[]): Link[] {
  const out: Link[] = [];
  for (const m of messages) {
    for (const ctx of producerContexts(m)) {
      out.push({
        context: {
          traceId: ctx.traceId,
          spanId: ctx.spanId,
          traceFlags: ctx.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
          isRemote: true,
          ...(ctx.traceState ? { traceState: createTraceState(ctx.traceState) } : {}),
        },
        attributes: m.MessageId !== undefined ? { [ATTR.messageId]: m.MessageId } : {},
      });
    }
  }
  return out;
}

/**
 * `faas.invoked_name` is the function's name whatever form --function takes (name, name:alias, partial or
 * full ARN); a full ARN also gives the region.
 */
export function invokedFunction(functionName: string, defaultRegion: string | undefined): { name: string; region: string | undefined } {
  const arn = /^arn:[^:]+:lambda:([^:]+):\d{12}:function:([^:]+)(?::.+)?$/.exec(functionName);
  if (arn) return { name: arn[2]!, region: arn[1] };
  const partial = /^\d{12}:function:([^:]+)(?::.+)?$/.exec(functionName);
  if (partial) return { name: partial[1]!, region: defaultRegion };
  return { name: functionName.split(':')[0]!, region: defaultRegion };
}
