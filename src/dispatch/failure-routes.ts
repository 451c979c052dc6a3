import type { ResolvedQueue } from '../core/queue.ts';
import type { FailureRoute } from '../settle/deliver-failures.ts';
import { allowedReceives } from '../settle/failure-destination.ts';
import type { DispatcherOptions } from './dispatcher-options.ts';

/**
 * Each queue's failure destination (its own, else the route's) with the receives it allows: the queue's
 * maxReceiveCount as last read, else max-attempts (its own, else the route's); undefined: none, or no limit known.
 */
export function failureRoutes(options: DispatcherOptions): {
  readonly any: boolean;
  of(queue: ResolvedQueue, maxReceiveCount: number | undefined): FailureRoute | undefined;
} {
  const own = (queue: ResolvedQueue) => options.queueOptions?.get(queue.name);
  return {
    // Whatever the queues: a route's queues may change while it runs (Dispatcher.setQueues).
    any:
      options.failureDestination !== undefined ||
      [...(options.queueOptions?.values() ?? [])].some((o) => o.failureDestination !== undefined),
    of: (queue, maxReceiveCount) => {
      const destination = own(queue)?.failureDestination ?? options.failureDestination;
      const maxAttempts = allowedReceives(maxReceiveCount, own(queue)?.maxAttempts ?? options.maxAttempts);
      return destination === undefined || maxAttempts === undefined ? undefined : { destination, maxAttempts };
    },
  };
}
