import { CLOUDWATCH_SOCKETS, socketsPerHost } from '../aws/adapters.ts';
import { HTTP_MAX_CONNECTIONS, RESERVED_FDS } from '../operator/http/fd-budget.ts';

/**
 * How many idle long polls the daemon may keep in flight: one per queue (src/receive/idle-polls.ts), as far as
 * the open-file limit allows. Every poll in flight holds one SQS socket, that is one file descriptor, besides
 * the loops' sockets (one SQS and one Lambda each, plus spares), the HTTP server's share and the reserve. When
 * the limit cannot cover one poll per queue, the polls are capped to what it allows and the queues take turns
 * (a queue without a poll waits for one to end, up to --poll-for). Never fewer than one poll per loop, which is
 * what the loops' own sockets always allowed. `openFileLimit` undefined (not Linux, unreadable): no cap.
 */
export function pollBudget(opts: { openFileLimit: number | undefined; loops: number; queues: number; httpServer: boolean }): number {
  const { openFileLimit, loops, queues, httpServer } = opts;
  if (openFileLimit === undefined) return queues;
  const others = RESERVED_FDS + (httpServer ? HTTP_MAX_CONNECTIONS + 1 : 0) + CLOUDWATCH_SOCKETS + 2 * socketsPerHost(loops);
  return Math.min(queues, Math.max(loops, openFileLimit - others));
}

/** A route's share of `budget` polls: in proportion to its queues, at least one. */
export function routePolls(budget: number, routeQueues: number, allQueues: number): number {
  if (allQueues <= 0) return 1;
  return Math.max(1, Math.min(routeQueues, Math.floor((budget * routeQueues) / allQueues)));
}
