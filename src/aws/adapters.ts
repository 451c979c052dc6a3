import type { Logger } from 'pino';
import { createSdkClients, type SdkClients } from './clients.ts';
import { sdkAgents } from './sdk-agents.ts';
import { classifyAwsError } from '../core/errors.ts';
import type { Config } from '../config/config.ts';
import type { AwsEndpoints } from './endpoints.ts';
import type { FunctionInvoker } from '../core/function-invoker.ts';
import type { MetricsPublisher } from '../core/telemetry/metrics-publisher.ts';
import type { MetricsSink } from '../core/telemetry/metrics-sink.ts';
import { AWS_METRICS } from '../core/telemetry/metric-names.ts';
import type { MessageSender, MessageSource, QueueDirectory, QueueLookup } from '../core/queue.ts';

/**
 * Which client carries the SQS and Lambda calls of a run (ReceiveMessage, DeleteMessageBatch,
 * ChangeMessageVisibilityBatch and Invoke, the start-up GetQueueUrl, GetQueueAttributes and DryRun, and
 * CloudWatch's PutMetricData): `lean` (default) signs and sends them itself (src/aws/signed-http.ts); `sdk` uses
 * the AWS SDK clients, as before. Temporal spillover uses the SDK's Lambda client either way, loaded only when on.
 */
export type AwsClientKind = 'sdk' | 'lean';

/** Every AWS adapter a run (or `workerless check`) uses, built one way for both. */
export interface AwsAdapters {
  /** Where the calls go (resolved at start-up by the SDK's rules); with `sdk` the clients resolve the same. */
  readonly endpoints: AwsEndpoints;
  /** The queues: receive, delete, change visibility, resolving them at start-up, and a failure destination's SendMessage. */
  readonly sqs: MessageSource & QueueLookup & QueueDirectory & MessageSender;
  /** Invoke and the start-up DryRun of a function. */
  invoker(functionName: string): FunctionInvoker;
  /** PutMetricData (CloudWatch metrics, the check's datum), built on first use: only `--metrics on` needs it. */
  cloudwatch(): Promise<MetricsPublisher>;
  /** The SDK clients, each loaded on first use: Lambda for Temporal spillover (and, with `sdk`, every other). */
  readonly sdk: SdkClients;
  /** Invoke and DryRun through the SDK's Lambda client (loaded on first use): what Temporal spillover invokes with. */
  sdkInvoker(functionName: string): Promise<FunctionInvoker>;
  /** Releases every socket. */
  destroy(): void;
}

export interface AwsAdapterOptions {
  /** Sockets per host (SQS and Lambda); a run sizes it with socketsPerHost. */
  readonly maxSockets: number;
  /** Sockets for SQS, if more than `maxSockets`: the idle long polls hold one each (socketsPerHost(loops, polls)). */
  readonly sqsMaxSockets?: number | undefined;
  /** Counts calls by operation and outcome, on the lean path as on the SDK clients (countAwsCalls). */
  readonly metrics?: MetricsSink | undefined;
  /** Told once when a service's clock offset is corrected (and when it is no longer skewed). */
  readonly logger?: Logger | undefined;
}

/**
 * Logs a clock-skew correction once per service and change (src/aws/clock-skew.ts), on both clients alike.
 * `service`: sqs, lambda, cloudwatch.
 */
export function logClockSkew(logger: Logger | undefined, service: string): ((offsetMs: number, skewed: boolean) => void) | undefined {
  if (!logger) return undefined;
  return (offsetMs, skewed) =>
    skewed
      ? logger.warn(
          { service, offsetMs },
          "this machine's clock is off AWS's; requests are signed with AWS's time (the SDK's clock-skew correction)",
        )
      : logger.info({ service, offsetMs }, "this machine's clock agrees with AWS's again");
}

/**
 * SQS and Lambda calls started per turn of the event loop (src/aws/call-pacer.ts): at about 0.2 ms of CPU
 * each, a turn of 32 starts leaves the event loop to its I/O every ~7 ms during a burst.
 */
const CALLS_PER_TURN = 32;

/** PutMetricData is sent one call at a time (flushes are serialized): one socket, opened only when metrics are on. */
export const CLOUDWATCH_SOCKETS = 1;

/** The credential providers' STS and SSO calls: one at a time (the provider is memoized), a refresh an hour. */
const CREDENTIAL_SOCKETS = 2;

/**
 * `config`: the region and --endpoint-url as configured, which the SDK clients get (they resolve them as
 * `endpoints` says; test/unit/aws/endpoints.test.ts proves it); `endpoints`: where the lean path sends its calls.
 */
