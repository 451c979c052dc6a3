import { readFileSync } from 'node:fs';

// The file descriptors of the process, shared by the AWS socket pool and the HTTP server. Every socket is one
// descriptor, and the AWS calls must always be able to open theirs: under a 300-descriptor limit, 320 idle
// connections to an unbounded HTTP server made SQS calls fail with EMFILE, so deletes gave up and messages were
// delivered again. The HTTP server therefore gets a fixed, small share, and only what the pool
// leaves over.

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
 * AWS pool and the reserve. `awsSockets`: the pool's ceiling, as its owner counts it (awsSocketCeiling in
 * src/aws/adapters.ts). `openFileLimit` undefined (not Linux, unreadable): the fixed cap.
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
 * The soft "Max open files" of /proc/self/limits. Node raises its soft limit to the hard one at start-up, so
 * this is the limit the process really runs with (`ulimit -n` or `prlimit --nofile` before the start).
 * Undefined when the line is missing or says "unlimited".
 */
export function parseOpenFileLimit(procSelfLimits: string): number | undefined {
  const m = /^Max open files\s+(\d+)\s/m.exec(procSelfLimits);
  return m?.[1] === undefined ? undefined : Number(m[1]);
}

/** RLIMIT_NOFILE as the process runs with it (Node has no API for it); undefined off Linux. */
export function readOpenFileLimit(): number | undefined {
  try {
    return parseOpenFileLimit(readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return undefined;
  }
}
