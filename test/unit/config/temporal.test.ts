import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { RawValue } from '../../../src/config/cli.ts';
import { addDefaults, parseDurationMs, readableFile, type FileCheck } from '../../../src/config/with-defaults.ts';
import { TEMPORAL_OPTIONS, envName } from '../../../src/config/options.ts';
import { resolveTemporalConfig } from '../../../src/config/temporal.ts';
import { redactTemporalConfig } from '../../../src/temporal/options.ts';

/** The files the fake FileCheck can read; any other path is ENOENT. No test here touches the file system. */
const FILES = new Set(['/c.pem', '/k.pem', '/ca.pem']);
const fakeFiles: FileCheck = (path) => (FILES.has(path) ? undefined : 'ENOENT');

/** Raw values as the CLI collects them (keyed by flag; written here in camelCase), given as flags unless `origins` says otherwise. */
function resolve(raw: Record<string, unknown>, checkFile: FileCheck = fakeFiles, origins: Record<string, string> = {}) {
  const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  const map = new Map<string, RawValue>(
    Object.entries(raw).map(([k, value]) => [kebab(k), { value, origin: origins[k] ?? `--${kebab(k)}` }]),
  );
  const checked: string[] = [];
  const reader = addDefaults(map, (path) => {
    checked.push(path);
    return checkFile(path);
  });
  const config = resolveTemporalConfig(reader);
  return { config, problems: reader.problems, checked };
}

const minimal = { temporalTaskQueues: ['orders'], temporalFunction: 'temporal-worker' };

