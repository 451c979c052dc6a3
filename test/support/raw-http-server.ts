// A TCP server that speaks just enough HTTP/1.1 for the lean pool's tests (test/unit/aws/http1-pool*.test.ts): it
// reads each request whole (its head and a Content-Length body) and answers it with `answer`, and can close a
// connection idle for `idleMs` after its last answer without a Keep-Alive hint, as some servers and proxies do.
import net from 'node:net';

export class RawServer {
  readonly server: net.Server;
  connections = 0;
  requests = 0;
  readonly sockets = new Set<net.Socket>();
  /** Answers the `n`-th request (counted over every connection). Default: 200 "ok". */
  answer: (socket: net.Socket, n: number) => void = (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
  /** Closes a connection idle this long after its last answer (null: never). */
  idleMs: number | null = null;

  constructor() {
    this.server = net.createServer((socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.on('error', () => {});
      let idle: NodeJS.Timeout | undefined;
      socket.on('close', () => {
        clearTimeout(idle);
        this.sockets.delete(socket);
      });
      let read = Buffer.alloc(0);
      socket.on('data', (chunk) => {
        clearTimeout(idle);
        read = Buffer.concat([read, chunk]);
        for (;;) {
          const head = read.indexOf('\r\n\r\n');
          if (head < 0) return;
          const length = Number(/content-length: *(\d+)/i.exec(read.toString('latin1', 0, head))?.[1] ?? 0);
          if (read.length < head + 4 + length) return;
          read = read.subarray(head + 4 + length);
          this.answer(socket, ++this.requests);
          if (this.idleMs !== null) idle = setTimeout(() => socket.destroy(), this.idleMs);
        }
      });
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