export async function createAwsAdapters(
  kind: AwsClientKind,
  config: Pick<Config, 'region' | 'endpointUrl'>,
  endpoints: AwsEndpoints,
  options: AwsAdapterOptions,
): Promise<AwsAdapters> {
  // The SDK's clients share one agent configuration: SQS's, the larger (Lambda opens only what its calls need).
  const sdk = createSdkClients(config, endpoints.sqs, {
    ...options,
    network: endpoints.network,
    maxSockets: Math.max(options.maxSockets, options.sqsMaxSockets ?? 0),
    onSkew: (service) => logClockSkew(options.logger, service),
  });
  const sdkInvoker = async (fn: string): Promise<FunctionInvoker> => {
    const [{ LambdaSdkInvoker }, lambda] = await Promise.all([import('./lambda-sdk-invoker.ts'), sdk.lambda()]);
    return new LambdaSdkInvoker(lambda, fn);
  };
  if (kind === 'sdk') {
    const [{ SqsSdkSource }, { LambdaSdkInvoker }, sqs, lambda] = await Promise.all([
      import('./sqs-sdk-source.ts'),
      import('./lambda-sdk-invoker.ts'),
      sdk.sqs(),
      sdk.lambda(),
    ]);
    let cloudwatch: Promise<MetricsPublisher> | undefined;
    return {
      endpoints,
      sqs: new SqsSdkSource(sqs),
      invoker: (fn) => new LambdaSdkInvoker(lambda, fn),
      cloudwatch: () =>
        (cloudwatch ??= Promise.all([import('./cloudwatch-sdk.ts'), sdk.cloudwatch()]).then(
          ([{ CloudWatchSdkPublisher }, client]) => new CloudWatchSdkPublisher(client),
        )),
      sdk,
      sdkInvoker,
      destroy: () => sdk.destroy(),
    };
  }
  const [{ SignedHttp }, { CallPacer }, { SkewClock }, { SqsHttpSource }, { LambdaHttpInvoker }, { defaultProvider }] = await Promise.all([
    import('./signed-http.ts'),
    import('./call-pacer.ts'),
    import('./clock-skew.ts'),
    import('./sqs-http-source.ts'),
    import('./lambda-http-invoker.ts'),
    import('@aws-sdk/credential-provider-node'),
  ]);
  // One clock offset per service, as the SDK keeps one per client.
  const clock = (service: string) => new SkewClock(Date.now, logClockSkew(options.logger, service));
  // Signed for the region the endpoints were resolved for (a `fips-` region without its prefix, as the SDK signs).
  const region = endpoints.region;
  // One provider chain for every service: env, SSO, web identity (IRSA), ECS, IMDS..., memoized and refreshed before
  // expiry. Its STS and SSO clients connect as every AWS call does (the proxy, the CA bundle); the instance and
  // container metadata endpoints are reached straight, as the SDK reaches them.
  const credentials = defaultProvider({ clientConfig: { requestHandler: sdkAgents(CREDENTIAL_SOCKETS, endpoints.network) } });
  const pacer = new CallPacer(CALLS_PER_TURN);
  const network = endpoints.network;
  const sqsHttp = new SignedHttp({
    service: 'sqs',
    region,
    credentials,
    maxSockets: Math.max(options.maxSockets, options.sqsMaxSockets ?? 0),
    pacer,
    clock: clock('sqs'),
    network,
  });
  const lambdaHttp = new SignedHttp({
    service: 'lambda',
    region,
    credentials,
    maxSockets: options.maxSockets,
    pacer,
    clock: clock('lambda'),
    network,
  });
  const lambdaCalls = callCounter('lambda', options.metrics);
  let cloudwatchHttp: InstanceType<typeof SignedHttp> | undefined;
  let cloudwatch: Promise<MetricsPublisher> | undefined;
  let destroyed = false;
  return {
    endpoints,
    sqs: new SqsHttpSource(sqsHttp, endpoints.sqs, callCounter('sqs', options.metrics)),
    invoker: (fn) => new LambdaHttpInvoker(lambdaHttp, endpoints.lambda.url, fn, lambdaCalls),
    cloudwatch: () =>
      (cloudwatch ??= import('./cloudwatch-http.ts').then(({ CloudWatchHttpPublisher }) => {
        cloudwatchHttp = new SignedHttp({
          service: 'monitoring',
          region,
          credentials,
          maxSockets: CLOUDWATCH_SOCKETS,
          clock: clock('cloudwatch'),
          network,
        });
        // Built after destroy(): release it at once, as the SDK clients are.
        if (destroyed) cloudwatchHttp.destroy();
        return new CloudWatchHttpPublisher(cloudwatchHttp, endpoints.cloudwatch.url, callCounter('cloudwatch', options.metrics));
      })),
    sdk,
    sdkInvoker,
    destroy: () => {
      destroyed = true;
      sqsHttp.destroy();
      lambdaHttp.destroy();
      cloudwatchHttp?.destroy();
      sdk.destroy();
    },
  };
}

/** The same counts as countAwsCalls (src/aws/aws-calls.ts) records for the SDK clients. */
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
