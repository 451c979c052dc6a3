// The lean transport's sockets (src/aws/http1-pool.ts) on real sockets: the same raw answers read by node:http (what
// the SDK's NodeHttpHandler uses) and by Http1Pool give the same status, body and fields, or the same error code;
// keep-alive reuse, the server's Keep-Alive hint, the per-origin socket cap with calls waiting in order, aborts,
// refused connects marked as not sent, a server that sends its head forever, and TLS against a real TLS server.
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Http1Pool, type Http1Result, type Http1Target } from '../../../src/aws/http1-pool.ts';
import { RawServer } from '../../support/raw-http-server.ts';

const NOT_SENT = Symbol.for('workerless.notSent');
const abortError = (signal: AbortSignal) => Object.assign(new Error('Request aborted', { cause: signal.reason }), { name: 'AbortError' });
const target = (port: number, https = false): Http1Target => ({ host: `localhost:${port}`, hostname: 'localhost', port, https });

type Outcome = { status: number; body: string; requestId: unknown } | { code: unknown };

function viaNodeHttp(port: number): Promise<Outcome> {
  const agent = new http.Agent({ keepAlive: true });
  return new Promise<Outcome>((resolve) => {
    const req = http.request({ agent, host: '127.0.0.1', port, method: 'POST', path: '/' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), requestId: res.headers['x-amzn-requestid'] }),
      );
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ code: err.code }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ code: err.code }));
    req.end('{}');
  }).finally(() => agent.destroy());
}

async function viaPool(port: number): Promise<Outcome> {
  const pool = new Http1Pool(4);
  try {
    const a = await pool.post(target(port), '/', { 'content-length': '2' }, '{}', undefined, 1 << 20, abortError);
    return { status: a.status, body: a.body.toString(), requestId: a.headers['x-amzn-requestid'] };
  } catch (err) {
    return { code: (err as NodeJS.ErrnoException).code };
  } finally {
    pool.destroy();
  }
}

/** Writes `parts` with a pause between them, then ends the connection if `end`. */
const inParts =
  (parts: readonly string[], end = false) =>
  (socket: net.Socket) => {
    void (async () => {
      for (const p of parts) {
        socket.write(p);
        await sleep(5);
      }
      if (end) socket.end();
    })();
  };

describe('Http1Pool reads what node:http reads', () => {
  const server = new RawServer();
  let port = 0;
  before(async () => (port = await server.listen()));
  after(() => server.close());

  const cases: [string, (socket: net.Socket) => void][] = [
    ['Content-Length', inParts(['HTTP/1.1 200 OK\r\nContent-Length: 5\r\nx-amzn-RequestId: r1\r\n\r\nhello'])],
    ['a byte at a time', inParts([...'HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc'])],
    [
      'chunked, with extensions and trailers',
      inParts(['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;a=b\r\nabc\r\n', '2\r\nde\r\n0\r\nT: 1\r\n\r\n']),
    ],
    ['framed by the end of the connection', inParts(['HTTP/1.1 200 OK\r\n\r\nuntil ', 'the end'], true)],
    ['100 Continue first', inParts(['HTTP/1.1 100 Continue\r\n\r\n', 'HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok'])],
    ['204', inParts(['HTTP/1.1 204 No Content\r\n\r\n'])],
    ['HTTP/1.0', inParts(['HTTP/1.0 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops'])],
    ['closed before any answer', (s) => s.end()],
    ['closed in the middle of the body', inParts(['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'], true)],
    ['a head over 16 KiB', inParts([`HTTP/1.1 200 OK\r\nX: ${'a'.repeat(17_000)}\r\n\r\n`])],
    ['not HTTP', inParts(['SSH-2.0-OpenSSH_9.6\r\n\r\n'])],
    ['a bad chunk size', inParts(['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n'])],
  ];
  for (const [name, answer] of cases)
    it(name, async () => {
      server.answer = answer;
      const expected = await viaNodeHttp(port);
      const actual = await viaPool(port);
      assert.deepEqual(actual, expected);
    });
});

