// Endpoint parity: where the lean path sends SQS, Lambda and CloudWatch calls (src/aws/endpoints.ts), and where the
// start-up line says a fleet's DynamoDB calls go, against
// where the AWS SDK's own clients send them, for every region of the SDK's partition data (every partition)
// with FIPS and dual-stack on and off, for the region and endpoint settings of the shared config profile, and
// for AWS_ENDPOINT_URL* precedence. The reference is the real client: a middleware at the build step captures
// the request after the SDK resolved its endpoint, and stops it there (nothing is sent, nothing is signed).
// The SDK reads the environment and the shared config itself, so both sides read the same settings.
// AWS pages: "Dual-stack and FIPS endpoints" (https://docs.aws.amazon.com/sdkref/latest/guide/feature-endpoints.html),
// "Service-specific endpoints" (https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html),
// "AWS Region" (https://docs.aws.amazon.com/sdkref/latest/guide/feature-region.html).
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { CloudWatchClient, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { EndpointConfigError, resolveAwsEndpoints, sqsCallOrigin, type AwsEndpoints, type AwsService } from '../../../src/aws/endpoints.ts';
import { createSdkClients } from '../../../src/aws/clients.ts';
import { loadAwsRegion } from '../../../src/config/region.ts';

const SERVICES: readonly AwsService[] = ['sqs', 'lambda', 'cloudwatch', 'dynamodb'];
const SERVICE_NAMES: Readonly<Record<AwsService, string>> = {
  sqs: 'SQS',
  lambda: 'Lambda',
  cloudwatch: 'CloudWatch',
  dynamodb: 'DynamoDB',
};
const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };

/** What the SDK client did with one call: the URL it would have sent the request to, or the error it threw. */
type Outcome = { url: string } | { error: string };

class Captured extends Error {
  readonly url: string;
  constructor(url: string) {
    super('captured');
    this.url = url;
  }
}

interface ClientSettings {
  region?: string;
  endpoint?: string;
}

/** One call of the real SDK client for `service`, stopped at the build step: where it would have gone. */
async function sdkOutcome(service: AwsService, settings: ClientSettings, queueUrl?: string): Promise<Outcome> {
  const config = { ...settings, credentials, maxAttempts: 1 };
  const capture = <C extends { middlewareStack: SQSClient['middlewareStack'] }>(client: C): C => {
    client.middlewareStack.add(
      () => (args) => {
        const r = args.request as { protocol: string; hostname: string; port?: number; path: string };
        throw new Captured(`${r.protocol}//${r.hostname}${r.port ? `:${r.port}` : ''}${r.path}`);
      },
      { step: 'build', priority: 'low' },
    );
    return client;
  };
  try {
    if (service === 'sqs') {
      const client = capture(new SQSClient(config));
      await (queueUrl
        ? client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl }))
        : client.send(new GetQueueUrlCommand({ QueueName: 'q' })));
    } else if (service === 'lambda') {
      const client = capture(new LambdaClient(config) as unknown as SQSClient) as unknown as LambdaClient;
      await client.send(new InvokeCommand({ FunctionName: 'f' }));
    } else if (service === 'cloudwatch') {
      const client = capture(new CloudWatchClient(config) as unknown as SQSClient) as unknown as CloudWatchClient;
      await client.send(new PutMetricDataCommand({ Namespace: 'n', MetricData: [] }));
    } else {
      // As the fleet store builds its client (src/aws/fleet-store.ts): the region and --endpoint-url, nothing else.
      // The credentials name no account, so the account-based endpoint stays out of it (AwsEndpoints.dynamodb).
      const client = capture(new DynamoDBClient(config) as unknown as SQSClient) as unknown as DynamoDBClient;
      await client.send(new DescribeTableCommand({ TableName: 't' }));
    }
  } catch (err) {
    if (err instanceof Captured) return { url: err.url };
    return { error: err instanceof Error ? err.message : String(err) };
  }
  throw new Error('the capture middleware did not run');
}

/** Where the lean path sends a call of `service`: its endpoint and the call's path (SQS: / , as the SDK's JSON protocol). */
function leanUrl(endpoints: AwsEndpoints, service: AwsService): string {
  const url = endpoints[service]!.url;
  const base = url.pathname.replace(/\/+$/, '');
  const path = service === 'lambda' ? '/2015-03-31/functions/f/invocations' : '/';
  return `${url.origin}${base}${path}`;
}

