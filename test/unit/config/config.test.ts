import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { collectOptions, helpText } from '../../../src/config/cli.ts';
import { CORE_OPTIONS, defaultText, envName } from '../../../src/config/options.ts';

const DEFS = OPTIONS;
import { OPTIONS, resolveConfig, type Config } from '../../../src/config/config.ts';
import { type RouteConfig } from '../../../src/dispatch/route.ts';
import { addDefaults } from '../../../src/config/with-defaults.ts';

const ENV = { AWS_REGION: 'us-east-1' };
const NOTHING_TO_DO =
  'nothing to do: --queues (with --function), routes in the --config file, or --temporal-task-queues (with --temporal-function) is required (env WORKERLESS_QUEUES, WORKERLESS_TEMPORAL_TASK_QUEUES)';

/** Resolves as main does; `readable` replaces the file system for the TLS file checks (default: the real one). */
function resolve(argv: string[], env: Record<string, string> = ENV, readable?: (path: string) => string | undefined) {
  const cli = collectOptions(argv, env, DEFS);
  const r = resolveConfig(cli.raw, env, readable ? addDefaults(cli.raw, readable) : undefined);
  return { cli, problems: [...cli.problems, ...(r.ok ? [] : r.problems)], config: r.ok ? r.config : undefined };
}

function valid(argv: string[], env: Record<string, string> = ENV): Config {
  const { problems, config } = resolve(argv, env);
  assert.deepEqual(problems, []);
  return config!;
}

/** The one route the flags make. */
function routeOf(c: Config): RouteConfig {
  assert.equal(c.routes.length, 1);
  return c.routes[0]!;
}

