// Both clients (the lean transport and the SDK's clients with src/aws/sdk-agents.ts), built as a run builds them
// (createAwsAdapters), on real sockets: through a CONNECT proxy for https (the proxy counts its tunnels and sees
// the credentials), to the proxy in absolute form for http, straight where NO_PROXY says so, against a private CA
// given as the CA bundle; and each TLS or proxy fault classified alike by both, with the same words.
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createAwsAdapters, type AwsClientKind } from '../../../src/aws/adapters.ts';
import type { CaBundle } from '../../../src/aws/ca-bundle.ts';
import { resolveAwsEndpoints, type AwsEndpoints } from '../../../src/aws/endpoints.ts';
import { AwsNetwork } from '../../../src/aws/network.ts';
import { readProxyEnv } from '../../../src/aws/proxy-env.ts';
import { callErrorOf, type ClassifiedError } from '../../../src/core/errors.ts';
import { startConnectProxy, type ConnectProxy } from '../../support/connect-proxy.ts';
import { createTestCa, type KeyAndCert, type TestCa } from '../../support/tls-ca.ts';

const KINDS: readonly AwsClientKind[] = ['lean', 'sdk'];
const CREDENTIALS = { user: 'proxy user', password: 'p@ss:word' };

/** A server that answers every call as SQS answers GetQueueUrl. */
async function sqsLike(cert?: Pick<KeyAndCert, 'key' | 'cert'>): Promise<{ port: number; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const handler: http.RequestListener = (req, res) => {
    requests.push(`${req.method} ${req.url} host=${req.headers.host}`);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      res.end(JSON.stringify({ QueueUrl: 'https://localhost/000000000000/q' }));
    });
  };
  const server = cert ? https.createServer({ key: cert.key, cert: cert.cert }, handler) : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** One GetQueueUrl through `kind`'s client, with `env`'s proxies and `ca`: the queue URL, or the classified error. */
async function getQueueUrl(
  kind: AwsClientKind,
  endpoint: string,
  env: NodeJS.ProcessEnv,
  ca: CaBundle | undefined,
): Promise<{ url: string } | { error: ClassifiedError }> {
  const resolved = await resolveAwsEndpoints('us-east-1', endpoint);
  const endpoints: AwsEndpoints = { ...resolved, network: new AwsNetwork(readProxyEnv(env).proxies, ca) };
  const aws = await createAwsAdapters(kind, { region: 'us-east-1', endpointUrl: endpoint }, endpoints, { maxSockets: 4 });
  try {
    return { url: await aws.sqs.queueUrl('q', AbortSignal.timeout(8_000)) };
  } catch (err) {
    return { error: callErrorOf(err) };
  } finally {
    aws.destroy();
  }
}

