import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the server saw it. */
export interface Seen {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (req: Seen, res: ServerResponse) => void;

/**
 * A local HTTP server for the lean adapters' tests: it records every request in `seen` and answers through
 * `handler`, which a test replaces to answer like SQS, Lambda or CloudWatch would (default: 200 `{}`).
 */
export class RecordingServer {
  handler: Handler = (_req, res) => res.end('{}');
  readonly seen: Seen[] = [];
  /** TCP connections accepted so far: how many sockets the client opened. */
  connections = 0;
  readonly #server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const s = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
      this.seen.push(s);
      this.handler(s, res);
    });
  });

  /** Listens on a free local port; returns its origin. */
  async listen(): Promise<URL> {
    this.#server.on('connection', () => (this.connections += 1));
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return new URL(`http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`);
  }

  close(): void {
    this.#server.closeAllConnections();
    this.#server.close();
  }
}