async function leanOutcomes(region: string, endpointUrl?: string): Promise<Record<AwsService, Outcome>> {
  try {
    const e = await resolveAwsEndpoints(region, endpointUrl, { dynamodb: true });
    return {
      sqs: { url: leanUrl(e, 'sqs') },
      lambda: { url: leanUrl(e, 'lambda') },
      cloudwatch: { url: leanUrl(e, 'cloudwatch') },
      dynamodb: { url: leanUrl(e, 'dynamodb') },
    };
  } catch (err) {
    assert.ok(err instanceof EndpointConfigError, `an EndpointConfigError, got ${String(err)}`);
    // Each refused service has its line; the others resolved.
    const outcome = (s: AwsService): Outcome => {
      const ok = err.resolved[s];
      if (ok) return { url: leanUrl({ ...({} as AwsEndpoints), [s]: ok }, s) };
      return { error: err.problems.find((p) => p.includes(`no ${SERVICE_NAMES[s]} endpoint`)) ?? err.message };
    };
    return { sqs: outcome('sqs'), lambda: outcome('lambda'), cloudwatch: outcome('cloudwatch'), dynamodb: outcome('dynamodb') };
  }
}

/** The same outcome: the same URL, or both refused, ours with the SDK's own reason in the message. */
function same(lean: Outcome, sdk: Outcome): boolean {
  if ('url' in lean && 'url' in sdk) return lean.url === sdk.url;
  if ('error' in lean && 'error' in sdk) return lean.error.includes(sdk.error);
  return false;
}

const ENV_KEYS = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_PROFILE',
  'AWS_CONFIG_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_EC2_METADATA_DISABLED',
  'AWS_USE_FIPS_ENDPOINT',
  'AWS_USE_DUALSTACK_ENDPOINT',
  'AWS_ENDPOINT_URL',
  'AWS_ENDPOINT_URL_SQS',
  'AWS_ENDPOINT_URL_LAMBDA',
  'AWS_ENDPOINT_URL_CLOUDWATCH',
  'AWS_ENDPOINT_URL_DYNAMODB',
  'AWS_ACCOUNT_ID',
  'AWS_ACCOUNT_ID_ENDPOINT_MODE',
  'AWS_IGNORE_CONFIGURED_ENDPOINT_URLS',
];
const saved = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));