describe('both clients through a proxy, with a private CA', () => {
  const saved = { ...process.env };
  let ca: TestCa;
  let bundle: CaBundle;
  let server: Awaited<ReturnType<typeof sqsLike>>;
  let plain: Awaited<ReturnType<typeof sqsLike>>;
  let proxy: ConnectProxy;
  before(async () => {
    Object.assign(process.env, {
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_CONFIG_FILE: '/dev/null',
      AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
      AWS_EC2_METADATA_DISABLED: 'true',
    });
    ca = createTestCa();
    bundle = { path: ca.bundlePath, from: 'AWS_CA_BUNDLE', pem: ca.certPem };
    server = await sqsLike(ca.serverCert());
    plain = await sqsLike();
    proxy = await startConnectProxy({ credentials: CREDENTIALS });
  });
  after(async () => {
    process.env = saved;
    await Promise.all([server.close(), plain.close(), proxy.close()]);
    ca.remove();
  });

  for (const kind of KINDS) {
    it(`${kind}: an https endpoint through a CONNECT tunnel, with the credentials, trusting the bundle`, async () => {
      const before = proxy.tunnels.length;
      const env = { HTTPS_PROXY: proxy.url(CREDENTIALS) };
      assert.deepEqual(await getQueueUrl(kind, `https://localhost:${server.port}`, env, bundle), {
        url: 'https://localhost/000000000000/q',
      });
      assert.deepEqual(proxy.tunnels.slice(before), [`localhost:${server.port}`]);
      assert.equal(proxy.authorizations.at(-1), `Basic ${Buffer.from(`${CREDENTIALS.user}:${CREDENTIALS.password}`).toString('base64')}`);
    });

    it(`${kind}: an http endpoint through the proxy in absolute form (HTTP_PROXY)`, async () => {
      const before = proxy.forwarded.length;
      const env = { HTTP_PROXY: proxy.url(CREDENTIALS) };
      assert.deepEqual(await getQueueUrl(kind, `http://127.0.0.1:${plain.port}`, env, undefined), {
        url: 'https://localhost/000000000000/q',
      });
      assert.deepEqual(proxy.forwarded.slice(before), [`http://127.0.0.1:${plain.port}/`]);
      assert.equal(plain.requests.at(-1), `POST / host=127.0.0.1:${plain.port}`);
    });

    it(`${kind}: straight to the endpoint when NO_PROXY names it`, async () => {
      const tunnels = proxy.tunnels.length;
      const forwarded = proxy.forwarded.length;
      const env = { HTTPS_PROXY: proxy.url(CREDENTIALS), HTTP_PROXY: proxy.url(CREDENTIALS), NO_PROXY: 'localhost,127.0.0.1' };
      assert.ok('url' in (await getQueueUrl(kind, `https://localhost:${server.port}`, env, bundle)));
      assert.ok('url' in (await getQueueUrl(kind, `http://127.0.0.1:${plain.port}`, env, undefined)));
      assert.equal(proxy.tunnels.length, tunnels);
      assert.equal(proxy.forwarded.length, forwarded);
    });
  }

  /** The fault each client reports for one setup: the same words from both, and nothing sent. */
  async function fault(endpoint: string, env: NodeJS.ProcessEnv, ca: CaBundle | undefined): Promise<string> {
    const faults: (string | undefined)[] = [];
    for (const kind of KINDS) {
      const outcome = await getQueueUrl(kind, endpoint, env, ca);
      assert.ok('error' in outcome, `${kind}: ${JSON.stringify(outcome)}`);
      assert.equal(outcome.error.notSent, true, kind);
      faults.push(outcome.error.fault);
    }
    assert.equal(faults[0], faults[1], 'the lean client and the SDK tell the same fault');
    return faults[0] ?? '(no fault)';
  }

  it('an untrusted certificate, without the bundle and with another CA', async () => {
    const url = `https://localhost:${server.port}`;
    assert.match(
      await fault(url, {}, undefined),
      /^its certificate is not trusted by the default CAs \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY): .*; for a private CA set AWS_CA_BUNDLE or ca_bundle in the profile\)$/,
    );
    const other = createTestCa('another CA');
    try {
      const line = await fault(url, {}, { path: other.bundlePath, from: 'AWS_CA_BUNDLE', pem: other.certPem });
      assert.match(
        line,
        new RegExp(`^its certificate is not trusted by the CA bundle ${other.bundlePath} \\(AWS_CA_BUNDLE\\) \\(\\w+: [^;]*\\)$`),
      );
    } finally {
      other.remove();
    }
  });

  it('a certificate for another host, and an expired one, also through the proxy', async () => {
    const wrong = await sqsLike(ca.serverCert({ names: ['other.example'], ips: [] }));
    const expired = await sqsLike(ca.serverCert({ expired: true }));
    try {
      const mismatch = await fault(`https://localhost:${wrong.port}`, {}, bundle);
      assert.equal(
        mismatch,
        "its certificate is not for this host (ERR_TLS_CERT_ALTNAME_INVALID: Host: localhost. is not in the cert's altnames: DNS:other.example)",
      );
      assert.equal(await fault(`https://localhost:${wrong.port}`, { HTTPS_PROXY: proxy.url(CREDENTIALS) }, bundle), mismatch);
      assert.match(
        await fault(`https://localhost:${expired.port}`, {}, bundle),
        /^its certificate has expired \(CERT_HAS_EXPIRED; or this machine's clock is wrong\)$/,
      );
    } finally {
      await Promise.all([wrong.close(), expired.close()]);
    }
  });

  it('a proxy that wants credentials (407), refuses (403), closes, or cannot be reached', async () => {
    const url = `https://localhost:${server.port}`;
    const name = `http://127.0.0.1:${proxy.port} (HTTPS_PROXY)`;
    assert.equal(
      await fault(url, { HTTPS_PROXY: proxy.url() }, bundle),
      `the proxy ${name} refused the tunnel to localhost:${server.port}: 407 Proxy Authentication Required; the proxy wants credentials: give them in HTTPS_PROXY as http://user:password@host:port`,
    );
    assert.equal(
      await fault(url, { HTTPS_PROXY: proxy.url({ user: 'x', password: 'y' }) }, bundle),
      `the proxy ${name} refused the tunnel to localhost:${server.port}: 407 Proxy Authentication Required; check the user and password in HTTPS_PROXY`,
    );
    proxy.mode = 'refuse';
    try {
      assert.equal(
        await fault(url, { HTTPS_PROXY: proxy.url(CREDENTIALS) }, bundle),
        `the proxy ${name} refused the tunnel to localhost:${server.port}: 403 Forbidden; the proxy does not allow it: check its rules, or NO_PROXY`,
      );
      proxy.mode = 'close';
      assert.equal(
        await fault(url, { HTTPS_PROXY: proxy.url(CREDENTIALS) }, bundle),
        `the proxy ${name} closed the connection before answering the CONNECT to localhost:${server.port}`,
      );
    } finally {
      proxy.mode = 'open';
    }
    assert.equal(
      await fault(url, { HTTPS_PROXY: 'http://127.0.0.1:1' }, bundle),
      'cannot connect to the proxy http://127.0.0.1:1 (HTTPS_PROXY): ECONNREFUSED',
    );
  });
});