function tempFile(name: string, content: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'wl-config-'));
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describe('configuration', () => {
  it('fills in every default', () => {
    const c = valid(['--function', 'my-fn', '--queues', 'a']);
    assert.deepEqual(c.routes, [
      {
        functionName: 'my-fn',
        queues: { mode: 'strict', queues: [{ ref: 'a', weight: 1 }] },
        discovery: undefined,
        queuesRefreshMs: 60_000,
        concurrency: 10,
        pollForSec: 20,
        sleepSec: 0,
        batchSize: 1,
        batchWindowMs: 0,
        visibilityTimeoutSec: undefined,
        visibilityRefreshMs: 60_000,
        backlogGauges: true,
        deleteMode: 'on-success',
        retryBackoff: undefined,
        queueOptions: new Map(),
        adaptiveConcurrency: undefined,
        durable: 'off',
        tenantIdFrom: undefined,
        failureDestination: undefined,
        maxAttempts: undefined,
      },
    ]);
    assert.deepEqual(
      { ...c, routes: undefined },
      {
        routes: undefined,
        name: 'default',
        metricsNamespace: 'Workerless-default',
        metricsEnabled: true,
        metricsIntervalMs: 60_000,
        metricsPerQueue: 'auto',
        region: 'us-east-1',
        regionOrigin: 'AWS_REGION',
        endpointUrl: undefined,
        awsClient: 'lean',
        shutdownTimeoutMs: 30_000,
        logLevel: 'info',
        replicas: 1,
        httpPort: undefined,
        httpHost: '127.0.0.1',
        httpAllowedHosts: [],
        temporal: undefined,
        fleet: undefined,
      },
    );
    assert.ok(Object.isFrozen(c));
    assert.ok(Object.isFrozen(c.routes[0]));
  });

  it('--http-allowed-hosts: names, .domains and * split at the commas; anything else named with its value', () => {
    const c = valid(['--function', 'f', '--queues', 'a', '--http-allowed-hosts', 'wl.monitoring.svc, .example.com,*,Prom.local.']);
    assert.deepEqual(c.httpAllowedHosts, ['wl.monitoring.svc', '.example.com', '*', 'Prom.local.']);
    assert.deepEqual(valid(['--function', 'f', '--queues', 'a'], { ...ENV, WORKERLESS_HTTP_ALLOWED_HOSTS: 'a.b' }).httpAllowedHosts, [
      'a.b',
    ]);
    for (const bad of ['evil.example:8080', 'http://x', 'a,,b', 'a b', '*.example.com']) {
      const { problems } = resolve(['--function', 'f', '--queues', 'a', '--http-allowed-hosts', bad]);
      assert.equal(problems.length, 1, bad);
      assert.match(problems[0]!, /^--http-allowed-hosts must be host names separated by commas/, bad);
      assert.ok(problems[0]!.includes(JSON.stringify(bad)), `${problems[0]} names ${bad}`);
    }
  });

  it('reads every option from flags', () => {
    const c = valid([
      '--function',
      'arn:aws:lambda:eu-west-1:123456789012:function:fn:live',
      '--queues',
      'payments:3,default:1',
      '--concurrency',
      '50',
      '--poll-for',
      '5',
      '--sleep',
      '1.5',
      '--batch-size',
      '10',
      '--visibility-timeout',
      '120',
      '--delete',
      'never',
      '--name',
      'app-staging',
      '--metrics',
      'off',
      '--metrics-interval',
      '10',
      '--region',
      'eu-west-1',
      '--endpoint-url',
      'http://127.0.0.1:4566',
      '--shutdown-timeout',
      '90',
      '--log-level',
      'debug',
    ]);
    const route = routeOf(c);
    assert.equal(route.functionName, 'arn:aws:lambda:eu-west-1:123456789012:function:fn:live');
    assert.equal(route.queues.mode, 'weighted');
    assert.deepEqual(
      [route.concurrency, route.pollForSec, route.sleepSec, route.batchSize, route.visibilityTimeoutSec],
      [50, 5, 1.5, 10, 120],
    );
    assert.deepEqual(
      [route.deleteMode, c.metricsNamespace, c.metricsEnabled, c.metricsIntervalMs],
      ['never', 'Workerless-app-staging', false, 10_000],
    );
    assert.deepEqual([c.region, c.endpointUrl, c.shutdownTimeoutMs, c.logLevel], ['eu-west-1', 'http://127.0.0.1:4566', 90_000, 'debug']);
  });

  it('one key style per layer: raw options by flag (kebab-case) from flags, env and either spelling in the file; camelCase only in the Config', () => {
    const file = tempFile('wl.yaml', 'function: fn\nqueues: a\nbatchSize: 4\npoll-for: 7\n');
    const cli = collectOptions(['--batch-window', '2s'], { ...ENV, WORKERLESS_CONFIG: file, WORKERLESS_VISIBILITY_TIMEOUT: '60' }, DEFS);
    assert.deepEqual(cli.problems, []);
    assert.deepEqual([...cli.raw.keys()].sort(), [
      'batch-size',
      'batch-window',
      'config',
      'function',
      'poll-for',
      'queues',
      'visibility-timeout',
    ]);
    assert.equal(cli.raw.get('batch-size')?.origin, `batch-size in ${file}`);
    const r = resolveConfig(cli.raw, ENV);
    assert.ok(r.ok);
    const route = r.config.routes[0]!;
    assert.deepEqual([route.batchSize, route.batchWindowMs, route.pollForSec, route.visibilityTimeoutSec], [4, 2_000, 7, 60]);
  });

  it('every flag has a WORKERLESS_ env var, and flag > env > file > default', () => {
    const file = tempFile('wl.yaml', 'function: from-file\nqueues: [a, b]\nconcurrency: 3\npoll-for: 7\nbatchSize: 4\n');
    const env = { ...ENV, WORKERLESS_CONFIG: file, WORKERLESS_CONCURRENCY: '5', WORKERLESS_POLL_FOR: '9' };
    const c = routeOf(valid(['--concurrency', '8'], env));
    assert.equal(c.concurrency, 8); // flag over env and file
    assert.equal(c.pollForSec, 9); // env over file
    assert.equal(c.batchSize, 4); // file (camelCase key) over default
    assert.equal(c.functionName, 'from-file');
    assert.deepEqual(
      c.queues.queues.map((q) => q.ref),
      ['a', 'b'],
    );
    assert.equal(c.sleepSec, 0); // default
    for (const d of CORE_OPTIONS) assert.match(envName(d.flag), /^WORKERLESS_[A-Z_]+$/);
    assert.equal(envName('poll-for'), 'WORKERLESS_POLL_FOR');
  });

  it('reads JSON config files', () => {
    const file = tempFile('wl.json', JSON.stringify({ function: 'f', queues: 'a:2,b:1', metrics: false }));
    const c = valid(['--config', file]);
    assert.equal(c.metricsEnabled, false);
    assert.equal(routeOf(c).queues.mode, 'weighted');
  });

  it('reports every invalid option at once, naming the option and the value', () => {
    const { problems } = resolve(
      [
        '--concurrency',
        'abc',
        '--poll-for',
        '21',
        '--sleep',
        '-1',
        '--batch-size',
        '10001',
        '--batch-window',
        '301',
        '--visibility-timeout',
        '1.5',
        '--delete',
        'always',
        '--name',
        'bad name',
        '--metrics',
        'maybe',
        '--metrics-interval',
        '0',
        '--region',
        'us_east_1',
        '--endpoint-url',
        'localhost:4566',
        '--shutdown-timeout',
        'x',
        '--log-level',
        'loud',
        '--function',
        'bad/fn',
        '--queues',
        'a,a',
      ],
      {},
    );
    assert.deepEqual(problems, [
      '--function must be a function name, name:alias or function ARN, got "bad/fn"',
      '--queues lists "a" more than once',
      '--concurrency must be an integer from 1 to 10000, got "abc"',
      '--batch-size must be an integer from 1 to 10000, got "10001"',
      '--poll-for must be an integer from 0 to 20, got "21"',
      '--sleep must be a number from 0 to 3600, got "-1"',
      '--batch-window must be a duration from 0 to 5m (e.g. 500ms, 5s, 10m), got "301"',
      '--visibility-timeout must be an integer from 1 to 43200, got "1.5"',
      '--delete must be one of on-success, never, got "always"',
      '--name must be 1-244 characters of A-Z a-z 0-9 . _ - / # :, got "bad name"',
      '--metrics must be true or false (on/off), got "maybe"',
      '--metrics-interval must be an integer from 1 to 3600, got "0"',
      '--endpoint-url must be an http(s) URL, got "localhost:4566"',
      '--shutdown-timeout must be an integer from 1 to 3600, got "x"',
      '--log-level must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
      '--region must be an AWS region such as us-east-1 (a valid host name label), got "us_east_1"',
    ]);
  });

  it('treats an empty env var as unset', () => {
    const c = valid(['--function', 'f', '--queues', 'q'], {
      ...ENV,
      WORKERLESS_CONCURRENCY: '',
      WORKERLESS_METRICS: ' ',
      WORKERLESS_TEMPORAL_ADDRESS: '',
    });
    assert.equal(routeOf(c).concurrency, 10);
    assert.equal(c.metricsEnabled, true);
    assert.equal(c.temporal, undefined);
  });

  it('names the env var or file a bad value came from', () => {
    const file = tempFile('bad.yaml', 'batch-size: 10001\n');
    const { problems } = resolve(['--function', 'f', '--queues', 'q', '--config', file], { ...ENV, WORKERLESS_CONCURRENCY: 'abc' });
    assert.deepEqual(problems, [
      '--concurrency must be an integer from 1 to 10000, got "abc" (from WORKERLESS_CONCURRENCY)',
      `--batch-size must be an integer from 1 to 10000, got "10001" (from batch-size in ${file})`,
    ]);
  });

  it("batch window: above 10 needs a window of 1s or more, FIFO takes neither, as on Lambda's trigger (src/receive/batch-window.ts)", () => {
    const ok = valid(['--function', 'f', '--queues', 'q', '--batch-size', '500', '--batch-window', '2.5s']);
    assert.deepEqual([routeOf(ok).batchSize, routeOf(ok).batchWindowMs], [500, 2_500]);
    assert.deepEqual(resolve(['--function', 'f', '--queues', 'q'], { ...ENV, WORKERLESS_BATCH_SIZE: '50' }).problems, [
      "--batch-size above 10 needs a --batch-window of at least 1s (as on Lambda's trigger), got --batch-size 50 (from WORKERLESS_BATCH_SIZE) with --batch-window 0s",
    ]);
    assert.deepEqual(resolve(['--function', 'f', '--queues', 'a,orders.fifo', '--batch-size', '20', '--batch-window', '5']).problems, [
      "--batch-size must be at most 10 with FIFO queue orders.fifo (as on Lambda's trigger), got 20",
      "--batch-window is not available with FIFO queue orders.fifo (Lambda's trigger has no window on FIFO), got 5s",
    ]);
  });

  it('a flag given without its value is an error, a switch without one means true', () => {
    assert.deepEqual(resolve(['--function', 'f', '--queues', 'q', '--concurrency', '--metrics']).problems, ['--concurrency needs a value']);
    assert.equal(valid(['--function', 'f', '--queues', 'q', '--metrics']).metricsEnabled, true);
  });

  it('reports unknown flags (with a suggestion), stray arguments, unknown file keys and unreadable files', () => {
    const file = tempFile('unknown.yaml', 'concurency: 3\n');
    assert.deepEqual(resolve(['--function', 'f', '--queues', 'q', '--concurency', '3', 'extra', '--config', file]).problems, [
      'unknown option --concurency (did you mean --concurrency?)',
      'unexpected argument "extra" (options take the form --name value)',
      `unknown option "concurency" in ${file} (did you mean --concurrency?)`,
    ]);
    assert.deepEqual(resolve(['--function', 'f', '--queues', 'q', '--config', '/nonexistent/wl.yaml']).problems, [
      '--config cannot read "/nonexistent/wl.yaml": ENOENT',
    ]);
    const broken = tempFile('broken.yaml', 'queues: [a\n');
    assert.match(resolve(['--config', broken]).problems[0]!, /^--config cannot read ".*broken.yaml": /);
  });

  it('requires --function with --queues and a region', () => {
    assert.deepEqual(resolve(['--queues', 'q'], {}).problems, [
      '--function is required with --queues (env WORKERLESS_FUNCTION)',
      '--region is required (or set AWS_REGION, or region in the shared config profile)',
    ]);
    assert.equal(valid(['--function', 'f', '--queues', 'q'], { AWS_DEFAULT_REGION: 'eu-central-1' }).region, 'eu-central-1');
  });

  // The SDK's check (checkRegion: a valid host label), https://docs.aws.amazon.com/sdkref/latest/guide/feature-region.html
  it('checks the region as the SDK does, wherever it came from, and accepts every partition the SDK knows', () => {
    const args = ['--function', 'f', '--queues', 'q'];
    for (const region of ['eusc-de-east-1', 'us-isob-east-1', 'eu-isoe-west-1', 'fips-us-gov-west-1', 'cn-northwest-1'])
      assert.equal(valid([...args, '--region', region], {}).region, region);
    assert.deepEqual(resolve([...args], { AWS_REGION: 'us-east-1.evil.example' }).problems, [
      '--region must be an AWS region such as us-east-1 (a valid host name label), got "us-east-1.evil.example" (from AWS_REGION)',
    ]);
    assert.deepEqual(resolve([...args], { WORKERLESS_REGION: 'eu west 1' }).problems, [
      '--region must be an AWS region such as us-east-1 (a valid host name label), got "eu west 1" (from WORKERLESS_REGION)',
    ]);
    // What the SDK's chain found (src/config/region.ts) comes after --region, and is checked the same way.
    const profile = { value: 'ap-south-2', origin: 'region of profile "default" in the shared config' };
    const cli = collectOptions(args, {}, DEFS);
    const fromProfile = resolveConfig(cli.raw, {}, undefined, profile);
    assert.ok(fromProfile.ok);
    assert.deepEqual([fromProfile.config.region, fromProfile.config.regionOrigin], [profile.value, profile.origin]);
    const flagFirst = resolveConfig(collectOptions([...args, '--region', 'eu-west-1'], {}, DEFS).raw, {}, undefined, profile);
    assert.ok(flagFirst.ok);
    assert.deepEqual([flagFirst.config.region, flagFirst.config.regionOrigin], ['eu-west-1', '--region']);
    const bad = resolveConfig(cli.raw, {}, undefined, { value: '-bad-', origin: 'region of profile "x" in the shared config' });
    assert.deepEqual(bad.ok ? [] : bad.problems, [
      '--region must be an AWS region such as us-east-1 (a valid host name label), got "-bad-" (from region of profile "x" in the shared config)',
    ]);
  });

  it('Temporal spillover alone needs no --queues, and its problems are reported with the rest', () => {
    assert.deepEqual(
      resolve(['--temporal-task-queues', 'orders', '--temporal-function', 'w'], { ...ENV, WORKERLESS_TEMPORAL_MAX_WORKERS: 'abc' })
        .problems,
      ['--temporal-max-workers must be an integer from 1 to 1000, got "abc" (from WORKERLESS_TEMPORAL_MAX_WORKERS)'],
    );
    const c = valid(['--temporal-task-queues', 'orders', '--temporal-function', 'worker-fn', '--temporal-tls'], ENV);
    assert.deepEqual(c.routes, []);
    assert.deepEqual(c.temporal?.taskQueues, ['orders']);
    assert.ok(c.temporal?.tls, '--temporal-tls given alone means true');
    assert.deepEqual(resolve(['--temporal-task-queues', 'orders', '--concurrency', '0'], ENV).problems, [
      '--concurrency must be an integer from 1 to 10000, got "0"',
      '--temporal-function is required with --temporal-task-queues (env WORKERLESS_TEMPORAL_FUNCTION): the function that hosts the Temporal worker',
    ]);
    assert.deepEqual(resolve([], ENV).problems, [NOTHING_TO_DO]);
  });

  it('only a Temporal option, e.g. a namespace from a shared env file: nothing to do, naming the option and value', () => {
    assert.deepEqual(resolve([], { ...ENV, WORKERLESS_TEMPORAL_NAMESPACE: 'prod' }).problems, [
      '--temporal-namespace is only used with --temporal-task-queues (none given), got "prod" (from WORKERLESS_TEMPORAL_NAMESPACE)',
      NOTHING_TO_DO,
    ]);
    const file = tempFile('temporal.yaml', 'temporal-address: temporal.internal:7233\n');
    assert.deepEqual(resolve(['--config', file]).problems, [
      `--temporal-address is only used with --temporal-task-queues (none given), got "temporal.internal:7233" (from temporal-address in ${file})`,
      NOTHING_TO_DO,
    ]);
  });

  it('--function and --temporal-function without any queues: nothing to do, and each function named', () => {
    assert.deepEqual(resolve(['--function', 'f', '--temporal-function', 'w']).problems, [
      '--function is only used with --queues (none given), got "f"',
      '--temporal-function is only used with --temporal-task-queues (none given), got "w"',
      NOTHING_TO_DO,
    ]);
  });

  it('options of the half that is not configured are reported, not ignored', () => {
    // SQS work configured, a stray Temporal option (the API key stays masked).
    assert.deepEqual(resolve(['--function', 'f', '--queues', 'q'], { ...ENV, WORKERLESS_TEMPORAL_API_KEY: 'secret-key' }).problems, [
      '--temporal-api-key is only used with --temporal-task-queues (none given), got "***" (from WORKERLESS_TEMPORAL_API_KEY)',
    ]);
    // Temporal work configured, a stray --function.
    assert.deepEqual(
      resolve(['--temporal-task-queues', 'orders', '--temporal-function', 'w'], { ...ENV, WORKERLESS_FUNCTION: 'f' }).problems,
      ['--function is only used with --queues (none given), got "f" (from WORKERLESS_FUNCTION)'],
    );
    // Both configured: nothing stray.
    const both = valid([
      '--function',
      'f',
      '--queues',
      'q',
      '--temporal-task-queues',
      'orders',
      '--temporal-function',
      'w',
      '--temporal-namespace',
      'prod',
    ]);
    assert.equal(both.temporal?.namespace, 'prod');
  });

  it('an invalid --queues is reported as invalid, not also as missing', () => {
    assert.deepEqual(resolve(['--function', 'f', '--queues', 'a,a']).problems, ['--queues lists "a" more than once']);
  });

  it('the Temporal TLS files must be readable: the real file system by default, injectable for tests', () => {
    const spill = ['--temporal-task-queues', 'orders', '--temporal-function', 'w'];
    assert.deepEqual(resolve([...spill, '--temporal-tls-ca', '/nonexistent/missing.pem']).problems, [
      '--temporal-tls-ca cannot read "/nonexistent/missing.pem": ENOENT',
    ]);
    const ca = tempFile('ca.pem', '-----BEGIN CERTIFICATE-----\n');
    assert.equal(valid([...spill, '--temporal-tls-ca', ca]).temporal?.tls?.caPath, ca);
    const env = { ...ENV, WORKERLESS_TEMPORAL_TLS_CERT: '/etc/wl/client.pem', WORKERLESS_TEMPORAL_TLS_KEY: '/etc/wl/client.key' };
    const fake = (path: string) => (path === '/etc/wl/client.key' ? 'EACCES' : undefined);
    assert.deepEqual(resolve([...spill, '--concurrency', '0'], env, fake).problems, [
      '--concurrency must be an integer from 1 to 10000, got "0"',
      '--temporal-tls-key cannot read "/etc/wl/client.key": EACCES (from WORKERLESS_TEMPORAL_TLS_KEY)',
    ]);
  });

  it('accepts the function forms Lambda accepts', () => {
    for (const fn of [
      'fn',
      'fn:live',
      'fn:$LATEST',
      'fn:12',
      '123456789012:function:fn',
      'arn:aws:lambda:us-east-1:123456789012:function:fn',
    ]) {
      assert.equal(routeOf(valid(['--function', fn, '--queues', 'q'])).functionName, fn);
    }
  });

  it('warns about unknown WORKERLESS_ variables but ignores the project scripts’ own', () => {
    const { cli } = resolve(['--function', 'f', '--queues', 'q'], { ...ENV, WORKERLESS_CONCURENCY: '3', WORKERLESS_CACHE_DIR: '/x' });
    assert.deepEqual(cli.warnings, ['ignoring unknown environment variable WORKERLESS_CONCURENCY']);
  });

  it('--help lists every option with its env var and default', async () => {
    const text = helpText(CORE_OPTIONS, '');
    for (const d of CORE_OPTIONS) {
      assert.ok(text.includes(`--${d.flag}`), d.flag);
      assert.ok(text.includes(envName(d.flag)), envName(d.flag));
      const def = defaultText(d);
      if (def !== undefined) assert.ok(text.includes(`[default: ${def}]`), `${d.flag} default`);
    }
  });
});

