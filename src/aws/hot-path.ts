import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { classifyAwsError } from '../aws-errors.ts';
import type { FunctionInvoker } from '../invoke/lambda-invoker.ts';
import type { MetricsSink } from '../metrics/metrics-sink.ts';
import { AWS_METRICS } from '../metrics/names.ts';
import type { MessageSource } from '../queues/sqs-source.ts';

/**
 * Which client carries the per-message calls (ReceiveMessage, DeleteMessageBatch, ChangeMessageVisibilityBatch,
 * Invoke): `lean` (default) signs and sends them itself (src/aws/signed-http.ts); `sdk` uses the AWS SDK
 * clients, as before. Start-up checks, CloudWatch and Temporal use the SDK either way.
 */
export type AwsClientKind = 'sdk' | 'lean';
export const AWS_CLIENT_KINDS = ['lean', 'sdk'] as const;

export interface HotPath {
  readonly source: MessageSource;
  invoker(functionName: string): FunctionInvoker;
  destroy(): void;
}

export interface HotPathOptions {
  readonly sqs: SQSClient;
  readonly lambda: LambdaClient;
  readonly region: string | undefined;
  readonly endpointUrl: string | undefined;
  /** Sockets per host (the SDK clients get the same). */
  readonly maxSockets: number;
  readonly env: NodeJS.ProcessEnv;
  /** Counts calls by operation and outcome, like the SDK clients' countAwsCalls middleware. */
  readonly metrics?: MetricsSink | undefined;
}

export async function createHotPath(kind: AwsClientKind, options: HotPathOptions): Promise<HotPath> {
  if (kind === 'sdk') {
    const [{ SqsMessageSource }, { LambdaInvoker }] = await Promise.all([
      import('../queues/sqs-source.ts'),
      import('../invoke/lambda-invoker.ts'),
    ]);
    return { source: new SqsMessageSource(options.sqs), invoker: (fn) => new LambdaInvoker(options.lambda, fn), destroy: () => {} };
  }
  const [{ SignedHttp, serviceEndpoint }, { SqsHttpSource }, { LambdaHttpInvoker }, { defaultProvider }] = await Promise.all([
    import('./signed-http.ts'),
    import('../queues/sqs-http-source.ts'),
    import('../invoke/lambda-http-invoker.ts'),
    import('@aws-sdk/credential-provider-node'),
  ]);
  // The SDK clients were given the same region; config validation guarantees one.
  const region = options.region ?? options.env['AWS_REGION'] ?? options.env['AWS_DEFAULT_REGION'] ?? '';
  // One provider chain for both services: env, SSO, web identity (IRSA), ECS, IMDS..., memoized and refreshed before expiry.
  const credentials = defaultProvider();
  const sqsHttp = new SignedHttp({ service: 'sqs', region, credentials, maxSockets: options.maxSockets });
  const lambdaHttp = new SignedHttp({ service: 'lambda', region, credentials, maxSockets: options.maxSockets });
  const sqsEndpoint = serviceEndpoint('sqs', region, options.endpointUrl, options.env);
  const lambdaEndpoint = serviceEndpoint('lambda', region, options.endpointUrl, options.env);
  const sqsCalls = callCounter('sqs', options.metrics);
  const lambdaCalls = callCounter('lambda', options.metrics);
  return {
    source: new SqsHttpSource(sqsHttp, sqsEndpoint.custom ? sqsEndpoint.url : undefined, sqsCalls),
    invoker: (fn) => new LambdaHttpInvoker(lambdaHttp, lambdaEndpoint.url, fn, lambdaCalls),
    destroy: () => {
      sqsHttp.destroy();
      lambdaHttp.destroy();
    },
  };
}

/** The same counts as countAwsCalls (src/metrics/aws-calls.ts) records for the SDK clients. */
function callCounter(service: string, sink: MetricsSink | undefined): ((operation: string, err: unknown) => void) | undefined {
  if (!sink) return undefined;
  const def = AWS_METRICS.calls;
  return (operation, err) =>
    sink.record({
      name: def.cloudwatch,
      unit: def.unit,
      value: 1,
      dimensions: { Service: service, Operation: operation, Outcome: err === undefined ? 'ok' : classifyAwsError(err).kind },
    });
}
