// The real I/O behind `workerless migrate`: the AWS SDK's Lambda and SQS clients as a run builds them (region,
// --endpoint-url, AWS_ENDPOINT_URL_* and the profile's endpoint settings: src/aws/clients.ts), and a GET for the
// readiness probe. Each AWS error is classified once here (src/core/errors.ts) and thrown as an AwsCallError.
import type { EventSourceMappingConfiguration } from '@aws-sdk/client-lambda';
import { createSdkClients } from '../aws/clients.ts';
import type { AwsEndpoints } from '../aws/endpoints.ts';
import { AwsCallError, classifyAwsError, unreachableReason } from '../core/errors.ts';
import { parseQueueArn } from './arns.ts';
import type { MigratePorts, QueueFacts, SqsMapping } from './migrate-ports.ts';

/** Queues per status.json page asked for: its maximum (MAX_STATUS_LIMIT in src/operator/status/status-query.ts). */
const STATUS_PAGE = 100;
/** Pages of status.json read at most: 100,000 queues, ten times the most a run is measured with. */
const MAX_STATUS_PAGES = 1_000;

export interface MigrateAdapters extends MigratePorts {
  /** Releases the clients' sockets. */
  close(): void;
}

/** A refused or failed SQS call about one queue of a mapping, so the line names the queue. */
export class QueueCallError extends AwsCallError {
  readonly queue: string;

  constructor(err: AwsCallError, queue: string) {
    super(err.operation, err.error);
    this.queue = queue;
  }
}

export function createMigrateAdapters(region: string, endpointUrl: string | undefined, endpoints: AwsEndpoints): MigrateAdapters {
  const sdk = createSdkClients({ region, endpointUrl }, endpoints.sqs, { maxSockets: 4, network: endpoints.network });
  const call = async <T>(operation: string, signal: AbortSignal, run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      throw new AwsCallError(operation, classifyAwsError(err, signal));
    }
  };
  return {
    async listMappings(functionName, signal) {
      const [{ ListEventSourceMappingsCommand }, lambda] = await Promise.all([import('@aws-sdk/client-lambda'), sdk.lambda()]);
      const mappings: SqsMapping[] = [];
      let marker: string | undefined;
      // Every page: Lambda returns at most 100 mappings a call and a NextMarker while there are more.
      do {
        const page = await call('ListEventSourceMappings', signal, () =>
          lambda.send(new ListEventSourceMappingsCommand({ FunctionName: functionName, MaxItems: 100, Marker: marker }), {
            abortSignal: signal,
          }),
        );
        mappings.push(...(page.EventSourceMappings ?? []).map(mappingOf));
        marker = page.NextMarker !== '' ? page.NextMarker : undefined;
      } while (marker !== undefined);
      return mappings;
    },
    async queueFacts(queueArn, signal): Promise<QueueFacts> {
      const arn = parseQueueArn(queueArn);
      if (arn === undefined) throw new Error(`not an SQS queue ARN: ${queueArn}`);
      const [{ GetQueueUrlCommand, GetQueueAttributesCommand }, sqs] = await Promise.all([import('@aws-sdk/client-sqs'), sdk.sqs()]);
      try {
        const { QueueUrl: url } = await call('GetQueueUrl', signal, () =>
          sqs.send(new GetQueueUrlCommand({ QueueName: arn.name, QueueOwnerAWSAccountId: arn.account }), { abortSignal: signal }),
        );
        if (url === undefined)
          throw new AwsCallError('GetQueueUrl', { kind: 'fatal', code: 'NoQueueUrl', message: 'no QueueUrl in the answer' });
        const { Attributes: attrs = {} } = await call('GetQueueAttributes', signal, () =>
          sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['RedrivePolicy'] }), {
            abortSignal: signal,
          }),
        );
        return { arn: queueArn, url, redrive: redriveOf(attrs['RedrivePolicy']) };
      } catch (err) {
        throw err instanceof AwsCallError ? new QueueCallError(err, arn.name) : err;
      }
    },
    async setEnabled(uuid, enabled, signal) {
      const [{ UpdateEventSourceMappingCommand }, lambda] = await Promise.all([import('@aws-sdk/client-lambda'), sdk.lambda()]);
      const out = await call('UpdateEventSourceMapping', signal, () =>
        lambda.send(new UpdateEventSourceMappingCommand({ UUID: uuid, Enabled: enabled }), { abortSignal: signal }),
      );
      return out.State ?? 'unknown';
    },
    async probe(url, signal) {
      try {
        const response = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(5_000)]), redirect: 'manual' });
        await response.arrayBuffer();
        return { status: response.status };
      } catch (err) {
        const e = classifyAwsError(err, signal);
        return { unreachable: unreachableReason(e) ?? e.code };
      }
    },
    async runReads(readyUrl, signal) {
      // Relative, so a path prefix in front of the run's server (a proxy's /workerless/readyz) is kept.
      const base = new URL('status.json', readyUrl);
      let functions: string[] | undefined;
      const queues: string[] = [];
      // status.json lists a page of at most STATUS_PAGE queues (src/operator/status/status-query.ts), in configured
      // order then as found; every page is read, up to a bound that holds any run (a queue the bound cuts off counts
      // as unread, which refuses the cut-over rather than leave that queue without a consumer).
      for (let page = 0; page < MAX_STATUS_PAGES; page++) {
        const url = new URL(base);
        url.search = `sort=configured&offset=${queues.length}&limit=${STATUS_PAGE}`;
        try {
          const response = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(5_000)]), redirect: 'manual' });
          const body = (await response.json().catch(() => undefined)) as
            { functions?: unknown; queues?: unknown; summary?: { queues?: unknown } } | undefined;
          if (!response.ok || !Array.isArray(body?.functions) || !Array.isArray(body.queues))
            return { unreachable: `${base.href} answered HTTP ${response.status} without the run's functions and queues` };
          functions ??= body.functions.filter((f): f is string => typeof f === 'string');
          const names = body.queues.flatMap((q: { name?: unknown } | null) => (typeof q?.name === 'string' ? [q.name] : []));
          queues.push(...names);
          const total = typeof body.summary?.queues === 'number' ? body.summary.queues : 0;
          if (names.length === 0 || queues.length >= total) break;
        } catch (err) {
          const e = classifyAwsError(err, signal);
          return { unreachable: `${base.href}: ${unreachableReason(e) ?? e.code}` };
        }
      }
      return { functions: functions ?? [], queues };
    },
    close: () => sdk.destroy(),
  };
}