describe('resolveTemporalConfig', () => {
  it('returns undefined without problems when no Temporal option is set', () => {
    for (const raw of [{}, { temporalTaskQueues: [] }, { temporalAddress: '' }, { temporalTaskQueues: ' ', temporalNamespace: '' }]) {
      const { config, problems } = resolve(raw);
      assert.equal(config, undefined);
      assert.deepEqual(problems, []);
    }
  });

  it('fills every default and freezes the result', () => {
    const { config, problems } = resolve(minimal);
    assert.deepEqual(problems, []);
    assert.deepEqual(config, {
      address: 'localhost:7233',
      namespace: 'default',
      taskQueues: ['orders'],
      functionName: 'temporal-worker',
      maxWorkers: 10,
      maxWorkersTotal: undefined,
      workerLifetimeMs: 600_000,
      workerStartTimeoutMs: 30_000,
      pollIntervalMs: 5_000,
      backlogThreshold: 0,
      maxBacklogAgeMs: undefined,
      coolOffMs: 10_000,
      tasksPerWorker: 10,
      spillPriority: undefined,
      fairness: false,
      versionFunctions: {},
      workerSet: undefined,
      tls: undefined,
      apiKey: undefined,
    });
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config?.taskQueues));
  });

  it('accepts string values as they come from env vars and config files', () => {
    const { config, problems } = resolve({
      temporalAddress: 'temporal.internal:7233',
      temporalNamespace: 'payments',
      temporalTaskQueues: 'orders, refunds,orders',
      temporalFunction: 'arn:aws:lambda:eu-west-1:123456789012:function:worker:5',
      temporalMaxWorkers: '25',
      temporalWorkerLifetime: '15m',
      temporalPollInterval: '500ms',
      temporalBacklogThreshold: '3',
      temporalCoolOff: '0',
      temporalTasksPerWorker: 4,
    });
    assert.deepEqual(problems, []);
    assert.equal(config?.address, 'temporal.internal:7233');
    assert.equal(config?.namespace, 'payments');
    assert.deepEqual(config?.taskQueues, ['orders', 'refunds']);
    assert.equal(config?.functionName, 'arn:aws:lambda:eu-west-1:123456789012:function:worker:5');
    assert.equal(config?.maxWorkers, 25);
    assert.equal(config?.workerLifetimeMs, 900_000);
    assert.equal(config?.pollIntervalMs, 500);
    assert.equal(config?.backlogThreshold, 3);
    assert.equal(config?.coolOffMs, 0);
    assert.equal(config?.tasksPerWorker, 4);
  });

  it('merges repeated --temporal-task-queues flags', () => {
    const { config } = resolve({ ...minimal, temporalTaskQueues: ['a,b', 'c', 'a'] });
    assert.deepEqual(config?.taskQueues, ['a', 'b', 'c']);
  });

  it('reports every invalid option at once, naming the flag and the value', () => {
    const { config, problems } = resolve({
      temporalAddress: 'no-port',
      temporalTaskQueues: ['orders'],
      temporalMaxWorkers: 'abc',
      temporalWorkerLifetime: '20m',
      temporalPollInterval: '10',
      temporalBacklogThreshold: '-1',
      temporalCoolOff: 'soon',
      temporalTasksPerWorker: '0',
      temporalTls: 'maybe',
    });
    assert.equal(config, undefined);
    assert.deepEqual(problems, [
      '--temporal-address must be host:port, got "no-port"',
      '--temporal-function is required with --temporal-task-queues (env WORKERLESS_TEMPORAL_FUNCTION): the function that hosts the Temporal worker',
      '--temporal-max-workers must be an integer from 1 to 1000, got "abc"',
      '--temporal-worker-lifetime must be a duration from 1s to 15m (e.g. 500ms, 5s, 10m), got "20m"',
      '--temporal-backlog-threshold must be an integer from 0 to 1000000, got "-1"',
      '--temporal-cool-off must be a duration from 0 to 10m (e.g. 500ms, 5s, 10m), got "soon"',
      '--temporal-tasks-per-worker must be an integer from 1 to 100000, got "0"',
      '--temporal-tls must be true or false (on/off), got "maybe"',
    ]);
  });

  it('reads --temporal-spill-priority and --temporal-fairness, and refuses fairness without an age limit', () => {
    const ok = resolve({ ...minimal, temporalSpillPriority: '2', temporalFairness: 'on', temporalMaxBacklogAge: '30s' });
    assert.deepEqual(ok.problems, []);
    assert.equal(ok.config?.spillPriority, 2);
    assert.equal(ok.config?.fairness, true);
    const bad = resolve({ ...minimal, temporalSpillPriority: '0', temporalFairness: 'yes' });
    assert.equal(bad.config, undefined);
    assert.deepEqual(bad.problems, [
      '--temporal-spill-priority must be an integer from 1 to 100, got "0"',
      "--temporal-fairness needs --temporal-max-backlog-age: with fairness keys, spillover decides urgency from the oldest task's age",
    ]);
  });

  it('reads the worker-set options, and refuses them without --temporal-worker-set-max or with a minimum above it', () => {
    const ok = resolve({
      ...minimal,
      temporalWorkerSetMax: '8',
      temporalWorkerSetMin: '1',
      temporalWorkerCapacity: '2.5',
      temporalScaleUpCooldown: '15s',
    });
    assert.deepEqual(ok.problems, []);
    assert.deepEqual(ok.config?.workerSet, {
      min: 1,
      max: 8,
      capacityPerSec: 2.5,
      maxStep: 4,
      upCooldownMs: 15_000,
      downCooldownMs: 300_000,
      ecsService: undefined,
    });
    const orphan = resolve({ ...minimal, temporalScaleDownCooldown: '1m' }, fakeFiles, {
      temporalScaleDownCooldown: 'WORKERLESS_TEMPORAL_SCALE_DOWN_COOLDOWN',
    });
    assert.equal(orphan.config, undefined);
    assert.deepEqual(orphan.problems, [
      '--temporal-scale-down-cooldown is only used with --temporal-worker-set-max (none given), got "1m" (from WORKERLESS_TEMPORAL_SCALE_DOWN_COOLDOWN)',
    ]);
    const bad = resolve({ ...minimal, temporalWorkerSetMax: '2', temporalWorkerSetMin: '3', temporalWorkerCapacity: '0' });
    assert.equal(bad.config, undefined);
    assert.deepEqual(bad.problems, [
      '--temporal-worker-capacity must be a number from 0.001 to 100000, got "0"',
      '--temporal-worker-set-min must not exceed --temporal-worker-set-max (2), got "3"',
    ]);
  });

  it('reads --temporal-ecs-service as CLUSTER/SERVICE (a cluster ARN too), for one task queue only', () => {
    const arn = resolve({
      ...minimal,
      temporalWorkerSetMax: '4',
      temporalEcsService: 'arn:aws:ecs:us-east-1:123456789012:cluster/prod/workers',
    });
    assert.deepEqual(arn.problems, []);
    assert.deepEqual(arn.config?.workerSet?.ecsService, { cluster: 'arn:aws:ecs:us-east-1:123456789012:cluster/prod', service: 'workers' });
    const bad = resolve({ ...minimal, temporalWorkerSetMax: '4', temporalEcsService: 'workers/' });
    assert.deepEqual(bad.problems, ['--temporal-ecs-service must be CLUSTER/SERVICE, got "workers/"']);
    const two = resolve({ ...minimal, temporalTaskQueues: ['a', 'b'], temporalWorkerSetMax: '4', temporalEcsService: 'prod/workers' });
    assert.deepEqual(two.problems, [
      '--temporal-ecs-service sizes one task queue\'s workers; --temporal-task-queues names 2, got "prod/workers"',
    ]);
  });

  it('accepts a 10 s poll interval given as a bare number of seconds', () => {
    assert.equal(resolve({ ...minimal, temporalPollInterval: '10' }).config?.pollIntervalMs, 10_000);
  });

  it('reports every Temporal option given without task queues, with its value and origin, the API key masked', () => {
    const { config, problems, checked } = resolve(
      {
        temporalAddress: 'localhost:7233',
        temporalNamespace: 'prod',
        temporalFunction: 'w',
        temporalTls: 'false',
        temporalTlsCa: '/missing.pem',
        temporalApiKey: 'secret-key',
      },
      fakeFiles,
      { temporalNamespace: 'WORKERLESS_TEMPORAL_NAMESPACE', temporalApiKey: 'WORKERLESS_TEMPORAL_API_KEY' },
    );
    assert.equal(config, undefined);
    assert.deepEqual(problems, [
      '--temporal-address is only used with --temporal-task-queues (none given), got "localhost:7233"',
      '--temporal-namespace is only used with --temporal-task-queues (none given), got "prod" (from WORKERLESS_TEMPORAL_NAMESPACE)',
      '--temporal-function is only used with --temporal-task-queues (none given), got "w"',
      '--temporal-tls is only used with --temporal-task-queues (none given), got "false"',
      '--temporal-tls-ca is only used with --temporal-task-queues (none given), got "/missing.pem"',
      '--temporal-api-key is only used with --temporal-task-queues (none given), got "***" (from WORKERLESS_TEMPORAL_API_KEY)',
    ]);
    assert.deepEqual(checked, [], 'files of an unused option are not read');
  });

  it('reports task queues that name no queue, with the value', () => {
    assert.deepEqual(resolve({ ...minimal, temporalTaskQueues: ' , ' }).problems, [
      '--temporal-task-queues needs at least one task queue name, got " , "',
    ]);
  });

  it('requires --temporal-function with task queues', () => {
    assert.deepEqual(resolve({ temporalTaskQueues: 'orders' }).problems, [
      '--temporal-function is required with --temporal-task-queues (env WORKERLESS_TEMPORAL_FUNCTION): the function that hosts the Temporal worker',
    ]);
  });

  it('checks that the certificate, key and CA files can be read, naming the option, the path and the reason', () => {
    const ok = resolve({ ...minimal, temporalTlsCert: '/c.pem', temporalTlsKey: '/k.pem', temporalTlsCa: '/ca.pem' });
    assert.deepEqual(ok.problems, []);
    assert.deepEqual(ok.checked, ['/c.pem', '/k.pem', '/ca.pem']);
    assert.deepEqual(ok.config?.tls, { certPath: '/c.pem', keyPath: '/k.pem', caPath: '/ca.pem', serverName: undefined });

    const bad = resolve(
      { ...minimal, temporalTlsCert: '/c.pem', temporalTlsKey: '/secret/k.pem', temporalTlsCa: '/missing.pem' },
      (path) => (path === '/secret/k.pem' ? 'EACCES' : fakeFiles(path)),
      { temporalTlsCa: 'temporal-tls-ca in wl.yaml' },
    );
    assert.equal(bad.config, undefined);
    assert.deepEqual(bad.problems, [
      '--temporal-tls-key cannot read "/secret/k.pem": EACCES',
      '--temporal-tls-ca cannot read "/missing.pem": ENOENT (from temporal-tls-ca in wl.yaml)',
    ]);
  });

  it('an unreadable half of an mTLS pair is reported as unreadable and as half a pair', () => {
    assert.deepEqual(resolve({ ...minimal, temporalTlsCert: '/missing.pem' }).problems, [
      '--temporal-tls-cert cannot read "/missing.pem": ENOENT',
      '--temporal-tls-cert and --temporal-tls-key must be given together (mTLS needs both)',
    ]);
  });

  it('turns TLS on for an API key (Temporal Cloud) and keeps the key out of logs', () => {
    const { config, problems } = resolve({
      ...minimal,
      temporalAddress: 'eu-west-1.aws.api.temporal.io:7233',
      temporalNamespace: 'prod.a1b2c',
      temporalApiKey: 'secret-key',
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(config?.tls, { certPath: undefined, keyPath: undefined, caPath: undefined, serverName: undefined });
    assert.equal(config?.apiKey, 'secret-key');
    assert.ok(config);
    assert.equal(redactTemporalConfig(config).apiKey, '***');
    assert.doesNotMatch(JSON.stringify(redactTemporalConfig(config)), /secret-key/);
  });

  it('configures mTLS from a certificate and key pair', () => {
    const { config } = resolve({ ...minimal, temporalTlsCert: '/c.pem', temporalTlsKey: '/k.pem', temporalTlsServerName: 'tmprl' });
    assert.deepEqual(config?.tls, { certPath: '/c.pem', keyPath: '/k.pem', caPath: undefined, serverName: 'tmprl' });
  });

  it('rejects half an mTLS pair and TLS options with TLS turned off', () => {
    assert.deepEqual(resolve({ ...minimal, temporalTlsCert: '/c.pem' }).problems, [
      '--temporal-tls-cert and --temporal-tls-key must be given together (mTLS needs both)',
    ]);
    assert.deepEqual(resolve({ ...minimal, temporalApiKey: 'k', temporalTls: 'false' }).problems, [
      '--temporal-tls is false but an API key or TLS certificate option is set: those need TLS',
    ]);
  });

  it('reads the backlog age, the total worker limit, the start timeout and the version map', () => {
    const { config, problems } = resolve(
      {
        ...minimal,
        temporalMaxBacklogAge: '2s',
        temporalMaxWorkersTotal: '25',
        temporalWorkerStartTimeout: '45s',
        temporalVersions: ['v1=temporal-worker:1', ' v2 = temporal-worker:live ', 'a=b=arn:aws:lambda:eu-west-1:123456789012:function:w:3'],
      },
      fakeFiles,
      { temporalVersions: 'temporal-versions in wl.yaml' },
    );
    assert.deepEqual(problems, []);
    assert.equal(config?.maxBacklogAgeMs, 2_000);
    assert.equal(config?.maxWorkersTotal, 25);
    assert.equal(config?.workerStartTimeoutMs, 45_000);
    assert.deepEqual(config?.versionFunctions, {
      v1: 'temporal-worker:1',
      v2: 'temporal-worker:live',
      'a=b': 'arn:aws:lambda:eu-west-1:123456789012:function:w:3',
    });
    assert.ok(Object.isFrozen(config?.versionFunctions));
    // From an env var: the same list, comma-separated.
    assert.deepEqual(resolve({ ...minimal, temporalVersions: 'v1=fn:1,v2=fn:2' }).config?.versionFunctions, { v1: 'fn:1', v2: 'fn:2' });
  });

  it('keeps the start timeout within a short lifetime by default', () => {
    assert.equal(resolve({ ...minimal, temporalWorkerLifetime: '10s' }).config?.workerStartTimeoutMs, 10_000);
  });

  it('reports every invalid new option at once, with the value and where it came from', () => {
    const { config, problems } = resolve(
      {
        ...minimal,
        temporalMaxBacklogAge: '50ms',
        temporalMaxWorkersTotal: '0',
        temporalWorkerLifetime: '20s',
        temporalWorkerStartTimeout: '30s',
        temporalVersions: 'v1=fn:1,v1=fn:2,nofunction,=fn:3,v4=bad name',
      },
      fakeFiles,
      { temporalMaxWorkersTotal: 'WORKERLESS_TEMPORAL_MAX_WORKERS_TOTAL', temporalVersions: 'WORKERLESS_TEMPORAL_VERSIONS' },
    );
    assert.equal(config, undefined);
    assert.deepEqual(problems, [
      '--temporal-max-workers-total must be an integer from 1 to 100000, got "0" (from WORKERLESS_TEMPORAL_MAX_WORKERS_TOTAL)',
      '--temporal-worker-start-timeout must not exceed --temporal-worker-lifetime (20000 ms), got "30s"',
      '--temporal-max-backlog-age must be a duration from 100ms to 60m (e.g. 500ms, 5s, 10m), got "50ms"',
      '--temporal-versions names Build ID "v1" twice (from WORKERLESS_TEMPORAL_VERSIONS)',
      '--temporal-versions entries must be BUILD_ID=FUNCTION (e.g. v1=temporal-worker:1), got "nofunction" (from WORKERLESS_TEMPORAL_VERSIONS)',
      '--temporal-versions entries must be BUILD_ID=FUNCTION (e.g. v1=temporal-worker:1), got "=fn:3" (from WORKERLESS_TEMPORAL_VERSIONS)',
      '--temporal-versions entries must be BUILD_ID=FUNCTION (e.g. v1=temporal-worker:1), got "v4=bad name" (from WORKERLESS_TEMPORAL_VERSIONS)',
    ]);
  });

  it('allows plain TLS without certificates', () => {
    assert.ok(resolve({ ...minimal, temporalTls: true }).config?.tls);
    assert.equal(resolve({ ...minimal, temporalTls: 'false' }).config?.tls, undefined);
  });
});

