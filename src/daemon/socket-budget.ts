import { CLOUDWATCH_SOCKETS } from '../aws/adapters.ts';

// The daemon's sockets and file descriptors, one arithmetic: the AWS pool's sockets per host (a socket per worker
// loop, spares, and for SQS one per idle long poll), the idle long polls the open-file limit allows, and the HTTP
// server's share of what the pool leaves. Every socket is one descriptor, and the AWS calls must always be able to
// open theirs: under a 300-descriptor limit, 320 idle connections to an unbounded HTTP server made SQS calls fail
// with EMFILE, so deletes gave up and messages were delivered again. The HTTP server therefore gets a fixed, small
// share, and only what the pool leaves over.

/**
 * The HTTP server's connection cap when descriptors are plentiful. Kubelet opens one connection per probe and
 * closes it, Prometheus keeps one or two per scrape, a browser on the status page up to six: 32 leaves room
 * for several operators at once and is still nothing next to the AWS pool.
 */
export const HTTP_MAX_CONNECTIONS = 32;

/** The least the server keeps even when the limit is too low for everything: probes must still be answered. */
const HTTP_MIN_CONNECTIONS = 4;

/**
 * Descriptors a running daemon uses besides its AWS and HTTP sockets: stdio, libuv's epoll, eventfds and
 * signal pipe, files read at start-up, DNS, the credentials provider's calls (IMDS, STS, SSO), the OTLP exporter
 * and the Temporal client. A daemon with --concurrency 10 holds 20 besides its sockets (counted in /proc/PID/fd);
 * the rest is margin.
 */
export const RESERVED_FDS = 64;

export interface FdBudget {
  /** The HTTP server's connection cap (server.maxConnections). */
  readonly httpMaxConnections: number;
  /** Descriptors the daemon may need at most: AWS sockets, the HTTP server (listener included), the reserve. */
  readonly needed: number;
  /** Set when the limit is known and below `needed`: the numbers for the start-up warning. */
  readonly shortfall?: {
    readonly openFileLimit: number;
    readonly awsSockets: number;
    readonly reservedFds: number;
    /** The HTTP server's cap under this limit (0 without the server). */
    readonly httpMaxConnections: number;
    readonly needed: number;
  };
}

/**
 * How many connections the HTTP server may hold under the process's open-file limit (RLIMIT_NOFILE), after the
 * AWS pool and the reserve. `awsSockets`: the pool's ceiling (awsSocketCeiling). `openFileLimit` undefined (not Linux, unreadable): the fixed cap.
 */
export function fdBudget(opts: { openFileLimit: number | undefined; awsSockets: number; httpServer: boolean }): FdBudget {
  const { openFileLimit, awsSockets, httpServer } = opts;
  // The listening socket is one more descriptor.
  const http = httpServer ? HTTP_MAX_CONNECTIONS + 1 : 0;
  const needed = awsSockets + RESERVED_FDS + http;
  if (openFileLimit === undefined || openFileLimit >= needed) return { httpMaxConnections: HTTP_MAX_CONNECTIONS, needed };
  const leftOver = openFileLimit - awsSockets - RESERVED_FDS - 1;
  const httpMaxConnections = Math.max(HTTP_MIN_CONNECTIONS, Math.min(HTTP_MAX_CONNECTIONS, leftOver));
  return {
    httpMaxConnections,
    needed,
    shortfall: { openFileLimit, awsSockets, reservedFds: RESERVED_FDS, httpMaxConnections: httpServer ? httpMaxConnections : 0, needed },
  };
}

/**
 * Sockets per host beyond one per worker loop: room for the calls that run beside the loops' long polls and
 * invocations (DeleteMessageBatch and ChangeMessageVisibilityBatch from settling and the visibility lease),
 * so that they do not wait for a socket behind them.
 */
const SPARE_SOCKETS_PER_HOST = 16;

/**
 * The socket pool: sockets per host for `loops` worker loops in all, since every worker loop may hold one
 * receive and one invocation open at a time; for SQS, `polls` more: the idle long polls in flight (one per
 * queue, src/receive/idle-polls.ts), each holding a socket for up to --poll-for.
 */
export function socketsPerHost(loops: number, polls = 0): number {
  return loops + polls + SPARE_SOCKETS_PER_HOST;
}

/**
 * The most AWS sockets the daemon opens: `sqsSockets` to SQS and `lambdaSockets` to Lambda (src/aws/sdk-agents.ts
 * keeps every one of them open for reuse), and one for CloudWatch's PutMetricData. fdBudget counts with it.
 */
export function awsSocketCeiling(sqsSockets: number, lambdaSockets = sqsSockets): number {
  return sqsSockets + lambdaSockets + CLOUDWATCH_SOCKETS;
}

/**
 * How many idle long polls the daemon may keep in flight: one per queue (src/receive/idle-polls.ts), as far as
 * the open-file limit allows. Every poll in flight holds one SQS socket, that is one file descriptor, besides
 * the loops' sockets (one SQS and one Lambda each, plus spares), the HTTP server's share and the reserve; at least
 * one, even when the limit does not cover the loops' own sockets (the start-up then warns of the shortfall, counting
 * that one poll: fdBudget). `openFileLimit` undefined (not Linux, unreadable): no cap. The
 * number of queues plays no part: queues found by prefix or tag come and go while the daemon runs (PollShares
 * divides the budget among the routes by their queues of the moment).
 */
export function pollBudget(opts: { openFileLimit: number | undefined; loops: number; httpServer: boolean }): number {
  const { openFileLimit, loops, httpServer } = opts;
  if (openFileLimit === undefined) return Infinity;
  const others = RESERVED_FDS + (httpServer ? HTTP_MAX_CONNECTIONS + 1 : 0) + CLOUDWATCH_SOCKETS + 2 * socketsPerHost(loops);
  return Math.max(1, openFileLimit - others);
}

/** What a run is sized with: the pool's sockets per host, the idle polls, and the descriptors left for the server. */
export interface SocketBudget {
  /** Sockets per host for the worker loops (Lambda, and SQS's share besides the polls). */
  readonly perHost: number;
  /** Idle long polls in flight at most, for all the routes together (Infinity: no limit known). */
  readonly polls: number;
  /** Sockets for SQS: the loops' and the polls'. */
  readonly sqsPerHost: number;
  /** The HTTP server's share, and the shortfall when the limit is below what the sockets may need. */
  readonly fds: FdBudget;
}

/**
 * The whole budget for `loops` worker loops in all under `openFileLimit` (undefined: not Linux or unreadable):
 * the polls get what the loops, the server and the reserve leave, the pool is sized for the loops and the polls,
 * and the server gets its share of what the pool leaves.
 */
export function socketBudget(opts: { openFileLimit: number | undefined; loops: number; httpServer: boolean }): SocketBudget {
  const perHost = socketsPerHost(opts.loops);
  const polls = pollBudget(opts);
  const sqsPerHost = socketsPerHost(opts.loops, polls);
  const fds = fdBudget({ ...opts, awsSockets: awsSocketCeiling(sqsPerHost, perHost) });
  return { perHost, polls, sqsPerHost, fds };
}
