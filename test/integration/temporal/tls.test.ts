// TLS, mTLS and API keys, proven against a real server. `temporal server start-dev` (CLI v1.5.1) has no TLS
// flags, so a small TLS-terminating proxy (node:tls) with a CA and server certificate made here with openssl
// sits in front of it; for API keys, an HTTP/2 gRPC proxy that refuses calls without the right
// `authorization: Bearer` header, as Temporal Cloud does. The spillover controller must read the backlog
// through each, and must not get through with the wrong trust, no client certificate, or the wrong key.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { Client, Connection } from '@temporalio/client';
import { pino } from 'pino';
import type { TemporalConfig, TemporalTlsConfig } from '../../../src/temporal/options.ts';
import { runTemporalSpillover } from '../../../src/temporal/spillover.ts';
import type { WorkerInvocationPayload } from '../../../src/temporal/worker-invoker.ts';
import {
  makeTestPki,
  startApiKeyProxy,
  startTemporalDevServer,
  startTlsProxy,
  type TemporalDevServer,
  type TestPki,
  type TestProxy,
} from '../../support/temporal.ts';

const TASK_QUEUE = 'tls-backlog';
const API_KEY = 'test-api-key-7f3a';

let server: TemporalDevServer;
let pki: TestPki;
let dir: string;
const proxies: TestProxy[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'workerless-tls-'));
  [server, pki] = await Promise.all([startTemporalDevServer(), makeTestPki(dir)]);
  // A workflow nobody serves: a backlog the controller can only see if it got through.
  const connection = await Connection.connect({ address: server.address });
  await new Client({ connection }).workflow.start('orderWorkflow', {
    taskQueue: TASK_QUEUE,
    workflowId: `tls-${Date.now()}`,
    args: [{ orderId: 'x' }],
  });
  await connection.close();
});

after(async () => {
  for (const p of proxies) await p.stop();
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function tlsConfig(tls: Partial<TemporalTlsConfig>): TemporalTlsConfig {
  return { certPath: undefined, keyPath: undefined, caPath: undefined, serverName: undefined, ...tls };
}

/** Runs the controller for `ms` with a recording invoker; returns what it invoked and logged. */
async function spillFor(address: string, tls: TemporalTlsConfig | undefined, apiKey: string | undefined, ms = 4_000) {
  const config: TemporalConfig = {
    address,
    namespace: server.namespace,
    taskQueues: [TASK_QUEUE],
    functionName: 'temporal-worker',
    maxWorkers: 1,
    maxWorkersTotal: undefined,
    workerLifetimeMs: 60_000,
    workerStartTimeoutMs: 60_000,
    pollIntervalMs: 500,
    backlogThreshold: 0,
    maxBacklogAgeMs: undefined,
    coolOffMs: 0,
    tasksPerWorker: 10,
    spillPriority: undefined,
    fairness: false,
    versionFunctions: {},
    workerSet: undefined,
    tls,
    apiKey,
  };
  const invoked: WorkerInvocationPayload[] = [];
  const logs: Array<Record<string, unknown>> = [];
  const controller = new AbortController();
  const lambda = new LambdaClient({ region: 'us-east-1' });
  const running = runTemporalSpillover(
    config,
    {
      logger: pino({ level: 'info' }, { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) }),
      metrics: { record: () => undefined },
      lambda,
      invoker: { invoke: async (_fn, payload) => (invoked.push(payload), { kind: 'invoked', requestId: `req-${invoked.length}` }) },
    },
    controller.signal,
  );
  await sleep(ms);
  controller.abort();
  await running;
  lambda.destroy();
  const failures = logs.filter(
    (l) => l['msg'] === 'could not connect to temporal; retrying' || l['msg'] === 'could not read task queue statistics; retrying',
  );
  return { invoked, logs, failures };
}

describe('Temporal connection security, proven', { timeout: 90_000 }, () => {
  it('server TLS: reads the backlog through TLS with the test CA, and refuses a server it does not trust', async () => {
    const proxy = await startTlsProxy({ upstream: server.address, certPath: pki.serverCertPath, keyPath: pki.serverKeyPath });
    proxies.push(proxy);
    const ok = await spillFor(proxy.address, tlsConfig({ caPath: pki.caPath }), undefined);
    assert.equal(ok.invoked.length, 1, `invoked through TLS; logs ${JSON.stringify(ok.failures.slice(0, 2))}`);
    assert.ok(proxy.handshakes.ok >= 1);

    const untrusted = await spillFor(proxy.address, tlsConfig({ caPath: pki.otherCaPath }), undefined, 2_500);
    assert.equal(untrusted.invoked.length, 0);
    assert.ok(!untrusted.logs.some((l) => l['msg'] === 'connected to temporal'), 'never connected');
    console.log(`# tls: ${proxy.handshakes.ok} handshakes ok, ${proxy.handshakes.failed} refused (untrusted CA)`);
  });

  it('mTLS: gets through with the client certificate and is refused without one', async () => {
    const proxy = await startTlsProxy({
      upstream: server.address,
      certPath: pki.serverCertPath,
      keyPath: pki.serverKeyPath,
      clientCaPath: pki.caPath,
    });
    proxies.push(proxy);
    const ok = await spillFor(
      proxy.address,
      tlsConfig({ caPath: pki.caPath, certPath: pki.clientCertPath, keyPath: pki.clientKeyPath }),
      undefined,
    );
    assert.equal(ok.invoked.length, 1, `invoked through mTLS; logs ${JSON.stringify(ok.failures.slice(0, 2))}`);
    const before = proxy.handshakes.failed;
    const noCert = await spillFor(proxy.address, tlsConfig({ caPath: pki.caPath }), undefined, 2_500);
    assert.equal(noCert.invoked.length, 0);
    assert.ok(!noCert.logs.some((l) => l['msg'] === 'connected to temporal') || noCert.failures.length >= 1, 'never read the queue');
    assert.ok(proxy.handshakes.failed > before, 'the proxy refused the handshake without a client certificate');
  });

  it('API key: sends authorization: Bearer <key> and temporal-namespace on every call; a wrong key gets nothing', async () => {
    const proxy = await startApiKeyProxy({
      upstream: server.address,
      certPath: pki.serverCertPath,
      keyPath: pki.serverKeyPath,
      apiKey: API_KEY,
    });
    proxies.push(proxy);
    const ok = await spillFor(proxy.address, tlsConfig({ caPath: pki.caPath }), API_KEY);
    assert.equal(ok.invoked.length, 1, `invoked through the API-key proxy; logs ${JSON.stringify(ok.failures.slice(0, 2))}`);
    const describes = proxy.requests.filter((r) => r.path.endsWith('/DescribeTaskQueue'));
    assert.ok(describes.length >= 2);
    assert.ok(describes.every((r) => r.authorization === `Bearer ${API_KEY}` && r.namespace === server.namespace));

    proxy.requests.length = 0;
    const wrong = await spillFor(proxy.address, tlsConfig({ caPath: pki.caPath }), 'not-the-key', 2_500);
    assert.equal(wrong.invoked.length, 0);
    assert.ok(wrong.failures.length >= 1);
    assert.doesNotMatch(JSON.stringify(wrong.logs), /not-the-key/, 'the key never reaches the logs');
    console.log(
      `# api key: ${describes.length} DescribeTaskQueue calls carried the key; wrong key refused (${wrong.failures.length} logged failures)`,
    );
  });
});
