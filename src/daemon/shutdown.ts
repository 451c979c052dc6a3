import type { Logger } from 'pino';
import type { DispatcherStatus } from '../dispatch/status.ts';
import { EXIT_FAILURE, EXIT_OK } from '../core/exit-codes.ts';
import type { Operations } from '../operator/operations.ts';
import type { DaemonProcess } from './daemon-process.ts';

/**
 * The part of --shutdown-timeout kept for the invocations already in flight when the stop came: they answer and
 * their messages are deleted or released before the forced exit. Until then a batch that is throttled,
 * unreachable or paused keeps retrying instead of being released, which would raise its receive count. With the
 * default 30 s, 15 s of retries and 15 s for the rest.
 */
const IN_FLIGHT_RESERVE_MS = 15_000;

/** The drain-retry budget: how long after the stop a dispatcher keeps retrying a batch (never negative). */
export function drainRetryMs(shutdownTimeoutMs: number): number {
  return Math.max(0, shutdownTimeoutMs - IN_FLIGHT_RESERVE_MS);
}

/**
 * The force-exit timer: the drain gets --shutdown-timeout from the stop, then `forceExit` runs (it logs what is
 * left and exits 1; those messages return after their visibility timeout). Unref'd, so a drain that ends in time
 * never waits for it.
 */
export function forceExitAfter(shutdownTimeoutMs: number, forceExit: () => void): void {
  setTimeout(forceExit, shutdownTimeoutMs).unref();
}

/** What started a shutdown: a signal, one that arrived before the daemon took over, or a failed part. */
export type ShutdownCause = NodeJS.Signals | 'earlier signal' | 'failure';

/** What handleShutdown reads of the configuration: the timeout, and each route's long poll (`routes`, for the start-up warning). */
export interface ShutdownConfig {
  readonly shutdownTimeoutMs: number;
  readonly routes?: readonly { readonly functionName: string; readonly pollForSec: number }[];
}

/**
 * Takes over the signals from main. Returns `beginShutdown`, for a failed part to stop the others as a signal
 * does. `dispatchers` is read when the process is forced to exit, to log what was left in flight.
 */
export function handleShutdown(
  proc: DaemonProcess,
  config: ShutdownConfig,
  logger: Logger,
  ops: Pick<Operations, 'stopping'> | undefined,
  dispatchers: readonly { status(): Pick<DispatcherStatus, 'inFlight'> }[],
): (signal: ShutdownCause) => void {
  const { stop } = proc;
  // A receive is never aborted, not even by a stop (src/receive/receiver.ts says why): a long poll open at the stop
  // runs up to --poll-for, and a shorter --shutdown-timeout ends the process first.
  for (const route of config.routes?.filter((r) => r.pollForSec * 1000 > config.shutdownTimeoutMs) ?? []) {
    logger.warn(
      { function: route.functionName, pollForSec: route.pollForSec, shutdownTimeoutMs: config.shutdownTimeoutMs },
      '--shutdown-timeout is below --poll-for: a stop can end at the shutdown timeout while a long poll is still open',
    );
  }
  // A second signal or the shutdown timeout ends the process with code 1 after logging what was left in flight.
  const forceExit = (reason: string) => {
    const left = dispatchers.flatMap((d) => d.status().inFlight);
    // Only a long poll was still open (--shutdown-timeout below --poll-for): no message was received, none is left.
    if (reason === 'shutdown timeout' && left.length === 0) {
      logger.warn({ reason }, 'shutdown timeout with no message in flight; a long poll was still open; stopped');
      return proc.exit(EXIT_OK);
    }
    logger.error({ reason, left }, 'forced exit; messages left in flight return after their visibility timeout');
    proc.exit(EXIT_FAILURE);
  };
  const beginShutdown = (signal: ShutdownCause) => {
    ops?.stopping();
    logger.info(
      { signal, shutdownTimeoutMs: config.shutdownTimeoutMs },
      'shutting down: no new receives; receives in flight complete (up to --poll-for), then every received message is invoked and settled',
    );
    forceExitAfter(config.shutdownTimeoutMs, () => forceExit('shutdown timeout'));
  };
  proc.onSignal((signal) => {
    if (stop.signal.aborted) return forceExit(`second ${signal}`);
    stop.abort();
    beginShutdown(signal);
  });
  if (stop.signal.aborted) beginShutdown('earlier signal');
  return beginShutdown;
}

/**
 * Waits for every part of the daemon (each route's dispatcher, spillover). A part that fails (a worker loop's
 * bug, spillover) stops the others the way a signal does, so they drain and settle what they hold; the failures
 * come back for the daemon to exit 1 with their reason instead of reporting a stop.
 */
export async function awaitParts(
  parts: readonly Promise<void>[],
  stop: AbortController,
  beginShutdown: (cause: ShutdownCause) => void,
): Promise<unknown[]> {
  const failures: unknown[] = [];
  await Promise.all(
    parts.map((part) =>
      part.catch((err: unknown) => {
        failures.push(err);
        if (!stop.signal.aborted) {
          stop.abort();
          beginShutdown('failure');
        }
      }),
    ),
  );
  return failures;
}