/** Sets exactly these AWS variables (the SDK and our resolution both read process.env); never a developer's profile. */
function setEnv(vars: Record<string, string>): void {
  for (const k of ENV_KEYS) delete process.env[k];
  Object.assign(
    process.env,
    { AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null', AWS_EC2_METADATA_DISABLED: 'true' },
    vars,
  );
}

let dir: string;
let files = 0;
/** A shared config file of its own for each case: the SDK caches what it read by path. */
function configFile(text: string): string {
  const path = join(dir, `config-${++files}`);
  writeFileSync(path, text);
  return path;
}

/** Every region key of the SDK's partition data (the data the rule sets' aws.partition() reads), by partition. */
async function partitionRegions(): Promise<Map<string, string[]>> {
  const core = dirname(createRequire(import.meta.url).resolve('@aws-sdk/core/package.json'));
  const file = join(core, 'dist-es/submodules/client/util-endpoints/lib/aws/partitions.js');
  const { partitionsInfo } = (await import(pathToFileURL(file).href)) as {
    partitionsInfo: { partitions: { id: string; regions: Record<string, unknown> }[] };
  };
  return new Map(partitionsInfo.partitions.map((p) => [p.id, Object.keys(p.regions)]));
}

const MODES = [
  { name: 'default', env: {} },
  { name: 'FIPS', env: { AWS_USE_FIPS_ENDPOINT: 'true' } },
  { name: 'dual-stack', env: { AWS_USE_DUALSTACK_ENDPOINT: 'true' } },
  { name: 'FIPS + dual-stack', env: { AWS_USE_FIPS_ENDPOINT: 'true', AWS_USE_DUALSTACK_ENDPOINT: 'true' } },
] as const;

describe('endpoints, against the SDK clients', () => {
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'wl-endpoints-'));
  });
  after(() => {
    for (const k of ENV_KEYS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  it('resolves every region of every partition, with FIPS and dual-stack on and off, for SQS, Lambda, CloudWatch and DynamoDB as the SDK does', async () => {
    const partitions = await partitionRegions();
    // The partitions issue 19 names must all be in the data, or the test proves less than it says.
    for (const id of ['aws', 'aws-cn', 'aws-us-gov', 'aws-iso', 'aws-iso-b', 'aws-eusc'])
      assert.ok(partitions.has(id), `partition ${id} in the SDK's data`);
    // Regions written as the SDK also accepts them: a FIPS pseudo-region turns FIPS on.
    const regions = [...[...partitions.values()].flat(), 'fips-us-east-1', 'us-gov-west-1-fips'];
    const differ: string[] = [];
    let cases = 0;
    for (const mode of MODES) {
      setEnv(mode.env);
      for (const region of regions) {
        const lean = await leanOutcomes(region);
        for (const service of SERVICES) {
          const sdk = await sdkOutcome(service, { region });
          cases++;
          if (!same(lean[service], sdk))
            differ.push(`${region} ${mode.name} ${service}: lean ${JSON.stringify(lean[service])}, SDK ${JSON.stringify(sdk)}`);
        }
      }
    }
    assert.deepEqual(differ, [], `${differ.length} of ${cases} cases differ`);
    assert.ok(cases >= 4 * 4 * 40, `every region: ${cases} cases`);
  });

  it('spot checks: the hosts issue 19 found wrong, as the SDK resolves them', async () => {
    const host = async (region: string, env: Record<string, string> = {}) => {
      setEnv(env);
      const e = await resolveAwsEndpoints(region, undefined);
      return [e.sqs.url.host, e.lambda.url.host, e.cloudwatch.url.host];
    };
    assert.deepEqual(await host('us-east-1', { AWS_USE_FIPS_ENDPOINT: 'true' }), [
      'sqs-fips.us-east-1.amazonaws.com',
      'lambda-fips.us-east-1.amazonaws.com',
      'monitoring-fips.us-east-1.amazonaws.com',
    ]);
    assert.deepEqual(await host('eu-west-1', { AWS_USE_DUALSTACK_ENDPOINT: 'true' }), [
      'sqs.eu-west-1.api.aws',
      'lambda.eu-west-1.api.aws',
      'monitoring.eu-west-1.api.aws',
    ]);
    assert.deepEqual((await host('us-iso-east-1'))[0], 'sqs.us-iso-east-1.c2s.ic.gov');
    assert.deepEqual((await host('us-isob-east-1'))[0], 'sqs.us-isob-east-1.sc2s.sgov.gov');
    assert.deepEqual((await host('eusc-de-east-1'))[0], 'sqs.eusc-de-east-1.amazonaws.eu');
    assert.deepEqual((await host('cn-north-1'))[1], 'lambda.cn-north-1.amazonaws.com.cn');
    const dynamo = async (region: string, env: Record<string, string> = {}) => {
      setEnv(env);
      return (await resolveAwsEndpoints(region, undefined, { dynamodb: true })).dynamodb?.url.host;
    };
    assert.equal(await dynamo('us-east-1', { AWS_USE_FIPS_ENDPOINT: 'true' }), 'dynamodb-fips.us-east-1.amazonaws.com');
    assert.equal(await dynamo('eu-west-1', { AWS_USE_DUALSTACK_ENDPOINT: 'true' }), 'dynamodb.eu-west-1.api.aws');
    assert.equal(await dynamo('cn-north-1'), 'dynamodb.cn-north-1.amazonaws.com.cn');
    setEnv({});
    assert.equal((await resolveAwsEndpoints('eu-west-1', undefined)).dynamodb, undefined, 'without a fleet, not resolved');
    const fips = await resolveAwsEndpoints('fips-us-east-1', undefined);
    assert.deepEqual([fips.region, fips.useFips], ['us-east-1', true], 'signed for the region without the fips- prefix');
  });

  it("follows the shared config profile's region, use_fips_endpoint, use_dualstack_endpoint and services endpoint_url as the SDK does", async () => {
    const file = configFile(
      [
        '[default]',
        'region = eu-central-1',
        'use_fips_endpoint = true',
        '[profile dual]',
        'region = ap-southeast-2',
        'use_dualstack_endpoint = true',
        '[profile local]',
        'region = ap-southeast-2',
        'services = local-sqs',
        '[services local-sqs]',
        'sqs =',
        '  endpoint_url = http://127.0.0.1:9324',
        '[profile global-url]',
        'region = us-west-2',
        'endpoint_url = http://127.0.0.1:4566',
        '[profile missing-section]',
        'region = us-west-2',
        'services = nowhere',
        '',
      ].join('\n'),
    );
    const check = async (env: Record<string, string>, endpointUrl?: string) => {
      setEnv({ AWS_CONFIG_FILE: file, ...env });
      const region = await loadAwsRegion();
      assert.ok(region, 'a region from the profile');
      const lean = await leanOutcomes(region.value, endpointUrl);
      const got: Record<string, [Outcome, Outcome]> = {};
      for (const service of SERVICES) {
        // The SDK client is given no region: it reads the profile itself.
        const sdk = await sdkOutcome(service, endpointUrl ? { endpoint: endpointUrl } : {});
        got[service] = [lean[service], sdk];
        assert.ok(
          same(lean[service], sdk),
          `${service} ${JSON.stringify(env)}: lean ${JSON.stringify(lean[service])}, SDK ${JSON.stringify(sdk)}`,
        );
      }
      return { region, got };
    };
    const byDefault = await check({});
    assert.deepEqual(byDefault.region, { value: 'eu-central-1', origin: 'region of profile "default" in the shared config' });
    assert.deepEqual(byDefault.got['sqs']![0], { url: 'https://sqs-fips.eu-central-1.amazonaws.com/' });
    const dual = await check({ AWS_PROFILE: 'dual' });
    assert.deepEqual(dual.got['lambda']![0], { url: 'https://lambda.ap-southeast-2.api.aws/2015-03-31/functions/f/invocations' });
    const local = await check({ AWS_PROFILE: 'local' });
    assert.deepEqual(local.got['sqs']![0], { url: 'http://127.0.0.1:9324/' }, "the services section's sqs endpoint_url");
    assert.deepEqual(local.got['lambda']![0], { url: 'https://lambda.ap-southeast-2.amazonaws.com/2015-03-31/functions/f/invocations' });
    // The environment comes before the profile, for each setting.
    const envFirst = await check({ AWS_PROFILE: 'local', AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:7001', AWS_REGION: 'eu-west-3' });
    assert.deepEqual(envFirst.got['sqs']![0], { url: 'http://127.0.0.1:7001/' });
    assert.equal(envFirst.region.value, 'eu-west-3');
    const globalUrl = await check({ AWS_PROFILE: 'global-url' });
    assert.deepEqual(globalUrl.got['cloudwatch']![0], { url: 'http://127.0.0.1:4566/' }, "the profile's endpoint_url");
    // --endpoint-url (the clients' `endpoint`) over everything configured.
    const flag = await check({ AWS_PROFILE: 'local', AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:7001' }, 'http://127.0.0.1:7002/prefix');
    assert.deepEqual(flag.got['sqs']![0], { url: 'http://127.0.0.1:7002/prefix/' });
    // FIPS from the default profile with a custom endpoint: the SDK refuses it, and so do we.
    const fipsCustom = await check({}, 'http://127.0.0.1:7002');
    assert.ok('error' in fipsCustom.got['sqs']![0]);
    // A `services` name without its section: the SDK's loader gives up on the setting (the regional endpoint).
    const missing = await check({ AWS_PROFILE: 'missing-section' });
    assert.deepEqual(missing.got['sqs']![0], { url: 'https://sqs.us-west-2.amazonaws.com/' });
  });

  it('keeps the precedence of AWS_ENDPOINT_URL_<SERVICE> over AWS_ENDPOINT_URL, and AWS_IGNORE_CONFIGURED_ENDPOINT_URLS, as the SDK does', async () => {
    const cases: Record<string, string>[] = [
      { AWS_ENDPOINT_URL: 'http://127.0.0.1:7000', AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:7001' },
      { AWS_ENDPOINT_URL: 'http://127.0.0.1:7000', AWS_ENDPOINT_URL_LAMBDA: 'http://127.0.0.1:7002/lambda' },
      { AWS_ENDPOINT_URL_CLOUDWATCH: 'http://127.0.0.1:7003' },
      { AWS_ENDPOINT_URL: 'http://127.0.0.1:7000', AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true' },
      { AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:7001', AWS_USE_DUALSTACK_ENDPOINT: 'true' },
      { AWS_ENDPOINT_URL: 'http://127.0.0.1:7000', AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:7004' },
      { AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:7004', AWS_USE_FIPS_ENDPOINT: 'true' },
    ];
    for (const env of cases) {
      setEnv({ AWS_REGION: 'eu-west-1', ...env });
      const lean = await leanOutcomes('eu-west-1');
      for (const service of SERVICES) {
        const sdk = await sdkOutcome(service, { region: 'eu-west-1' });
        assert.ok(
          same(lean[service], sdk),
          `${service} ${JSON.stringify(env)}: lean ${JSON.stringify(lean[service])}, SDK ${JSON.stringify(sdk)}`,
        );
      }
    }
    setEnv({ AWS_ENDPOINT_URL: 'http://127.0.0.1:7000', AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true' });
    const ignored = await resolveAwsEndpoints('eu-west-1', 'http://127.0.0.1:7009');
    assert.deepEqual([ignored.sqs.url.href, ignored.sqs.custom], ['http://127.0.0.1:7009/', true], '--endpoint-url is never ignored');
  });

  it("sends SQS calls for a queue URL where the SDK clients of a run do: a configured endpoint, else the queue URL's host", async () => {
    const queueUrl = 'https://sqs.us-west-2.amazonaws.com/000000000000/q';
    const cases: [Record<string, string>, string][] = [
      [{}, 'https://sqs.us-west-2.amazonaws.com/'],
      [{ AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:7001' }, 'http://127.0.0.1:7001/'],
      // Configured in the profile only: the SDK's queue-URL middleware would not see it on its own.
      [{ AWS_CONFIG_FILE: configFile('[default]\nendpoint_url = http://127.0.0.1:7005\n') }, 'http://127.0.0.1:7005/'],
    ];
    for (const [env, expected] of cases) {
      setEnv({ AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret', ...env });
      const e = await resolveAwsEndpoints('eu-west-1', undefined);
      assert.equal(sqsCallOrigin(e.sqs, queueUrl) + '/', expected);
      // The run's SDK client (src/aws/clients.ts), built from the same resolution.
      const sdk = createSdkClients({ region: 'eu-west-1', endpointUrl: undefined }, e.sqs, { network: e.network });
      const client = await sdk.sqs();
      client.middlewareStack.add(
        () => (args) => {
          const r = args.request as { protocol: string; hostname: string; port?: number };
          throw new Captured(`${r.protocol}//${r.hostname}${r.port ? `:${r.port}` : ''}/`);
        },
        { step: 'build', priority: 'low' },
      );
      await assert.rejects(client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl })), (err: unknown) => {
        assert.ok(err instanceof Captured, String(err));
        assert.equal(err.url, expected);
        return true;
      });
      sdk.destroy();
    }
  });

  it('refuses, as the SDK does, a region that is not a host label, and names the service whose endpoint the rule set refuses', async () => {
    setEnv({});
    await assert.rejects(resolveAwsEndpoints('us-east-1.evil.example', undefined), {
      name: 'EndpointConfigError',
      message: /--region us-east-1\.evil\.example is refused by the AWS SDK: Region not accepted/,
    });
    setEnv({ AWS_USE_DUALSTACK_ENDPOINT: 'true', AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:7001' });
    await assert.rejects(resolveAwsEndpoints('eu-west-1', undefined), (err: unknown) => {
      assert.ok(err instanceof EndpointConfigError);
      assert.deepEqual(err.problems, [
        'no SQS endpoint for region eu-west-1, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL or endpoint_url in the profile, AWS_USE_DUALSTACK_ENDPOINT or use_dualstack_endpoint in the profile: Invalid Configuration: Dualstack and custom endpoint are not supported',
      ]);
      assert.deepEqual([...err.services], ['sqs']);
      return true;
    });
  });
});
