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

/** Every queue at once, whatever the page lists. */
export interface QueueSummary {
  /** Queues known (configured, or seen in the metrics). */
  readonly queues: number;
  /** Queues with any event in the window, or messages in flight now. */
  readonly active: number;
  /** Queues with a failed or throttled invocation in the window. */
  readonly failing: number;
  /** Messages in flight now, over every queue. */
  readonly inFlight: number;
  /** The queues' buckets summed, oldest first (as QueueStatus.buckets). */
  readonly buckets: readonly QueueBucket[];
}

/** Which queues `queues` holds (src/operator/status/status-query.ts): ?sort=&offset=&limit= of /status.json. */
export interface QueuePage {
  /** busiest: most invoked in the window first; worst: most failed and throttled first; configured: as configured. */
  readonly sort: 'busiest' | 'worst' | 'configured';
  readonly offset: number;
  readonly limit: number;
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
  /** Every queue, summed. */
  readonly summary: QueueSummary;
  /** The page `queues` is. */
  readonly page: QueuePage;
  /** One page of the queues, at most page.limit, in page.sort order (ties in configured order). */
  readonly queues: readonly QueueStatus[];
  /** Temporal spillover's task queues (none when spillover is off). */
  readonly taskQueues: readonly TaskQueueStatus[];
  /** Newest first. */
  readonly recentErrors: readonly RecentError[];
  /** This replica's view of its fleet (--fleet-table); absent without one. */
  readonly fleet?: FleetSnapshot;
}

/** The fleet as this replica sees it (docs/fleet.md). */
export interface FleetSnapshot {
  /** The fleet's name (--fleet-name). */
  readonly name: string;
  /** shared | joining | fallen-back | left: only `shared` leaves idle queues to their owners. */
  readonly mode: string;
  /** This replica's member id. */
  readonly self: string;
  /** The live members' ids, self included. */
  readonly members: readonly string[];
  /** Queues whose idle poll this replica keeps, of `queues` placed. */
  readonly owned: number;
  readonly queues: number;
  /** Queues some member advertises as busy: every replica receives from them. */
  readonly busy: number;
  /** --fleet-concurrency and this replica's part of it; absent without it. */
  readonly concurrency?: number;
  readonly share?: number;
}