describe('Http1Pool sockets', () => {
  const server = new RawServer();
  let port = 0;
  before(async () => (port = await server.listen()));
  after(() => server.close());
  const post = (pool: Http1Pool, signal?: AbortSignal, t = target(port)) =>
    pool.post(t, '/', { 'content-length': '2' }, '{}', signal, 1024, abortError);

  it('reuses a kept connection, and opens a new one when the server has closed it', async () => {
    const pool = new Http1Pool(4);
    try {
      server.connections = 0;
      server.answer = (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      await post(pool);
      await post(pool);
      assert.equal(server.connections, 1);
      for (const s of server.sockets) s.end();
      await sleep(50);
      assert.equal((await post(pool)).status, 200);
      assert.equal(server.connections, 2);
      // Connection: close: not reused (the first of these is answered on the kept connection, which then closes).
      server.answer = (s) => s.write('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok');
      await post(pool);
      await post(pool);
      assert.equal(server.connections, 3);
    } finally {
      pool.destroy();
    }
  });

  it('publishes each request on workerless:http1:request:start, as node:http does on http.client.request.start', async () => {
    const pool = new Http1Pool(2);
    const seen: unknown[] = [];
    const listener = (message: unknown) => seen.push(message);
    subscribe('workerless:http1:request:start', listener);
    try {
      server.answer = (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      await pool.post(target(port), '/q', { 'x-amz-target': 'AmazonSQS.ReceiveMessage' }, '', undefined, 1024, abortError);
      assert.deepEqual(seen, [{ method: 'POST', path: '/q', headers: { 'x-amz-target': 'AmazonSQS.ReceiveMessage' } }]);
    } finally {
      unsubscribe('workerless:http1:request:start', listener);
      pool.destroy();
    }
  });

  it("closes a free connection a second before the server's Keep-Alive timeout, as node:http's Agent does", async () => {
    const pool = new Http1Pool(4);
    try {
      server.answer = (s) => s.write('HTTP/1.1 200 OK\r\nKeep-Alive: timeout=2\r\nContent-Length: 2\r\n\r\nok');
      await post(pool);
      assert.equal(server.sockets.size, 1);
      await sleep(1_500);
      assert.equal(server.sockets.size, 0, 'the free socket was not closed');
    } finally {
      pool.destroy();
    }
  });

  it('holds calls over the socket cap in order until a socket is free; one aborted while waiting fails as not sent', async () => {
    const pool = new Http1Pool(2);
    const held: net.Socket[] = [];
    try {
      server.connections = 0;
      server.answer = (s, n) => {
        held.push(s);
        void n;
      };
      const calls = [post(pool), post(pool)];
      const aborter = new AbortController();
      const queued = post(pool, aborter.signal);
      const last = post(pool);
      await sleep(100);
      assert.equal(server.connections, 2);
      aborter.abort();
      const err = (await queued.catch((e: unknown) => e)) as Error & Record<symbol, unknown>;
      assert.equal(err.name, 'AbortError');
      assert.equal(err[NOT_SENT], true);
      // Whichever of the two connected first: its call ends, and the waiting one is sent on its socket.
      held.shift()!.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na');
      await Promise.race(calls);
      await sleep(50);
      assert.equal(held.length, 2, 'the waiting call was not sent on the freed socket');
      for (const s of held.splice(0)) s.write('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb');
      assert.equal((await Promise.all([...calls, last])).length, 3);
      assert.equal(server.connections, 2);
    } finally {
      pool.destroy();
    }
  });

  it('destroy() ends the calls in flight and fails the waiting ones as not sent, connecting nothing more', async () => {
    const pool = new Http1Pool(1);
    server.connections = 0;
    server.answer = () => {};
    const open = post(pool).catch((e: unknown) => e);
    const waiting = post(pool).catch((e: unknown) => e);
    await sleep(50);
    pool.destroy();
    assert.equal(((await open) as NodeJS.ErrnoException).code, 'ECONNRESET');
    const err = (await waiting) as Error & Record<symbol, unknown>;
    assert.match(err.message, /closed before this call was sent/);
    assert.equal(err[NOT_SENT], true);
    await sleep(50);
    assert.equal(server.connections, 1);
  });

  it('an abort while the answer is awaited ends the call and its connection', async () => {
    const pool = new Http1Pool(2);
    try {
      server.answer = () => {};
      const aborter = new AbortController();
      const call = post(pool, aborter.signal);
      await sleep(50);
      assert.equal(server.sockets.size, 1);
      aborter.abort(new DOMException('deadline', 'TimeoutError'));
      const err = (await call.catch((e: unknown) => e)) as Error & Record<symbol, unknown>;
      assert.equal(err.name, 'AbortError');
      assert.equal((err.cause as Error).name, 'TimeoutError');
      assert.equal(err[NOT_SENT], undefined, 'the request was sent');
      await sleep(50);
      assert.equal(server.sockets.size, 0);
    } finally {
      pool.destroy();
    }
  });

  it('a refused connect fails with ECONNREFUSED, marked as not sent', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const free = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const pool = new Http1Pool(2);
    try {
      const err = (await post(pool, undefined, { host: `127.0.0.1:${free}`, hostname: '127.0.0.1', port: free, https: false }).catch(
        (e: unknown) => e,
      )) as NodeJS.ErrnoException & Record<symbol, unknown>;
      assert.equal(err.code, 'ECONNREFUSED');
      assert.equal(err[NOT_SENT], true);
    } finally {
      pool.destroy();
    }
  });

  it('a server that sends its head forever is cut off after 16 KiB, holding no more', async () => {
    const pool = new Http1Pool(2);
    try {
      server.answer = (s) => {
        s.write('HTTP/1.1 200 OK\r\n');
        const timer = setInterval(() => s.write(`X-Field: ${'a'.repeat(1000)}\r\n`), 1);
        s.on('close', () => clearInterval(timer));
      };
      const err = (await post(pool).catch((e: unknown) => e)) as NodeJS.ErrnoException;
      assert.equal(err.code, 'HPE_HEADER_OVERFLOW');
    } finally {
      pool.destroy();
    }
  });

  it('bytes sent unasked to a free connection: it is closed, and the next call gets a new one', async () => {
    const pool = new Http1Pool(2);
    try {
      server.connections = 0;
      server.answer = (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
      await post(pool);
      for (const s of server.sockets) s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nno');
      await sleep(50);
      assert.equal((await post(pool)).body.toString(), 'ok');
      assert.equal(server.connections, 2);
    } finally {
      pool.destroy();
    }
  });
});

describe('Http1Pool over TLS', () => {
  let server: https.Server;
  let port = 0;
  let connections = 0;
  before(async () => {
    // A self-signed certificate for "localhost" (test/fixtures/tls, valid for a century), trusted by this test process only.
    const fixture = (name: string) => readFileSync(fileURLToPath(new URL(`../../fixtures/tls/${name}`, import.meta.url)), 'utf8');
    const cert = fixture('localhost-cert.pem');
    tls.setDefaultCACertificates([...tls.getCACertificates('default'), cert]);
    server = https.createServer({ key: fixture('localhost-key.pem'), cert }, (req, res) => {
      req.resume();
      req.on('end', () => res.end(`tls ${req.headers.host}`));
    });
    server.on('secureConnection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('verifies the server by its name, and keeps the connection', async () => {
    const pool = new Http1Pool(2);
    try {
      const call = () =>
        pool.post(target(port, true), '/', { host: `localhost:${port}`, 'content-length': '2' }, '{}', undefined, 1024, abortError);
      const answers: Http1Result[] = [await call(), await call()];
      assert.deepEqual(
        answers.map((a) => a.body.toString()),
        [`tls localhost:${port}`, `tls localhost:${port}`],
      );
      assert.equal(connections, 1);
    } finally {
      pool.destroy();
    }
  });

  it("builds one TLS context for all of an origin's sockets, and resumes the TLS session on a new one", async (t) => {
    const contexts = t.mock.method(tls, 'createSecureContext');
    const resumed: boolean[] = [];
    const onSecure = (socket: tls.TLSSocket) => resumed.push(socket.isSessionReused());
    server.on('secureConnection', onSecure);
    const pool = new Http1Pool(3);
    try {
      const call = () =>
        pool.post(target(port, true), '/', { host: `localhost:${port}`, 'content-length': '2' }, '{}', undefined, 1024, abortError);
      await call();
      await sleep(20); // the session ticket comes after the first answer (TLS 1.3)
      await Promise.all([call(), call(), call()]);
      assert.equal(resumed.length, 3, 'three sockets: the first, and two more for the calls that found none free');
      assert.deepEqual(resumed.slice(1), [true, true]);
      assert.equal(contexts.mock.callCount(), 1);
    } finally {
      server.off('secureConnection', onSecure);
      pool.destroy();
    }
  });

  it('refuses a server whose certificate does not name the host', async () => {
    const pool = new Http1Pool(2);
    try {
      const err = (await pool
        .post({ host: `127.0.0.1:${port}`, hostname: '127.0.0.1', port, https: true }, '/', {}, '{}', undefined, 1024, abortError)
        .catch((e: unknown) => e)) as NodeJS.ErrnoException & Record<symbol, unknown>;
      assert.equal(err.code, 'ERR_TLS_CERT_ALTNAME_INVALID');
      assert.equal(err[NOT_SENT], true);
    } finally {
      pool.destroy();
    }
  });
});
