import type { Logger } from 'pino';
import type { MessageSource, QueueLookup, ResolvedQueue } from '../core/queue.ts';
import type { RouteConfig } from './route.ts';
import type { FunctionInvoker } from '../core/function-invoker.ts';
import type { MetricsSink } from '../core/telemetry/metrics-sink.ts';
import type { DispatchTracer } from '../core/telemetry/tracer.ts';
import type { DestinationSender } from '../settle/deliver-failures.ts';
import type { OrderMode, Random } from '../receive/queue-order.ts';
import type { PollShare } from '../receive/idle-polls.ts';

/**
 * A route's options (src/config/routes.ts, where each one is defined with its default), with its queues
 * resolved. The ones whose absence means "none" or "off" may be left out.
 */
export type DispatcherOptions = Pick<
  RouteConfig,
  'functionName' | 'concurrency' | 'batchSize' | 'batchWindowMs' | 'pollForSec' | 'sleepSec' | 'visibilityRefreshMs' | 'deleteMode'
> &
  Partial<
    Pick<
      RouteConfig,
      | 'visibilityTimeoutSec'
      | 'retryBackoff'
      | 'queueOptions'
      | 'adaptiveConcurrency'
      | 'backlogGauges'
      | 'failureDestination'
      | 'maxAttempts'
      | 'tenantIdFrom'
      | 'durable'
    >
  > & {
    readonly queues: readonly ResolvedQueue[];
    readonly orderMode: OrderMode;
    /**
     * After a stop, how long a batch that is throttled, unreachable or paused keeps retrying before it is
     * released (absent: released at once). Releasing raises the message's receive count, so a few seconds of
     * retries usually settle it instead; src/daemon/shutdown.ts (drainRetryMs) leaves room for that inside
     * --shutdown-timeout.
     */
    readonly drainRetryMs?: number | undefined;
    /**
     * The route's share of the idle long polls the open-file limit allows (src/daemon/socket-budget.ts); absent: one
     * per queue. Below the number of queues, the queues take turns.
     */
    readonly pollShare?: PollShare | undefined;
  };

export interface DispatcherDeps {
  readonly source: MessageSource;
  readonly invoker: FunctionInvoker;
  /** Re-reads the queues' visibility timeout; without it the one read at start-up is kept. */
  readonly lookup?: Pick<QueueLookup, 'queueAttributes'> | undefined;
  readonly metrics: MetricsSink;
  readonly logger: Logger;
  readonly tracer?: DispatchTracer;
  /** Sends failure records (src/aws/failure-sender.ts); without it no failure destination is used. */
  readonly sendFailure?: DestinationSender | undefined;
  readonly random?: Random;
  /**
   * The clock for every duration, deadline and wait: monotonic (default performance.now(), src/util/clock.ts), so a
   * wall-clock step stalls nothing. Times reach the tracer as epoch ms, converted at that boundary.
   */
  readonly now?: () => number;
  /** The fleet's view (src/fleet/fleet-member.ts); without it this replica serves every queue on its own budget. */
  readonly fleet?: DispatcherFleet | undefined;
}

/** What a route sees of the fleet: which queues it receives from, and its part of a fleet budget. */
export interface DispatcherFleet {
  /** Whether this replica receives from `queue` now. */
  serves(queue: ResolvedQueue): boolean;
  /** This route's part of --fleet-concurrency now, at most `cap` (its --concurrency); undefined: no fleet budget. */
  readonly share?: ((cap: number) => number) | undefined;
}
