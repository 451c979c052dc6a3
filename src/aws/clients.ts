import type { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { SNSClient } from '@aws-sdk/client-sns';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { AwsNetwork } from './network.ts';
import { sdkAgents } from './sdk-agents.ts';
import { isSkewRefusal, skewWatcher } from './clock-skew.ts';
import type { ServiceEndpoint } from './endpoints.ts';
import { CAP_ANSWERS, capAnswers } from './sdk-answer-caps.ts';
import type { Config } from '../config/config.ts';
import { COUNT_AWS_CALLS, countAwsCalls } from './aws-calls.ts';
import type { MetricsSink } from '../core/telemetry/metrics-sink.ts';

/**
 * The AWS SDK clients, each built (and its package loaded) on first use: importing one costs 15-30 MiB of
 * resident memory, and the lean path (the default) needs none of them unless Temporal spillover is on. Built
 * one way for a run and for `workerless check`, so the check proves what a run will do.
 */
export interface SdkClients {
  sqs(): Promise<SQSClient>;
  lambda(): Promise<LambdaClient>;
  cloudwatch(): Promise<CloudWatchClient>;
  /** SNS Publish, for a failure destination that is a topic; loaded only then. */
  sns(): Promise<SNSClient>;
  /** Releases the sockets of every client built so far. */
  destroy(): void;
}

export interface SdkClientOptions {
  /** Sockets per host for SQS and Lambda: every worker loop may hold one long poll and one invocation open. Default 50. */
  readonly maxSockets?: number | undefined;
  /**
   * Proxies and the CA bundle (src/aws/network.ts, AwsEndpoints.network): each client's agents make their
   * connections as the lean transport does (src/aws/sdk-agents.ts).
   */
  readonly network: AwsNetwork;
  /** Counts every call by operation and outcome (src/aws/aws-calls.ts). */
  readonly metrics?: MetricsSink | undefined;
  /** Per service (sqs, lambda, cloudwatch): told when the client's clock offset becomes skewed, or no longer is. */
  readonly onSkew?: ((service: string) => ((offsetMs: number, skewed: boolean) => void) | undefined) | undefined;
}

/**
 * Reports the SDK's own corrections of a client's clock offset (its resolved config's systemClockOffset, which
 * the SDK's signer sets from each answer's Date header) after each call, as the lean path reports its own.
 * Use: `client.middlewareStack.add(watchClockSkew(client.config, onSkew), WATCH_CLOCK_SKEW)`.
 */
function watchClockSkew(config: { systemClockOffset?: number | undefined }, onSkew: (offsetMs: number, skewed: boolean) => void) {
  const watch = skewWatcher(onSkew);
  return <A, R>(next: (args: A) => Promise<R>) =>
    async (args: A): Promise<R> => {
      try {
        return await next(args);
      } finally {
        watch(config.systemClockOffset ?? 0);
      }
    };
}
const WATCH_CLOCK_SKEW = { step: 'initialize', name: 'workerlessClockSkew' } as const;

/**
 * The Lambda client's retry strategy: one more attempt for a clock-skew refusal only, which the SDK's signer
 * has just corrected (@smithy/core's isClockSkewCorrectedError, or "Signature expired"). AWS refused such a
 * request unread, so repeating it cannot run the function twice. Nothing else is retried here (throttles,
 * 5xx, resets): our own loop owns those, and knows when a retry is safe (src/invoke/invoke-retry.ts).
 */
const LAMBDA_SKEW_RETRY = {
  acquireInitialRetryToken: () => Promise.resolve(retryToken(0)),
  refreshRetryTokenForRetry: (token: { getRetryCount(): number }, info: { error?: unknown }) => {
    const e = (info.error ?? {}) as { name?: unknown; message?: unknown; $metadata?: { clockSkewCorrected?: unknown } };
    const skew = isSkewRefusal(String(e.name), String(e.message), e.$metadata?.clockSkewCorrected === true);
    return token.getRetryCount() === 0 && skew ? Promise.resolve(retryToken(1)) : Promise.reject(new Error('No retry token available'));
  },
  recordSuccess: () => {},
};

function retryToken(count: number): { getRetryCount(): number; getRetryDelay(): number } {
  return { getRetryCount: () => count, getRetryDelay: () => 0 };
}

/**
 * The clients get the region as configured (a `fips-` region too) and --endpoint-url; they find everything else
 * as the SDK does (AWS_USE_FIPS_ENDPOINT, the profile's endpoint settings...), which src/aws/endpoints.ts resolves
 * the same way for the lean path. `sqsEndpoint`: that resolution's SQS endpoint, read only to learn whether SQS
 * has a configured endpoint.
 */
export function createSdkClients(
  config: Pick<Config, 'region' | 'endpointUrl'>,
  sqsEndpoint: ServiceEndpoint,
  options: SdkClientOptions,
): SdkClients {
  const maxSockets = options.maxSockets ?? 50;
  // Agents of its own for each client: a client's destroy() destroys its handler's agents. Its credential
  // providers' STS and SSO clients get its handler too (the SDK passes it on as parentClientConfig).
  const base = () => ({
    region: config.region,
    ...(config.endpointUrl ? { endpoint: config.endpointUrl } : {}),
    requestHandler: sdkAgents(maxSockets, options.network),
  });
  const built: { destroy(): void }[] = [];
  let destroyed = false;
  /** Builds a client once; concurrent first calls share it. */
  const lazy = <C extends { destroy(): void }>(build: () => Promise<C>): (() => Promise<C>) => {
    let client: Promise<C> | undefined;
    return () =>
      (client ??= build().then((c) => {
        // Built after destroy(): release it at once, like the others.
        if (destroyed) c.destroy();
        else built.push(c);
        return c;
      }));
  };
  return {
    sqs: lazy(async () => {
      const { SQSClient } = await import('@aws-sdk/client-sqs');
      // With a configured endpoint (LocalStack, ElasticMQ; from the flag, the environment or the profile) the queue
      // URLs' hosts may not resolve: always talk to the endpoint. On AWS the SDK sends each call to its queue URL's
      // host, which serves cross-region queue URLs.
      const client = new SQSClient({ ...base(), useQueueUrlAsEndpoint: !sqsEndpoint.custom });
      client.middlewareStack.addRelativeTo(capAnswers('sqs'), CAP_ANSWERS);
      const onSkew = options.onSkew?.('sqs');
      if (onSkew) client.middlewareStack.add(watchClockSkew(client.config, onSkew), WATCH_CLOCK_SKEW);
      if (options.metrics) client.middlewareStack.add(countAwsCalls('sqs', options.metrics), COUNT_AWS_CALLS);
      return client;
    }),
    lambda: lazy(async () => {
      const { LambdaClient } = await import('@aws-sdk/client-lambda');
      // Our own loop retries invocations (and knows when a retry is safe), so the SDK must not retry them too;
      // except a clock-skew refusal, which the SDK's retry would cure and our loop would take for a fatal error.
      const client = new LambdaClient({ ...base(), maxAttempts: 2, retryStrategy: LAMBDA_SKEW_RETRY });
      client.middlewareStack.addRelativeTo(capAnswers('lambda'), CAP_ANSWERS);
      const onSkew = options.onSkew?.('lambda');
      if (onSkew) client.middlewareStack.add(watchClockSkew(client.config, onSkew), WATCH_CLOCK_SKEW);
      if (options.metrics) client.middlewareStack.add(countAwsCalls('lambda', options.metrics), COUNT_AWS_CALLS);
      return client;
    }),
    cloudwatch: lazy(async () => {
      const { CloudWatchClient } = await import('@aws-sdk/client-cloudwatch');
      const client = new CloudWatchClient(base());
      client.middlewareStack.addRelativeTo(capAnswers('cloudwatch'), CAP_ANSWERS);
      const onSkew = options.onSkew?.('cloudwatch');
      if (onSkew) client.middlewareStack.add(watchClockSkew(client.config, onSkew), WATCH_CLOCK_SKEW);
      if (options.metrics) client.middlewareStack.add(countAwsCalls('cloudwatch', options.metrics), COUNT_AWS_CALLS);
      return client;
    }),
    sns: lazy(async () => {
      const { SNSClient } = await import('@aws-sdk/client-sns');
      // The SDK's own retries (3 attempts for throttling, 5xx and network errors): a Publish sent twice is one more
      // copy of a failure record, which is harmless, and a FIFO topic drops it by its deduplication id.
      const client = new SNSClient(base());
      client.middlewareStack.addRelativeTo(capAnswers('sns'), CAP_ANSWERS);
      const onSkew = options.onSkew?.('sns');
      if (onSkew) client.middlewareStack.add(watchClockSkew(client.config, onSkew), WATCH_CLOCK_SKEW);
      if (options.metrics) client.middlewareStack.add(countAwsCalls('sns', options.metrics), COUNT_AWS_CALLS);
      return client;
    }),
    destroy: () => {
      destroyed = true;
      for (const c of built.splice(0)) c.destroy();
    },
  };
}
