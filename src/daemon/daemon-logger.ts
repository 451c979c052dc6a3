import type { Logger } from 'pino';
import type { RecentErrors } from '../operator/status/status-recorder.ts';

// The run's logger: JSON lines on stdout at --log-level (pino's own destination, fd 1); with the HTTP server on, its warn and error lines also
// feed the status page's "recent errors" (fields allow-listed, src/operator/status/status-recorder.ts).

/** The logger, and the recent errors it feeds when the HTTP server is on (`httpServer`; its lines then go to `stdout` through a multistream). */
export async function createDaemonLogger(
  level: string,
  httpServer: boolean,
  stdout: NodeJS.WritableStream,
  pid: number,
): Promise<{ readonly logger: Logger; readonly recentErrors: RecentErrors | undefined }> {
  const { pino } = await import('pino');
  if (!httpServer) return { logger: pino({ level, base: { pid } }), recentErrors: undefined };
  const recentErrors = new (await import('../operator/status/status-recorder.ts')).RecentErrors();
  const logger = pino(
    { level, base: { pid } },
    pino.multistream([
      { level: 'trace', stream: stdout },
      { level: 'warn', stream: recentErrors.stream },
    ]),
  );
  return { logger, recentErrors };
}
