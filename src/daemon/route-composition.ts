import type { Logger } from 'pino';
import type { AwsAdapters } from '../aws/adapters.ts';
import { failureSender } from '../aws/failure-sender.ts';
import type { Config } from '../config/config.ts';
import type { MetricsSink } from '../core/telemetry/metrics-sink.ts';
import { Dispatcher } from '../dispatch/dispatcher.ts';
import type { OtelDispatchTracer } from '../operator/tracing/otel.ts';
import { OneAtATimeSource } from '../receive/one-at-a-time.ts';
import { SharedReceiveSource } from '../receive/shared-receive.ts';
import type { PollShares } from './poll-shares.ts';
import { drainRetryMs } from './shutdown.ts';
import type { CheckedRoute } from './startup-checks.ts';

// What each route runs: its Dispatcher over its checked queues and function.

/** One Dispatcher per route, over the route's checked queues and function. */
export function createDispatchers(
  config: Config,
  routes: readonly CheckedRoute[],
  aws: AwsAdapters,
  sink: MetricsSink,
  logger: Logger,
  tracer: OtelDispatchTracer | undefined,
  polls: PollShares,
): Dispatcher[] {
  // One sender for every route; SNS's client is loaded on the first record for a topic.
  const sendFailure = failureSender(aws.sqs, () => aws.sdk.sns());
  return routes.map(
    ({ route, queues, invoker }) =>
      new Dispatcher(
        {
          // The route's options, with its queues resolved.
          ...route,
          queues,
          orderMode: route.queues.mode,
          drainRetryMs: drainRetryMs(config.shutdownTimeoutMs),
          pollShare: polls.route(),
        },
        {
          source: new SharedReceiveSource(new OneAtATimeSource(aws.sqs, { logger: logger.child({ component: 'receive' }) })),
          lookup: aws.sqs,
          invoker,
          metrics: sink,
          logger: logger.child(
            routes.length === 1 ? { component: 'dispatcher' } : { component: 'dispatcher', function: route.functionName },
          ),
          ...(tracer ? { tracer } : {}),
          sendFailure,
        },
      ),
  );
}
