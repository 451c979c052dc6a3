// What makes the TLS phase (scripts/test.sh tls) a proof: in it, the daemon speaks HTTPS to SQS (LocalStack's own
// HTTPS port, and ElasticMQ behind a TLS terminator), Lambda and CloudWatch, and it trusts the private CA only
// because AWS_CA_BUNDLE names it. Without the bundle the same daemon refuses to start in one line, so the phase's
// other tests did check every certificate. Outside the phase it is skipped: there is no CA to trust.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { awsTestEnv, createQueue, sqsClient } from '../support/aws.ts';
import { runCli } from '../support/cli.ts';
import { started, stopDaemon } from '../support/daemon.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { phaseTls } from '../support/phase-tls.ts';
import { ensureSqsServer, sqsServers } from '../support/sqs-servers.ts';

const phase = phaseTls();
const servers = sqsServers().filter((s) => s.name !== 'moto');

describe(
  'the TLS phase speaks HTTPS and checks every certificate',
  { skip: phase === undefined && 'runs in the TLS phase (scripts/test.sh tls)' },
  () => {
    let endpoint: LambdaEndpoint;
    before(async () => {
      endpoint = await startLambdaEndpoint({ functions: { echo: { handler: functionFixture('echo.mjs') } } });
    });
    after(() => endpoint.stop());

    for (const server of servers) {
      it(`${server.name}: SQS, Lambda and CloudWatch over HTTPS, trusted through AWS_CA_BUNDLE alone`, async () => {
        await ensureSqsServer(server);
        const sqs = sqsClient(server.endpoint);
        const queue = await createQueue('wl-tls-phase', {}, sqs);
        sqs.destroy();
        const env: Record<string, string> = { ...awsTestEnv({ lambdaEndpoint: endpoint.url }), AWS_ENDPOINT_URL_SQS: server.endpoint };
        const args = ['--function', 'echo', '--queues', queue.name, '--poll-for', '1', '--metrics'];

        const daemon = runCli(args, env);
        await started(daemon);
        const line = daemon.logs().find((l) => l['msg'] === 'AWS endpoints');
        assert.equal(await stopDaemon(daemon), 0);
        assert.ok(line, 'the daemon logged its endpoints');
        for (const service of ['sqs', 'lambda', 'cloudwatch'])
          assert.match(String(line[service]), /^https:\/\//, `${service}: ${String(line[service])}`);
        assert.equal(line['caBundle'], `${phase!.bundlePath} (AWS_CA_BUNDLE)`);

        // The same run without the bundle: Node's default CAs do not know the phase's CA or LocalStack's certificate.
        const { AWS_CA_BUNDLE: _bundle, ...withoutBundle } = env;
        const untrusting = runCli(args, withoutBundle);
        const { code } = await untrusting.exited;
        assert.equal(code, 1, untrusting.stderr());
        const stderr = untrusting.stderr().trim();
        assert.equal(stderr.split('\n').length, 1, stderr);
        assert.match(stderr, new RegExp(`cannot reach SQS at ${server.endpoint}: its certificate is not trusted`));
      });
    }
  },
);