/** What the migration reads of a mapping (EventSourceMappingConfiguration in the Lambda API reference). */
function mappingOf(m: EventSourceMappingConfiguration): SqsMapping {
  return {
    uuid: m.UUID ?? '',
    functionArn: m.FunctionArn ?? '',
    eventSourceArn: m.EventSourceArn ?? '',
    state: m.State ?? 'unknown',
    // Lambda's defaults for SQS when a mapping does not say: 10 messages, no window.
    batchSize: m.BatchSize ?? 10,
    windowSec: m.MaximumBatchingWindowInSeconds ?? 0,
    filterPatterns: (m.FilterCriteria?.Filters ?? []).flatMap((f) => (f.Pattern !== undefined ? [f.Pattern] : [])),
    filterError: m.FilterCriteriaError?.Message ?? m.FilterCriteriaError?.ErrorCode,
    filterKmsKeyArn: m.KMSKeyArn,
    maxConcurrency: m.ScalingConfig?.MaximumConcurrency,
    reportBatchItemFailures: (m.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures'),
    eventCountMetrics: (m.MetricsConfig?.Metrics ?? []).includes('EventCount'),
    provisionedPollers: m.ProvisionedPollerConfig
      ? { min: m.ProvisionedPollerConfig.MinimumPollers, max: m.ProvisionedPollerConfig.MaximumPollers }
      : undefined,
  };
}

/** RedrivePolicy is JSON text: {"deadLetterTargetArn": "...", "maxReceiveCount": 5} (the count a string or a number). */
function redriveOf(text: string | undefined): QueueFacts['redrive'] {
  if (text === undefined || text === '') return undefined;
  try {
    const p = JSON.parse(text) as { deadLetterTargetArn?: unknown; maxReceiveCount?: unknown };
    const count = Number(p.maxReceiveCount);
    return typeof p.deadLetterTargetArn === 'string' && Number.isFinite(count)
      ? { deadLetterTargetArn: p.deadLetterTargetArn, maxReceiveCount: count }
      : undefined;
  } catch {
    return undefined;
  }
}
