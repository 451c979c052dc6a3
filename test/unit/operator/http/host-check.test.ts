// The HTTP server's Host check (src/operator/http/host-check.ts, the guard against DNS rebinding) and the security
// headers on every answer (security-headers.ts), on a real server over real sockets.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { hostChecker } from '../../../../src/operator/http/host-check.ts';
import { startHttpServer, type HttpRoutes } from '../../../../src/operator/http/server.ts';
import { STATUS_PAGE_CSP } from '../../../../src/operator/http/status-page.ts';
import { recordingLogger, silentLogger } from '../../../support/factories.ts';

describe('hostChecker', () => {
  const check = hostChecker({ bindHost: '0.0.0.0', allowedHosts: [] });

  it('answers IP addresses with any port: the kubelet, Prometheus pod scrapes, ECS and load-balancer health checks', () => {
    for (const host of ['10.1.2.3:8080', '10.1.2.3', '127.0.0.1:9', '[::1]:8080', '[fd00::1]', '[::ffff:10.0.0.1]:80', '0.0.0.0:8080']) {
      assert.equal(check(host), true, host);
    }
  });

  it('answers localhost and names under .localhost, in any case, with or without a trailing dot', () => {
    for (const host of ['localhost', 'localhost:8080', 'LOCALHOST:1', 'localhost.:8080', 'status.localhost:8080']) {
      assert.equal(check(host), true, host);
    }
  });

  it('refuses any other name, a missing or empty Host, and a bracketed name', () => {
    for (const host of [
      undefined,
      '',
      ' ',
      ':8080',
      'evil.example:8080',
      'rebind.127.0.0.1.nip.io',
      'localhost.evil.example',
      '[evil]:80',
      '[::1',
    ]) {
      assert.equal(check(host), false, String(host));
    }
  });

  it('answers the --http-host name and the --http-allowed-hosts names: exact, .domain for it and its subdomains, * for any', () => {
    const named = hostChecker({ bindHost: 'workerless.internal', allowedHosts: ['Prom.Example', '.svc.cluster.local'] });
    for (const host of [
      'workerless.internal:8080',
      'prom.example',
      'PROM.EXAMPLE.:80',
      'svc.cluster.local',
      'wl.ns.svc.cluster.local:8080',
    ]) {
      assert.equal(named(host), true, host);
    }
    for (const host of ['other.example', 'xprom.example', 'evilsvc.cluster.local', 'internal']) assert.equal(named(host), false, host);
    const any = hostChecker({ bindHost: '127.0.0.1', allowedHosts: ['*'] });
    assert.equal(any('whatever.example:1'), true);
    assert.equal(any(undefined), false, 'no Host at all is still refused');
  });
});

const routes: HttpRoutes = {
  liveness: () => ({ ok: true, reasons: [] }),
  readiness: () => ({ ok: false, reasons: ['starting'] }),
  metrics: async () => ({ contentType: 'text/plain; version=0.0.4', body: 'x 1\n' }),
  status: () => ({ state: 'running' }),
  statusPage: '<!doctype html><title>page</title>',
};

/** A raw GET with exactly this Host header (fetch would set its own); status, headers and body. */
function get(url: string, path: string, host: string | undefined, method = 'GET') {
  const { hostname, port } = new URL(url);
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const req = request({ host: hostname, port, path, method, setHost: false, headers: host === undefined ? {} : { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const COMMON_HEADERS = {
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'cross-origin-resource-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

describe('the HTTP server checks Host and sends security headers', () => {
  it('refuses a foreign Host with 421 and no detail, on every path, and logs the first refusal with the Host', async () => {
    const { logger, lines } = recordingLogger();
    const server = await startHttpServer({ host: '127.0.0.1', port: 0, logger, maxConnections: 8, routes });
    try {
      for (const path of ['/', '/status.json', '/metrics', '/healthz', '/readyz', '/nope']) {
        const res = await get(server.url, path, 'rebind.attacker.example:8080');
        assert.equal(res.status, 421, path);
        assert.equal(res.body, 'misdirected request\n');
        assert.equal(res.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'");
      }
      // No Host: Node itself answers HTTP/1.1 with 400 (requireHostHeader); the check refuses what is left (HTTP/1.0).
      assert.equal((await get(server.url, '/status.json', undefined)).status, 400, 'no Host');
      const refused = lines.filter((l) => l.msg.startsWith('HTTP requests refused'));
      assert.equal(refused.length, 1, 'one line a minute');
      assert.equal(refused[0]?.['host'], 'rebind.attacker.example:8080');
      assert.equal(refused[0]?.['level'], 40);
    } finally {
      await server.close();
    }
  });

  it('answers an allowed name, and every answer carries the headers; the page its own CSP with frame-ancestors', async () => {
    const server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      logger: silentLogger,
      maxConnections: 8,
      routes,
      allowedHosts: ['wl-workerless.monitoring.svc'],
    });
    try {
      const page = await get(server.url, '/', 'wl-workerless.monitoring.svc:8080');
      assert.equal(page.status, 200);
      assert.equal(page.headers['content-security-policy'], STATUS_PAGE_CSP);
      assert.match(STATUS_PAGE_CSP, /(^|; )frame-ancestors 'none'(;|$)/);
      assert.match(STATUS_PAGE_CSP, /^default-src 'none'; script-src 'sha256-[^']+'; style-src 'sha256-[^']+'; connect-src 'self'/);
      for (const [name, value] of Object.entries(COMMON_HEADERS)) assert.equal(page.headers[name], value, name);
      for (const [path, status] of [
        ['/status.json', 200],
        ['/metrics', 200],
        ['/healthz', 200],
        ['/readyz', 503],
        ['/nope', 404],
      ] as const) {
        const res = await get(server.url, path, '127.0.0.1');
        assert.equal(res.status, status, path);
        for (const [name, value] of Object.entries(COMMON_HEADERS)) assert.equal(res.headers[name], value, `${path} ${name}`);
        assert.equal(res.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'", path);
      }
      const post = await get(server.url, '/status.json', 'localhost', 'POST');
      assert.equal(post.status, 405);
      assert.equal(post.headers['allow'], 'GET, HEAD');
      assert.equal(post.headers['x-content-type-options'], 'nosniff');
    } finally {
      await server.close();
    }
  });
});