describe('readableFile (the real FileCheck)', () => {
  it('passes a readable file and names the reason for a missing file, a directory or an unreadable file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wl-files-'));
    const pem = join(dir, 'ca.pem');
    writeFileSync(pem, '-----BEGIN CERTIFICATE-----\n');
    assert.equal(readableFile(pem), undefined);
    assert.equal(readableFile(join(dir, 'missing.pem')), 'ENOENT');
    assert.equal(readableFile(dir), 'EISDIR');
    const locked = join(dir, 'locked.pem');
    writeFileSync(locked, 'x');
    chmodSync(locked, 0o000);
    // root reads anything: only assert EACCES where permissions apply.
    if (process.getuid?.() !== 0) assert.equal(readableFile(locked), 'EACCES');
  });
});

describe('parseDurationMs', () => {
  it('reads ms, s, m and bare seconds', () => {
    assert.equal(parseDurationMs('250ms'), 250);
    assert.equal(parseDurationMs('1.5s'), 1_500);
    assert.equal(parseDurationMs('2m'), 120_000);
    assert.equal(parseDurationMs('3'), 3_000);
    assert.equal(parseDurationMs(0.5), 500);
    for (const bad of ['', 'x', '5h', '-1s', '1e3', null, Number.NaN, -1]) assert.equal(parseDurationMs(bad), undefined, String(bad));
  });
});

describe('TEMPORAL_OPTIONS', () => {
  it('are all WORKERLESS_TEMPORAL_* options in the Temporal group', () => {
    for (const d of TEMPORAL_OPTIONS) {
      assert.match(envName(d.flag), /^WORKERLESS_TEMPORAL_[A-Z_]+$/, d.flag);
      assert.equal(d.group, 'Temporal spillover (optional):');
    }
  });
});
