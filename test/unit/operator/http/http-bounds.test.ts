// Issue 20, item 8: the HTTP server bounds its clients. The server's bounds are proven (the file-descriptor budget
// that sizes them: test/unit/daemon/socket-budget.test.ts) on a real node:http server over loopback sockets (timings are Node's own timers, not faked).
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { startHttpServer, type HttpRoutes } from '../../../../src/operator/http/server.ts';
import { recordingLogger, silentLogger, until } from '../../../support/factories.ts';

const routes = (overrides: Partial<HttpRoutes> = {}): HttpRoutes => ({
  liveness: () => ({ ok: true, reasons: [] }),
  readiness: () => ({ ok: true, reasons: [] }),
  metrics: async () => ({ contentType: 'text/plain', body: 'x 1\n' }),
  status: () => ({}),
  statusPage: '<html></html>',
  ...overrides,
});

/** Opens a TCP connection; resolves once connected, with the time the server closed it (or undefined while open). */
async function open(url: string): Promise<{ socket: Socket; closed: Promise<number>; received: () => string }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  socket.on('error', () => {});
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now())));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, closed, received: () => received };
}

describe('the HTTP server bounds its clients', { concurrency: true, timeout: 30_000 }, () => {
  it('closes a connection that sends nothing within 5 s plus the 1 s check (Node 24 alone: 60 to 90 s)', async () => {
    const server = await startHttpServer({ host: '127.0.0.1', port: 0, logger: silentLogger, maxConnections: 8, routes: routes() });
    try {
      const t0 = performance.now();
      const c = await open(server.url);
      const closedAfter = (await c.closed) - t0;
      assert.ok(closedAfter >= 4_500 && closedAfter < 7_500, `closed after ${Math.round(closedAfter)} ms`);
      assert.match(c.received(), /^HTTP\/1.1 408 /);
    } finally {
      await server.close();
    }
  });

  it('closes a connection that sends its headers a byte a second (the headers timeout counts from the first byte)', async () => {
    const server = await startHttpServer({ host: '127.0.0.1', port: 0, logger: silentLogger, maxConnections: 8, routes: routes() });
    try {
      const t0 = performance.now();
      const c = await open(server.url);
      const request = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + 'a'.repeat(100);
      let i = 0;
      const drip = setInterval(() => c.socket.write(request[i++ % request.length]!), 1_000);
      const closedAfter = (await c.closed) - t0;
      clearInterval(drip);
      // First byte at 1 s, 5 s for the headers, then the next 1 s check.
      assert.ok(closedAfter < 8_500, `closed after ${Math.round(closedAfter)} ms`);
    } finally {
      await server.close();
    }
  });

  it('closes a connection whose answer never comes after 10 s without a byte either way', async () => {
    const server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      logger: silentLogger,
      maxConnections: 8,
      routes: routes({ metrics: () => new Promise(() => {}) }),
    });
    try {
      const t0 = performance.now();
      const c = await open(server.url);
      c.socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      const closedAfter = (await c.closed) - t0;
      assert.ok(closedAfter >= 9_500 && closedAfter < 12_000, `closed after ${Math.round(closedAfter)} ms`);
    } finally {
      await server.close();
    }
  });

  it('when full of silent connections, a newcomer takes the place of the oldest, which is closed at once, and a probe is answered', async () => {
    const { logger, lines } = recordingLogger();
    const server = await startHttpServer({ host: '127.0.0.1', port: 0, logger, maxConnections: 3, routes: routes() });
    const held = [await open(server.url), await open(server.url), await open(server.url)];
    try {
      const t0 = performance.now();
      held.push(await open(server.url));
      const closedAfter = (await held[0]!.closed) - t0;
      assert.ok(closedAfter < 1_000, `the oldest closed after ${Math.round(closedAfter)} ms`);
      assert.equal(held[0]!.received(), '', 'closed without an answer');
      const res = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      assert.equal(res.status, 200, 'a probe while every place was held by a silent connection');
      await held[1]!.closed;
      const closed = lines.filter((l) => l.msg === 'HTTP connections closed for a newcomer: they had sent no complete request in time');
      assert.equal(closed.length, 1, 'one line for the burst');
      assert.equal(closed[0]?.['maxConnections'], 3);
    } finally {
      for (const c of held) c.socket.destroy();
      await server.close();
    }
  });

  it('refuses a newcomer at once, and logs it once, only when every place has a request in flight', async () => {
    const { logger, lines } = recordingLogger();
    let asked = 0;
    const server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      logger,
      maxConnections: 3,
      routes: routes({ metrics: () => (asked++, new Promise(() => {})) }),
    });
    const busy = [await open(server.url), await open(server.url), await open(server.url)];
    try {
      for (const c of busy) c.socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await until(() => asked === 3, 5_000, 'the three requests');
      const t0 = performance.now();
      const over = [await open(server.url), await open(server.url)];
      for (const c of over) {
        const closedAfter = (await c.closed) - t0;
        assert.ok(closedAfter < 1_000, `over the cap, closed after ${Math.round(closedAfter)} ms`);
        assert.equal(c.received(), '', 'refused without an answer');
      }
      const refused = lines.filter((l) => l.msg === 'HTTP connections refused: every place has a request in flight');
      assert.equal(refused.length, 1, 'one line for the burst');
      assert.equal(refused[0]?.['maxConnections'], 3);
      assert.equal(busy.filter((c) => c.socket.destroyed).length, 0, 'no request in flight was cut');
    } finally {
      for (const c of busy) c.socket.destroy();
      await server.close();
    }
  });
});
