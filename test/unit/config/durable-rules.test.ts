import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../../src/config/config.ts';
import { durableProblems } from '../../../src/config/durable-rules.ts';

const ENV = { AWS_REGION: 'us-east-1' };
const ONE = { batchSize: 1, batchWindowMs: 0, deleteMode: 'on-success' } as const;

function resolve(argv: string[], env: Record<string, string> = ENV) {
  const cli = collectOptions(argv, env, OPTIONS);
  const r = resolveConfig(cli.raw, env);
  return { problems: [...cli.problems, ...(r.ok ? [] : r.problems)], config: r.ok ? r.config : undefined };
}

describe('durable routes: configuration rules', () => {
  it('off takes anything; sync and async take one message per invocation, deleted by workerless', () => {
    assert.deepEqual(durableProblems('off', { batchSize: 10, batchWindowMs: 5_000, deleteMode: 'never' }), []);
    assert.deepEqual(durableProblems('sync', ONE), []);
    assert.deepEqual(durableProblems('async', ONE), []);
  });

  it('a batch of more than one message, a batching window or --delete never is an error naming option and value', () => {
    assert.deepEqual(durableProblems('async', { batchSize: 10, batchWindowMs: 2_000, deleteMode: 'never' }), [
      '--durable async starts one execution per message: --batch-size must be 1, got 10',
      '--durable async starts one execution per message: --batch-window must be 0, got 2000ms',
      '--durable async deletes each message once its execution has started (async) or ended (sync): --delete must be on-success, got never',
    ]);
  });

  it('says where the values came from', () => {
    assert.deepEqual(
      durableProblems('sync', { ...ONE, batchSize: 5 }, { durable: 'WORKERLESS_DURABLE', batchSize: 'routes[0].batch-size in wl.yaml' }),
      [
        '--durable sync (from WORKERLESS_DURABLE) starts one execution per message: --batch-size must be 1, got 5 (from routes[0].batch-size in wl.yaml)',
      ],
    );
  });

  it('through the flags: the default is off, --durable async with the defaults is valid, with --batch-size 10 it is not', () => {
    const base = ['--function', 'fn', '--queues', 'q'];
    assert.equal(resolve(base).config!.routes[0]!.durable, 'off');
    assert.equal(resolve([...base, '--durable', 'async']).config!.routes[0]!.durable, 'async');
    assert.deepEqual(resolve([...base, '--durable', 'async', '--batch-size', '10']).problems, [
      '--durable async starts one execution per message: --batch-size must be 1, got 10',
    ]);
    assert.deepEqual(resolve([...base, '--durable', 'later']).problems, ['--durable must be one of off, sync, async, got "later"']);
  });

  it('per route in the --config file: one route durable, the other batching', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'wl-durable-')), 'wl.yaml');
    writeFileSync(
      path,
      `routes:
  - { function: orders-fn, queues: orders, durable: async }
  - { function: reports-fn, queues: reports, batch-size: 10 }
  - { function: bad-fn, queues: bad, durable: sync, batch-size: 2 }
`,
    );
    const { problems } = resolve(['--config', path]);
    assert.deepEqual(problems, [
      `--durable sync (from routes[2].durable in ${path}) starts one execution per message: --batch-size must be 1, got 2 (from routes[2].batch-size in ${path})`,
    ]);
    writeFileSync(
      path,
      `routes:
  - { function: orders-fn, queues: orders, durable: async }
  - { function: reports-fn, queues: reports, batch-size: 10 }
`,
    );
    const { config } = resolve(['--config', path]);
    assert.deepEqual(
      config!.routes.map((r) => [r.functionName, r.durable, r.batchSize]),
      [
        ['orders-fn', 'async', 1],
        ['reports-fn', 'off', 10],
      ],
    );
  });
});
