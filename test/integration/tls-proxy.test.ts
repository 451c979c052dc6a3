// Issue 41, on the wire as AWS is: the real daemon (and `workerless check`) with both clients (the default lean one
// and --aws-client sdk) against HTTPS endpoints signed by a private CA made at test time (test/support/tls-ca.ts):
// ElasticMQ behind a TLS terminator for SQS, the test Lambda endpoint behind another, reached through a CONNECT proxy
// this test starts and counts (test/support/connect-proxy.ts), with proxy credentials in HTTPS_PROXY.
// - Through the proxy: every TLS connection to either endpoint came through one of its tunnels (a daemon that
//   bypassed the proxy would show connections the proxy never carried), and a message is invoked.
// - NO_PROXY: the same run with the endpoints' host in NO_PROXY opens no tunnel.
// - The CA bundle: AWS_CA_BUNDLE or the profile's ca_bundle makes the CA trusted; without it the start fails (exit 1)
//   with one line naming the endpoint and the untrusted certificate.
// - Each TLS fault (untrusted, another host's certificate, an expired one, a proxy that wants credentials, refuses
//   or closes) is one line at start-up (exit 1, no stack) and one FAIL line in `workerless check`, the same words
//   from both clients.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { createQueue, sqsClient, type TestQueue } from '../support/aws.ts';
import { runCli } from '../support/cli.ts';
import { startConnectProxy, type ConnectProxy } from '../support/connect-proxy.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureSqsServer, sqsServers } from '../support/sqs-servers.ts';
import { createTestCa, startTlsTerminator, type TestCa, type TlsTerminator } from '../support/tls-ca.ts';

const KINDS = ['lean', 'sdk'] as const;
const CREDENTIALS = { user: 'daemon', password: 's3cret:@' };

