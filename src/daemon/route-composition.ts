import type { Logger } from 'pino';
import type { AwsAdapters } from '../aws/adapters.ts';
import type { QueueTarget } from '../aws/queue-discovery.ts';
import { failureSender } from '../aws/failure-sender.ts';
import type { Config } from '../config/config.ts';
import type { MetricsSink } from '../core/telemetry/metrics-sink.ts';
import { Dispatcher } from '../dispatch/dispatcher.ts';
import type { DispatcherFleet } from '../dispatch/dispatcher-options.ts';
import type { Operations } from '../operator/operations.ts';
import type { OtelDispatchTracer } from '../operator/tracing/otel.ts';
import { OneAtATimeSource } from '../receive/one-at-a-time.ts';
import { SharedReceiveSource } from '../receive/shared-receive.ts';
import type { PollShares } from './poll-shares.ts';
import { drainRetryMs } from './shutdown.ts';
import { checkFoundQueues, type CheckedRoute } from './startup-checks.ts';

// What each route runs: its Dispatcher over its checked queues and function, and for a route whose queues are
// found by prefix or tag, the discovery that re-reads them every --queues-refresh and changes them live
// (src/aws/queue-discovery.ts); in a fleet, the fleet's view of which queues this replica serves and its budget.

/** What the routes' composition is given: the run's adapters and sinks. */
export interface RouteParts {
  readonly aws: AwsAdapters;
  readonly sink: MetricsSink;
  readonly logger: Logger;
  readonly tracer: OtelDispatchTracer | undefined;
  readonly polls: PollShares;
  /** The status page, shown each route's queues as they are found. */
  readonly ops: Pick<Operations, 'status'> | undefined;
  /** The fleet's view (src/daemon/fleet-composition.ts): which queues this replica serves, its budget share. */
  readonly fleet?: DispatcherFleet | undefined;
}

/**
 * Starts every route: its Dispatcher, and its discovery when its queues are found, not listed. Returns the
 * Dispatchers and the work that ends when each has stopped.
 */
export function startRoutes(
  config: Config,
  routes: readonly CheckedRoute[],
  parts: RouteParts,
  stop: AbortSignal,
): { readonly dispatchers: readonly Dispatcher[]; readonly work: Promise<void>[] } {
  const { aws, sink, logger, tracer, polls, ops, fleet } = parts;
  const dispatchers = createDispatchers(config, routes, aws, sink, logger, tracer, polls, fleet);
  const work = dispatchers.map((d) => d.run(stop));
  routes.forEach(({ route, discovery }, i) => {
    if (discovery === undefined) return;
    const dispatcher = dispatchers[i]!;
    const log = logger.child({ component: 'discovery', function: route.functionName });
    // The route receives from the queues found, and the status page shows them before they have traffic; a queue
    // found once running gets the start-up's queue check, logged, not fatal.
    const target: QueueTarget = {
      setQueues: (queues, tagLimits) => {
        dispatcher.setQueues(queues, tagLimits);
        ops?.status.showQueues(queues.map((q) => q.name));
      },
      joined: (queues) => checkFoundQueues(route, queues, log),
    };
    // The tags' limits of the queues found at start-up (--queue-options holds the rest).
    target.setQueues(discovery.found.queues, discovery.found.tagLimits);
    discovery.finder.report(discovery.found, sink, true);
    work.push(discovery.finder.run(target, stop, sink));
  });
  return { dispatchers, work };
}

/** One Dispatcher per route, over the route's checked queues and function. */
function createDispatchers(
  config: Config,
  routes: readonly CheckedRoute[],
  aws: AwsAdapters,
  sink: MetricsSink,
  logger: Logger,
  tracer: OtelDispatchTracer | undefined,
  polls: PollShares,
  fleet: DispatcherFleet | undefined,
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
          fleet,
        },
      ),
  );
}
