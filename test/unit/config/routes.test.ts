import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../../src/config/config.ts';
import { ROUTE_GROUPS } from '../../../src/config/options.ts';

const ENV = { AWS_REGION: 'us-east-1' };

function resolve(argv: string[], env: Record<string, string> = ENV) {
  const cli = collectOptions(argv, env, OPTIONS);
  const r = resolveConfig(cli.raw, env);
  return { problems: [...cli.problems, ...(r.ok ? [] : r.problems)], config: r.ok ? r.config : undefined };
}

function configFile(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'wl-routes-')), 'wl.yaml');
  writeFileSync(path, text);
  return path;
}

const TWO_ROUTES = `
http-port: 8080
routes:
  - function: payments-fn
    queues: payments:3,refunds:1
    concurrency: 20
    queue-options:
      refunds: { max-concurrency: 2 }
  - function: reports-fn
    queues: [reports]
    batch-size: 10
    retry-backoff: 5s
`;

describe('routes', () => {
  it('each route of the file gets its own function, queues and options; the rest of the file is daemon-wide', () => {
    const { problems, config } = resolve(['--config', configFile(TWO_ROUTES)]);
    assert.deepEqual(problems, []);
    assert.equal(config!.httpPort, 8080);
    const [payments, reports] = config!.routes;
    assert.equal(config!.routes.length, 2);
    assert.equal(payments!.functionName, 'payments-fn');
    assert.equal(payments!.queues.mode, 'weighted');
    assert.deepEqual([payments!.concurrency, payments!.batchSize, payments!.retryBackoff], [20, 1, undefined]);
    assert.equal(payments!.queueOptions.get('refunds')?.maxConcurrency, 2);
    assert.equal(reports!.functionName, 'reports-fn');
    assert.deepEqual(
      reports!.queues.queues.map((q) => q.ref),
      ['reports'],
    );
    assert.deepEqual([reports!.concurrency, reports!.batchSize, reports!.retryBackoff?.baseSec], [10, 10, 5]);
    assert.equal(reports!.queueOptions.size, 0);
  });

  it('route options given outside routes (flags, env, file) are defaults for every route; a route overrides them', () => {
    const { problems, config } = resolve(['--config', configFile(TWO_ROUTES), '--concurrency', '4', '--poll-for', '5'], {
      ...ENV,
      WORKERLESS_DELETE: 'never',
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(
      config!.routes.map((r) => [r.concurrency, r.pollForSec, r.deleteMode]),
      [
        [20, 5, 'never'],
        [4, 5, 'never'],
      ],
    );
  });

  it('an empty WORKERLESS_QUEUES or WORKERLESS_FUNCTION (as compose files pass) is unset, not a conflict with routes', () => {
    const { problems, config } = resolve(['--config', configFile(TWO_ROUTES)], { ...ENV, WORKERLESS_QUEUES: '', WORKERLESS_FUNCTION: ' ' });
    assert.deepEqual(problems, []);
    assert.equal(config!.routes.length, 2);
  });

  it('takes routes as JSON from the env var', () => {
    const routes = JSON.stringify([
      { function: 'a-fn', queues: 'a' },
      { function: 'b-fn', queues: 'b', concurrency: 3 },
    ]);
    const { problems, config } = resolve([], { ...ENV, WORKERLESS_ROUTES: routes });
    assert.deepEqual(problems, []);
    assert.deepEqual(
      config!.routes.map((r) => [r.functionName, r.concurrency]),
      [
        ['a-fn', 10],
        ['b-fn', 3],
      ],
    );
  });

  it('reports every problem at once, naming the route, the key and where it came from', () => {
    const file = configFile(`
routes:
  - function: a-fn
    queues: a
    concurrency: lots
    http-port: 9000
    colour: blue
  - queues: b
  - function: c-fn
    queues: a,c
  - function: a-fn
    queues: d
  - just-a-string
`);
    const { problems } = resolve(['--config', file, '--queues', 'x', '--batch-size', '0']);
    assert.deepEqual(problems, [
      '--queues cannot be used with routes: give it in each route',
      `routes[0] in ${file}: http-port applies to the whole daemon; set it outside routes`,
      `routes[0] in ${file}: unknown route option "colour" (route options: ${ROUTE_FLAGS})`,
      `--concurrency must be an integer from 1 to 10000, got "lots" (from routes[0].concurrency in ${file})`,
      // An invalid default is inherited by every route, and reported once.
      '--batch-size must be an integer from 1 to 10000, got "0"',
      `routes[1] in ${file} needs a function`,
      `routes[4] in ${file} must be a mapping of route options (function, queues, concurrency, ...), got "just-a-string"`,
      'queue a is in routes[0] and routes[2]: a queue belongs to one route',
      'routes[0] and routes[3] both invoke a-fn: give one route all of its queues',
    ]);
  });

  it('route options are the per-pool ones; connection, metrics and runtime options are daemon-wide', () => {
    for (const flag of ['function', 'queues', 'concurrency', 'batch-size', 'queue-options', 'retry-backoff', 'adaptive-concurrency'])
      assert.ok(ROUTE_FLAGS.split(', ').includes(flag), flag);
    for (const flag of ['http-port', 'region', 'metrics', 'shutdown-timeout', 'routes', 'config', 'temporal-function'])
      assert.ok(!ROUTE_FLAGS.split(', ').includes(flag), flag);
  });

  it('a route sets its own growth cap and backlog gauges (Managed Instances beside an ordinary function)', () => {
    const file = configFile(
      [
        'routes:',
        '  - { function: mi-fn, queues: [burst], adaptive-concurrency: on, min-concurrency: 8, concurrency: 64, concurrency-growth: 2x/5m }',
        '  - { function: plain-fn, queues: [steady], backlog-gauges: off }',
      ].join('\n'),
    );
    const { problems, config } = resolve(['--config', file]);
    assert.deepEqual(problems, []);
    const [mi, plain] = config!.routes;
    assert.deepEqual(mi!.adaptiveConcurrency, { minConcurrency: 8, growth: { factor: 2, windowMs: 300_000 } });
    assert.equal(mi!.backlogGauges, true);
    assert.equal(plain!.adaptiveConcurrency, undefined);
    assert.equal(plain!.backlogGauges, false);
  });

  it('routes must be a non-empty list', () => {
    const file = configFile('routes: { function: f, queues: q }\n');
    assert.deepEqual(resolve(['--config', file]).problems, [
      `routes must be a non-empty list of mappings with function and queues, got {"function":"f","queues":"q"} (from routes in ${file})`,
    ]);
    assert.deepEqual(resolve([], { ...ENV, WORKERLESS_ROUTES: '[' }).problems, [
      '--routes must be JSON (or a mapping in the --config file), got "[" (from WORKERLESS_ROUTES)',
    ]);
  });

  it('each route says whether its function is tenant-isolated (--tenant-id-from), and where its tenant ids come from', () => {
    const file = configFile(`
routes:
  - { function: saas-fn, queues: jobs, tenant-id-from: group }
  - { function: other-fn, queues: other }
  - { function: third-fn, queues: third, tenant-id-from: "attribute:tenant" }
`);
    const { problems, config } = resolve(['--config', file]);
    assert.deepEqual(problems, []);
    assert.deepEqual(
      config!.routes.map((r) => r.tenantIdFrom),
      [{ kind: 'group' }, undefined, { kind: 'attribute', name: 'tenant' }],
    );
    const bad = resolve(['--config', configFile('routes:\n  - { function: f, queues: q, tenant-id-from: tenant }\n')]);
    assert.equal(bad.problems.length, 1);
    assert.match(
      bad.problems[0]!,
      /^--tenant-id-from must be group or attribute:NAME .*, got "tenant" \(from routes\[0\]\.tenant-id-from in /,
    );
  });
});

/** The route options as the error lists them: every option of the SQS dispatch and delivery-control groups. */
const ROUTE_FLAGS = OPTIONS.filter((d) => ROUTE_GROUPS.includes(d.group))
  .map((d) => d.flag)
  .join(', ');
