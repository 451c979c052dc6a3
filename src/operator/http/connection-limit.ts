import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { ConnectionSlots } from './connection-slots.ts';

/** A refused or closed connection is logged at most this often, with the count since the last line. */
const LOG_INTERVAL_MS = 60_000;

/**
 * Holds the server to `maxConnections` (src/daemon/socket-budget.ts): when full, a new connection takes the
 * place of the one that has waited longest without a complete request (connection-slots.ts), and is refused only
 * when every place has a request in flight. Replaces server.maxConnections, which
 * refuses the newcomer whatever the others do.
 */
export function limitConnections(server: Server, maxConnections: number, logger: Logger): void {
  const slots = new ConnectionSlots<Socket>(maxConnections);
  const refused = throttledWarn(logger, 'HTTP connections refused: every place has a request in flight', { maxConnections });
  const evicted = throttledWarn(logger, 'HTTP connections closed for a newcomer: they had sent no complete request in time', {
    maxConnections,
  });
  server.on('connection', (socket: Socket) => {
    const admission = slots.admit(socket);
    if (!admission.admit) {
      socket.destroy();
      return refused();
    }
    if (admission.evict !== undefined) {
      admission.evict.destroy();
      evicted();
    }
    socket.once('close', () => slots.remove(socket));
  });
  // Before the route handler, which may end the answer at once.
  server.prependListener('request', (req, res) => {
    const socket = req.socket;
    slots.requestStarted(socket);
    res.once('close', () => slots.requestEnded(socket));
  });
}

/** A warning logged at most once per LOG_INTERVAL_MS, with how many times it happened since the last line. */
function throttledWarn(logger: Logger, msg: string, fields: Record<string, unknown>): () => void {
  let count = 0;
  let lastLog = -Infinity;
  return () => {
    count++;
    const now = performance.now();
    if (now - lastLog < LOG_INTERVAL_MS) return;
    logger.warn({ ...fields, connections: count }, msg);
    count = 0;
    lastLog = now;
  };
}
