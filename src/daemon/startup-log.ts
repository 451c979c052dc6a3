import type { Logger } from 'pino';
import { endpointName, type AwsEndpoints } from '../aws/endpoints.ts';
import type { Config } from '../config/config.ts';
import { redactTemporalConfig } from '../temporal/options.ts';
import type { CheckedRoute } from './startup-checks.ts';

// The daemon's two start-up lines: where the AWS calls go, and what runs once the checks have passed.

/** Where the AWS calls go, once at start-up, as the SDK resolved it. */
export function logEndpoints(logger: Logger, config: Config, endpoints: AwsEndpoints, lambdaEndpoint: string): void {
  logger.info(
    {
      region: endpoints.region,
      regionFrom: config.regionOrigin,
      fips: endpoints.useFips,
      dualStack: endpoints.useDualStack,
      sqs: endpointName(endpoints.sqs.url),
      // Without a configured endpoint, SQS calls for a queue URL go to that URL's host, as the SDK sends them.
      sqsQueueUrlCalls: endpoints.sqs.custom ? 'to the sqs endpoint' : "to the queue URL's host",
      lambda: lambdaEndpoint,
      cloudwatch: endpointName(endpoints.cloudwatch.url),
      // The fleet's table (--fleet-table), by the SDK's rules as its own client resolves them.
      ...(endpoints.dynamodb !== undefined ? { dynamodb: endpointName(endpoints.dynamodb.url) } : {}),
      // The proxies, NO_PROXY and the CA bundle when set (src/aws/network.ts), never a proxy's credentials.
      ...endpoints.network.describe(),
      awsClient: config.awsClient,
    },
    'AWS endpoints',
  );
}

/** What runs, once the start-up checks have passed. */
export function logStarted(logger: Logger, config: Config, routes: readonly CheckedRoute[], tracing: boolean): void {
  logger.info(
    {
      routes: routes.map(({ route, queues }) => ({
        function: route.functionName,
        queues: queues.map((q) => ({ name: q.name, weight: q.weight, fifo: q.fifo, url: q.url })),
        order: route.queues.mode,
        concurrency: route.concurrency,
        batchSize: route.batchSize,
        batchWindowMs: route.batchWindowMs,
        pollForSec: route.pollForSec,
        deleteMode: route.deleteMode,
      })),
      metrics: config.metricsEnabled ? config.metricsNamespace : 'off',
      http: config.httpPort !== undefined ? `${config.httpHost}:${config.httpPort}` : 'off',
      tracing: tracing ? 'otlp' : 'off',
      temporal: config.temporal ? redactTemporalConfig(config.temporal) : 'off',
    },
    'workerless started',
  );
}
