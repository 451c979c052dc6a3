import type { AdaptiveConcurrency } from '../invoke/concurrency-limit.ts';
import type { DurableMode } from '../invoke/durable-event.ts';
import type { TenantSource } from '../invoke/tenant-split.ts';
import type { QueueList } from '../receive/queue-order.ts';
import type { QueueSelector } from '../receive/queue-set.ts';
import type { FailureDestination } from '../settle/failure-destination.ts';
import type { RetryBackoff } from '../settle/retry-backoff.ts';
import type { DeleteMode } from '../settle/settle-chunk.ts';
import type { QueueOptions } from './queue-options.ts';

/**
 * A route: one function, its queues and the options of its own worker pool. A daemon runs every route in one
 * process, each with its own Dispatcher; the flags (--function, --queues, --concurrency...) make one route, and
 * a `routes` list in the --config file makes several:
 *
 *   routes:
 *     - { function: payments-fn, queues: "payments:3,refunds:1", concurrency: 20 }
 *     - { function: reports-fn, queues: reports, concurrency: 2, batch-size: 10, retry-backoff: 5s }
 *
 * A route takes the options of the SQS dispatch and delivery-control groups (src/config/options.ts, ROUTE_GROUPS).
 * Those given outside `routes` (flags, env, file) are defaults for every route, except the ones that name
 * queues (function, queues and the per-queue settings), which each route gives itself.
 */
export interface RouteConfig {
  /** --function. */
  readonly functionName: string;
  /** --queues; with `discovery`, empty and weighted (each found queue's weight from its tag, 1 without). */
  readonly queues: QueueList;
  /** --queues-prefix and --queues-tag: the queues are found and re-read while the route runs; undefined: --queues lists them. */
  readonly discovery: QueueSelector | undefined;
  /** --queues-refresh, in milliseconds: how often `discovery` lists the queues again. */
  readonly queuesRefreshMs: number;
  /** --concurrency: worker loops. */
  readonly concurrency: number;
  /** --poll-for. */
  readonly pollForSec: number;
  /** --sleep. */
  readonly sleepSec: number;
  /** --batch-size: records per invocation. */
  readonly batchSize: number;
  /** --batch-window, in milliseconds; 0: one receive per batch. */
  readonly batchWindowMs: number;
  /** --visibility-timeout; undefined: each queue's own. */
  readonly visibilityTimeoutSec: number | undefined;
  /** --visibility-refresh, in milliseconds: how often the queues' own visibility timeout is re-read. */
  readonly visibilityRefreshMs: number;
  /** --backlog-gauges: the queues' counts are read with each re-read, for the backlog gauges. */
  readonly backlogGauges: boolean;
  /** --delete. */
  readonly deleteMode: DeleteMode;
  /** --retry-backoff; undefined: failed messages return after their visibility timeout. */
  readonly retryBackoff: RetryBackoff | undefined;
  /** --queue-options and the --queue-* flags: per-queue limits and filters by queue name. */
  readonly queueOptions: ReadonlyMap<string, QueueOptions>;
  /** --adaptive-concurrency; undefined: every loop receives, throttled or not. */
  readonly adaptiveConcurrency: AdaptiveConcurrency | undefined;
  /** --durable: off, or how each message starts its named durable execution (docs/targets.md). */
  readonly durable: DurableMode;
  /** --tenant-id-from; undefined: the function is not in tenant isolation mode (no TenantId is sent). */
  readonly tenantIdFrom: TenantSource | undefined;
  /** --failure-destination; undefined: none, except for queues with their own (queueOptions). */
  readonly failureDestination: FailureDestination | undefined;
  /** --max-attempts; undefined: each queue's redrive policy decides. */
  readonly maxAttempts: number | undefined;
}
