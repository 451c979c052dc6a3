import type { EventFilter } from '../receive/event-filter.ts';
import type { QueueLimit } from '../receive/queue-limits.ts';
import type { FailureDestination } from '../settle/failure-destination.ts';
import type { RetryBackoff } from '../settle/retry-backoff.ts';

/** One queue's delivery settings (`queue-options`, keys defined in options.ts); a field left out is off. */
export interface QueueOptions extends QueueLimit {
  /** Messages that match none of these patterns are not invoked; undefined: no filter. */
  readonly filter?: EventFilter | undefined;
  /** filter-action: what happens to a message no pattern matches (deleted, or left for its visibility timeout). */
  readonly filterAction: 'delete' | 'leave';
  /** This queue's retry back-off; undefined: --retry-backoff's; 'off': none, whatever --retry-backoff says. */
  readonly retryBackoff?: RetryBackoff | 'off' | undefined;
  /** This queue's failure destination; undefined: the route's (--failure-destination). */
  readonly failureDestination?: FailureDestination | undefined;
  /** This queue's max-attempts; undefined: the route's (--max-attempts). */
  readonly maxAttempts?: number | undefined;
}
