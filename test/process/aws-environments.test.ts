// The region and endpoint settings of real AWS environments, through the real CLI (issue 19): a region only in
// the shared config profile, a region the SDK refuses, settings the SDK's rule sets refuse, and a plain http
// endpoint on another host. No AWS is needed: every endpoint is a closed loopback port or a name that does not
// resolve, and each run ends at the first AWS call, which proves it got past the configuration.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { freePort } from '../support/http.ts';
import { runCli } from '../support/cli.ts';

const HINT = '(check --endpoint-url / --region and the network)';
const CREDENTIALS = { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_EC2_METADATA_DISABLED: 'true' };

function sharedConfig(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'wl-aws-config-')), 'config');
  writeFileSync(path, text);
  return path;
}

describe('AWS environments, through the CLI', () => {
  for (const client of ['lean', 'sdk'] as const) {
    it(`--aws-client ${client}: a region only in the shared config profile (AWS_PROFILE) starts, with the profile's endpoint`, async () => {
      const endpoint = `http://127.0.0.1:${await freePort()}`;
      const file = sharedConfig(
        [
          '[profile other]',
          'region = eu-north-1',
          '[profile work]',
          'region = ap-southeast-2',
          `endpoint_url = ${endpoint}`,
          'aws_access_key_id = test',
          'aws_secret_access_key = test',
          '',
        ].join('\n'),
      );
      const run = runCli(['--function', 'fn', '--queues', 'jobs', '--metrics', 'off', '--aws-client', client], {
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_CONFIG_FILE: file,
        AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
        AWS_PROFILE: 'work',
      });
      const { code } = await run.exited;
      assert.equal(code, 1, run.stderr());
      const resolved = run.logs().find((l) => l['msg'] === 'AWS endpoints');
      assert.ok(resolved, run.stdout());
      assert.deepEqual(
        [resolved['region'], resolved['regionFrom'], resolved['sqs'], resolved['lambda'], resolved['awsClient']],
        ['ap-southeast-2', 'region of profile "work" in the shared config', endpoint, endpoint, client],
      );
      assert.equal(run.stderr(), `workerless: queue jobs: cannot reach SQS at ${endpoint}: ECONNREFUSED ${HINT}\n`);
    });
  }

  it('without any region: exit 2 naming the option', async () => {
    const run = runCli(['--function', 'fn', '--queues', 'jobs'], {
      ...CREDENTIALS,
      AWS_CONFIG_FILE: '/dev/null',
      AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
    });
    assert.equal((await run.exited).code, 2);
    assert.equal(
      run.stderr(),
      'workerless: --region is required (or set AWS_REGION, or region in the shared config profile)\nRun "workerless --help" for the options.\n',
    );
  });

  it('a region the SDK refuses (not a host label): exit 2 naming the option, the value and where it came from', async () => {
    const run = runCli(['--function', 'fn', '--queues', 'jobs'], { ...CREDENTIALS, AWS_REGION: 'us-east-1.attacker.example' });
    assert.equal((await run.exited).code, 2);
    assert.equal(
      run.stderr(),
      'workerless: --region must be an AWS region such as us-east-1 (a valid host name label), got "us-east-1.attacker.example" (from AWS_REGION)\nRun "workerless --help" for the options.\n',
    );
    assert.equal(run.stdout(), '');
  });

  it("settings the SDK's rule sets refuse (FIPS with a custom endpoint): exit 2, one line per service, before any call", async () => {
    const run = runCli(['check', '--function', 'fn', '--queues', 'jobs', '--endpoint-url', 'http://127.0.0.1:4566'], {
      ...CREDENTIALS,
      AWS_REGION: 'us-gov-west-1',
      AWS_USE_FIPS_ENDPOINT: 'true',
    });
    assert.equal((await run.exited).code, 2);
    const setting =
      'region us-gov-west-1, --endpoint-url, AWS_USE_FIPS_ENDPOINT or use_fips_endpoint in the profile: Invalid Configuration: FIPS and custom endpoint are not supported';
    assert.deepEqual(run.stderr().trimEnd().split('\n'), [
      `workerless: no SQS endpoint for ${setting}`,
      `workerless: no Lambda endpoint for ${setting}`,
      `workerless: no CloudWatch endpoint for ${setting}`,
    ]);
    assert.equal(run.stdout(), '');
  });

  it("with --fleet-table: the start-up line names DynamoDB's endpoint as the SDK resolves it, and a setting its rule set refuses is exit 2", async () => {
    const sqs = `http://127.0.0.1:${await freePort()}`;
    const args = ['--function', 'fn', '--queues', 'jobs', '--metrics', 'off', '--fleet-table', 'workerless-fleet'];
    const env = { ...CREDENTIALS, AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null', AWS_ENDPOINT_URL_SQS: sqs };
    const run = runCli(args, { ...env, AWS_REGION: 'eu-central-1' });
    assert.equal((await run.exited).code, 1, run.stderr());
    const resolved = run.logs().find((l) => l['msg'] === 'AWS endpoints');
    assert.deepEqual([resolved?.['sqs'], resolved?.['dynamodb']], [sqs, 'https://dynamodb.eu-central-1.amazonaws.com'], run.stdout());
    // Without a fleet the line has no DynamoDB.
    const plain = runCli(args.slice(0, -2), { ...env, AWS_REGION: 'eu-central-1' });
    await plain.exited;
    assert.equal(plain.logs().find((l) => l['msg'] === 'AWS endpoints')?.['dynamodb'], undefined, plain.stdout());
    // FIPS with a custom DynamoDB endpoint: the SDK's DynamoDB client would refuse every call.
    const refused = runCli(args, {
      ...CREDENTIALS,
      AWS_CONFIG_FILE: '/dev/null',
      AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
      AWS_REGION: 'us-east-1',
      AWS_USE_FIPS_ENDPOINT: 'true',
      AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:8000',
    });
    assert.equal((await refused.exited).code, 2);
    assert.equal(
      refused.stderr(),
      'workerless: no DynamoDB endpoint for region us-east-1, AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL or endpoint_url in the profile, AWS_USE_FIPS_ENDPOINT or use_fips_endpoint in the profile: Invalid Configuration: FIPS and custom endpoint are not supported\n',
    );
  });

  it('a plain http endpoint on a host that is not local: a warning at start-up, and the endpoint named when it cannot be reached', async () => {
    const endpoint = 'http://workerless-test.invalid:4566';
    const run = runCli(['--function', 'fn', '--queues', 'jobs', '--endpoint-url', endpoint, '--metrics', 'off'], {
      ...CREDENTIALS,
      AWS_REGION: 'eu-west-1',
    });
    const { code } = await run.exited;
    assert.equal(code, 1);
    const warnings = run
      .logs()
      .filter((l) => l['level'] === 40)
      .map((l) => l['msg']);
    assert.ok(
      warnings.includes(
        `the sqs endpoint ${endpoint} is plain http on a host that is not local: the session token and the messages travel in clear text (use https)`,
      ),
      JSON.stringify(warnings),
    );
    assert.match(run.stderr(), new RegExp(`^workerless: queue jobs: cannot reach SQS at ${endpoint}: (ENOTFOUND|EAI_AGAIN) `));
  });
});
