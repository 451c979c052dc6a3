import type { Logger } from 'pino';
import type { Dispatcher } from '../dispatch/dispatcher.ts';
import { EXIT_FAILURE } from '../exit-codes.ts';
import type { Operations } from '../operator/operations.ts';
import type { DaemonProcess } from './daemon.ts';

/** What started a shutdown: a signal, one that arrived before the daemon took over, or a failed part. */
export type ShutdownCause = NodeJS.Signals | 'earlier signal' | 'failure';

/**
 * Takes over the signals from main. Returns `beginShutdown`, for a failed part to stop the others as a signal
 * does. `dispatchers` is read when the process is forced to exit, to log what was left in flight.
 */
export function handleShutdown(
  proc: DaemonProcess,
  config: { readonly shutdownTimeoutMs: number },
  logger: Logger,
  ops: Pick<Operations, 'stopping'> | undefined,
  dispatchers: readonly Dispatcher[],
): (signal: ShutdownCause) => void {
  const { stop } = proc;
  // A second signal or the shutdown timeout ends the process with code 1 after logging what was left in flight.
  const forceExit = (reason: string) => {
    logger.error(
      { reason, left: dispatchers.flatMap((d) => d.inFlight()) },
      'forced exit; messages left in flight return after their visibility timeout',
    );
    process.exit(EXIT_FAILURE);
  };
  const beginShutdown = (signal: ShutdownCause) => {
    ops?.stopping();
    logger.info(
      { signal, shutdownTimeoutMs: config.shutdownTimeoutMs },
      'shutting down: no new receives; receives in flight complete (up to --poll-for), then every received message is invoked and settled',
    );
    setTimeout(() => forceExit('shutdown timeout'), config.shutdownTimeoutMs).unref();
  };
  proc.onSignal((signal) => {
    if (stop.signal.aborted) return forceExit(`second ${signal}`);
    stop.abort();
    beginShutdown(signal);
  });
  if (stop.signal.aborted) beginShutdown('earlier signal');
  return beginShutdown;
}