describe('--tenant-id-from', () => {
  it('group takes the MessageGroupId; attribute:NAME a message attribute (from a flag or WORKERLESS_TENANT_ID_FROM)', () => {
    assert.deepEqual(routeOf(valid(['--function', 'f', '--queues', 'a', '--tenant-id-from', 'group'])).tenantIdFrom, { kind: 'group' });
    assert.deepEqual(
      routeOf(valid(['--function', 'f', '--queues', 'a'], { ...ENV, WORKERLESS_TENANT_ID_FROM: 'attribute:tenant.id-2_x' })).tenantIdFrom,
      {
        kind: 'attribute',
        name: 'tenant.id-2_x',
      },
    );
  });

  for (const bad of ['groups', 'attribute:', 'attribute:a b', 'attribute', `attribute:${'a'.repeat(257)}`, 'MessageGroupId'])
    it(`refuses ${JSON.stringify(bad.slice(0, 20))} naming the option and the value`, () => {
      const { problems } = resolve(['--function', 'f', '--queues', 'a', '--tenant-id-from', bad]);
      assert.equal(problems.length, 1);
      assert.match(problems[0]!, /--tenant-id-from must be group or attribute:NAME/);
      assert.ok(problems[0]!.includes(bad.slice(0, 20)), problems[0]);
    });
});
