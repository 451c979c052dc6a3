/**
 * What the status page shows, served as JSON at /status.json. Built from the metrics stream (per-queue
 * counts in time buckets) and the error log lines; never holds a message body.
 */
export type DaemonState = 'starting' | 'running' | 'paused' | 'draining' | 'stopped' | 'failed';

export interface QueueBucket {
  /** Bucket start, epoch ms. */
  readonly t: number;
  readonly polled: number;
  readonly invoked: number;
  readonly failed: number;
  readonly throttled: number;
  readonly deleted: number;
}

export interface QueueStatus {
  readonly name: string;
  /** Messages received and not yet settled, now. */
  readonly inFlight: number;
  /** Oldest first, one per bucketMs, covering the last few minutes. */
  readonly buckets: readonly QueueBucket[];
}

/** A Temporal task queue that spillover watches. */
export interface TaskQueueStatus {
  readonly name: string;
  /** 'unknown' while the server sends no statistics (Temporal Cloud unloads a task queue without pollers): no backlog then. */
  readonly stats: 'known' | 'unknown';
  /** The latest backlog; absent while unknown (unknown is not zero). */
  readonly backlog?: number;
  /** Lambda workers spillover counts as alive. */
  readonly workersAlive: number;
}

export interface RecentError {
  readonly at: number;
  /** The log line's message. */
  readonly msg: string;
  readonly queue?: string;
  /** An AWS error code, or the function's errorType (capped, src/util/cap-text.ts); never its errorMessage. */
  readonly code?: string;
  /** The log line's `reason`: the daemon's own words, never text from the function or a message. */
  readonly detail?: string;
  readonly messageIds?: readonly string[];
}

export interface StatusSnapshot {
  readonly state: DaemonState;
  readonly version: string;
  /** The routes' functions (none when only Temporal spillover runs). */
  readonly functions: readonly string[];
  readonly startedAt: number;
  readonly now: number;
  readonly bucketMs: number;
  readonly queues: readonly QueueStatus[];
  /** Temporal spillover's task queues (none when spillover is off). */
  readonly taskQueues: readonly TaskQueueStatus[];
  /** Newest first. */
  readonly recentErrors: readonly RecentError[];
}
