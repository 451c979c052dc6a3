// What --cutover reads of the ready run: its functions and every page of the queues its status.json lists.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { resolveAwsEndpoints } from '../../../src/aws/endpoints.ts';
import { createMigrateAdapters } from '../../../src/migrate/migrate-adapters.ts';

describe('runReads', () => {
  const names = Array.from({ length: 250 }, (_, i) => `q${i}`);
  const asked: string[] = [];
  let server: Server;
  let base: string;
  before(async () => {
    // status.json as the run serves it (src/operator/status/status-query.ts): a page of at most 100 queues.
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://h');
      asked.push(`${url.pathname}?${url.searchParams.toString()}`);
      const offset = Number(url.searchParams.get('offset') ?? 0);
      const limit = Math.min(100, Number(url.searchParams.get('limit') ?? 50));
      const page = names.slice(offset, offset + limit).map((name) => ({ name, inFlight: 0, buckets: [] }));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ functions: ['orders-fn'], summary: { queues: names.length }, queues: page }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/w`;
  });
  after(() => server.close());

  it('reads every page of the queues, beside the /readyz it is given', async () => {
    const ports = createMigrateAdapters('us-east-1', 'http://127.0.0.1:1', await resolveAwsEndpoints('us-east-1', 'http://127.0.0.1:1'));
    try {
      assert.deepEqual(await ports.runReads(`${base}/readyz`, new AbortController().signal), { functions: ['orders-fn'], queues: names });
    } finally {
      ports.close();
    }
    assert.deepEqual(asked, [
      '/w/status.json?sort=configured&offset=0&limit=100',
      '/w/status.json?sort=configured&offset=100&limit=100',
      '/w/status.json?sort=configured&offset=200&limit=100',
    ]);
  });
});