describe('TLS, a private CA and a CONNECT proxy, with both clients (issue 41)', () => {
  const elasticmq = sqsServers().find((s) => s.name === 'ElasticMQ')!;
  let ca: TestCa;
  let lambda: LambdaEndpoint;
  let sqsTls: TlsTerminator;
  let lambdaTls: TlsTerminator;
  let proxy: ConnectProxy;
  let queue: TestQueue;
  const closers: (() => Promise<void>)[] = [];

  before(async () => {
    await ensureSqsServer(elasticmq);
    ca = createTestCa();
    const cert = ca.serverCert();
    lambda = await startLambdaEndpoint({ functions: { echo: { handler: functionFixture('echo.mjs') } } });
    sqsTls = await startTlsTerminator({ port: Number(new URL(elasticmq.endpoint).port) }, cert);
    lambdaTls = await startTlsTerminator({ port: Number(new URL(lambda.url).port) }, cert);
    proxy = await startConnectProxy({ credentials: CREDENTIALS });
    queue = await createQueue('wl-tls', {}, sqsClient(elasticmq.endpoint));
    closers.push(
      () => sqsTls.close(),
      () => lambdaTls.close(),
      () => proxy.close(),
      () => lambda.stop(),
    );
  });
  after(async () => {
    await Promise.all(closers.map((close) => close()));
    ca.remove();
  });

  /** The daemon's environment: SQS and Lambda over HTTPS (Lambda's endpoint is the startDaemon argument). */
  const env = (extra: Record<string, string>) => ({ AWS_ENDPOINT_URL_SQS: sqsTls.url, ...extra });

  for (const kind of KINDS) {
    it(`${kind}: every connection through the proxy's tunnels, trusting AWS_CA_BUNDLE, and a message invoked`, async () => {
      const tunnels = proxy.tunnels.length;
      const connections = sqsTls.connections + lambdaTls.connections;
      const run = startDaemon(lambdaTls.url, ['--function', 'echo', '--queues', queue.name, '--aws-client', kind], {
        ...env({ HTTPS_PROXY: proxy.url(CREDENTIALS), AWS_CA_BUNDLE: ca.bundlePath }),
      });
      try {
        await started(run);
        const invoked = lambda.invocations.length;
        await sqsClient(elasticmq.endpoint).send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: `via proxy ${kind}` }));
        await lambda.waitFor((all) => all.length > invoked, 15_000);
        const log = run.logs().find((l) => l['msg'] === 'AWS endpoints');
        assert.equal(log?.['httpsProxy'], `http://127.0.0.1:${proxy.port} (HTTPS_PROXY)`, 'named, without the credentials');
        assert.equal(log?.['caBundle'], `${ca.bundlePath} (AWS_CA_BUNDLE)`);
        assert.ok(!run.stdout().includes(CREDENTIALS.password), 'the proxy password is never logged');
      } finally {
        assert.equal(await stopDaemon(run), 0);
      }
      const opened = proxy.tunnels.slice(tunnels);
      assert.ok(opened.includes(`localhost:${sqsTls.port}`), `a tunnel to SQS: ${opened.join(', ')}`);
      assert.ok(opened.includes(`localhost:${lambdaTls.port}`), `a tunnel to Lambda: ${opened.join(', ')}`);
      // Every TLS connection the endpoints accepted came through a tunnel: nothing went around the proxy.
      assert.equal(sqsTls.connections + lambdaTls.connections - connections, opened.length);
    });

    it(`${kind}: NO_PROXY names the endpoints' host, and no tunnel is opened`, async () => {
      const tunnels = proxy.tunnels.length;
      const connections = sqsTls.connections;
      const run = startDaemon(lambdaTls.url, ['--function', 'echo', '--queues', queue.name, '--aws-client', kind], {
        ...env({ HTTPS_PROXY: proxy.url(CREDENTIALS), NO_PROXY: '.example,localhost', AWS_CA_BUNDLE: ca.bundlePath }),
      });
      try {
        await started(run);
      } finally {
        assert.equal(await stopDaemon(run), 0);
      }
      assert.deepEqual(proxy.tunnels.slice(tunnels), []);
      assert.ok(sqsTls.connections > connections, 'SQS was reached, straight');
    });

    it(`${kind}: the profile's ca_bundle (AWS_PROFILE, AWS_CONFIG_FILE) is trusted as AWS_CA_BUNDLE is`, async () => {
      const config = join(ca.dir, `config-${kind}`);
      // The profile's own credentials too: with AWS_PROFILE set the SDK takes them from the profile, not the variables.
      writeFileSync(
        config,
        `[profile corp]\nregion = us-east-1\naws_access_key_id = test\naws_secret_access_key = test\nca_bundle = ${ca.bundlePath}\n`,
      );
      const {
        AWS_ACCESS_KEY_ID: _,
        AWS_SECRET_ACCESS_KEY: __,
        ...environment
      } = checkEnv({ AWS_CONFIG_FILE: config, AWS_PROFILE: 'corp' });
      const run = runCli(['check', '--function', 'echo', '--queues', queue.name, '--metrics', 'off', '--aws-client', kind], environment);
      const { code } = await run.exited;
      assert.equal(code, 0, run.stdout() + run.stderr());
      assert.match(run.stdout(), new RegExp(`^ok   queue ${queue.name} \\(`, 'm'));
      assert.match(run.stdout(), /^ok {3}function echo \(DryRun invoke allowed\)$/m);
    });
  }

  /** `workerless check`'s environment: the daemon's, with the test's AWS settings. */
  function checkEnv(extra: Record<string, string>): Record<string, string> {
    return {
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_REGION: 'us-east-1',
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_CONFIG_FILE: '/dev/null',
      AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
      AWS_ENDPOINT_URL_SQS: sqsTls.url,
      AWS_ENDPOINT_URL_LAMBDA: lambdaTls.url,
      ...extra,
    };
  }

  interface Fault {
    readonly name: string;
    /** Sets the fault up: the SQS endpoint and the environment. */
    setup(): Promise<{ sqs: string; env: Record<string, string> }>;
    /** The fault's words after `cannot reach SQS at <endpoint>: `. */
    readonly says: (sqs: string) => RegExp;
  }
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  /** A TLS server with a certificate of its own (before it closes, the test is over). */
  const serverWith = async (cert: { key: string; cert: string }) => {
    const t = await startTlsTerminator({ port: Number(new URL(elasticmq.endpoint).port) }, cert);
    closers.push(() => t.close());
    return t.url;
  };
  const faults: Fault[] = [
    {
      name: 'an untrusted certificate (no CA bundle)',
      setup: async () => ({ sqs: sqsTls.url, env: {} }),
      says: () =>
        /its certificate is not trusted by the default CAs \(\w+: [^;]*; for a private CA set AWS_CA_BUNDLE or ca_bundle in the profile\)/,
    },
    {
      name: 'a certificate for another host',
      setup: async () => ({
        sqs: await serverWith(ca.serverCert({ names: ['other.example'], ips: [] })),
        env: { AWS_CA_BUNDLE: ca.bundlePath },
      }),
      says: () =>
        /its certificate is not for this host \(ERR_TLS_CERT_ALTNAME_INVALID: Host: localhost\. is not in the cert's altnames: DNS:other\.example\)/,
    },
    {
      name: 'an expired certificate',
      setup: async () => ({ sqs: await serverWith(ca.serverCert({ expired: true })), env: { AWS_CA_BUNDLE: ca.bundlePath } }),
      says: () => /its certificate has expired \(CERT_HAS_EXPIRED; or this machine's clock is wrong\)/,
    },
    {
      name: 'a proxy that wants credentials (407)',
      setup: async () => ({ sqs: sqsTls.url, env: { HTTPS_PROXY: proxy.url(), AWS_CA_BUNDLE: ca.bundlePath } }),
      says: (sqs) =>
        new RegExp(
          esc(
            `the proxy http://127.0.0.1:${proxy.port} (HTTPS_PROXY) refused the tunnel to ${new URL(sqs).host}: 407 Proxy Authentication Required; the proxy wants credentials: give them in HTTPS_PROXY as http://user:password@host:port`,
          ),
        ),
    },
    {
      name: 'a proxy that refuses the tunnel (403)',
      setup: async () => {
        const refusing = await startConnectProxy({ mode: 'refuse' });
        closers.push(() => refusing.close());
        return { sqs: sqsTls.url, env: { https_proxy: refusing.url(), AWS_CA_BUNDLE: ca.bundlePath } };
      },
      says: () =>
        /the proxy http:\/\/127\.0\.0\.1:\d+ \(https_proxy\) refused the tunnel to localhost:\d+: 403 Forbidden; the proxy does not allow it: check its rules, or NO_PROXY/,
    },
    {
      name: 'a proxy that closes the connection',
      setup: async () => {
        const closing = await startConnectProxy({ mode: 'close' });
        closers.push(() => closing.close());
        return { sqs: sqsTls.url, env: { HTTPS_PROXY: closing.url(), AWS_CA_BUNDLE: ca.bundlePath } };
      },
      says: () => /the proxy http:\/\/127\.0\.0\.1:\d+ \(HTTPS_PROXY\) closed the connection before answering the CONNECT to localhost:\d+/,
    },
  ];

  for (const fault of faults) {
    it(`${fault.name}: one line at start-up (exit 1) and in workerless check, the same from both clients`, async () => {
      const { sqs, env: faultEnv } = await fault.setup();
      const lines: string[] = [];
      for (const kind of KINDS) {
        const args = ['--function', 'echo', '--queues', queue.name, '--aws-client', kind];
        // Lambda straight and trusted, so the fault is SQS's alone.
        const environment = checkEnv({ ...faultEnv, AWS_ENDPOINT_URL_SQS: sqs, NO_PROXY: `localhost:${lambdaTls.port}` });
        const line = new RegExp(`^queue ${esc(queue.name)}: cannot reach SQS at ${esc(sqs)}: ${fault.says(sqs).source}$`);

        const run = startDaemon(lambdaTls.url, args, environment);
        const { code } = await run.exited;
        assert.equal(code, 1, `${kind}: ${run.stderr()}`);
        const told = run.stderr().trim().split('\n');
        assert.equal(told.length, 1, `${kind}: one line, no stack:\n${run.stderr()}`);
        assert.match(told[0]!.replace(/^workerless: /, ''), line, kind);
        lines.push(told[0]!);

        const check = runCli(['check', ...args, '--metrics', 'off'], environment);
        const checked = await check.exited;
        assert.equal(checked.code, 1, `${kind}: ${check.stdout()}${check.stderr()}`);
        // Without the bundle the Lambda endpoint (same CA) fails too, on a line of its own.
        const fail = check
          .stdout()
          .split('\n')
          .filter((l) => l.startsWith('FAIL queue'));
        assert.equal(fail.length, 1, `${kind}: ${check.stdout()}`);
        assert.match(fail[0]!.replace(/^FAIL /, ''), line, kind);
        assert.doesNotMatch(check.stderr(), /\n\s+at /, 'no stack');
      }
      assert.equal(lines[0], lines[1], 'the lean client and the SDK tell it alike');
    });
  }
});
