// --queues-prefix, --queues-tag and --queues-refresh: a route whose queues are found, not listed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../../src/config/config.ts';
import { parseQueueTag } from '../../../src/config/queue-list.ts';

const ENV = { AWS_REGION: 'us-east-1' };

function resolve(argv: string[]) {
  const cli = collectOptions(argv, ENV, OPTIONS);
  const r = resolveConfig(cli.raw, ENV);
  return { problems: [...cli.problems, ...(r.ok ? [] : r.problems)], config: r.ok ? r.config : undefined };
}

describe('queues found, not listed', () => {
  it('a prefix, a tag, or both make a weighted route with no listed queue, re-read every --queues-refresh', () => {
    const { problems, config } = resolve(['--function', 'fn', '--queues-prefix', 'tenant-', '--queues-tag', 'workerless=payments']);
    assert.deepEqual(problems, []);
    const route = config!.routes[0]!;
    assert.deepEqual(route.discovery, { prefix: 'tenant-', tag: { key: 'workerless', value: 'payments' } });
    assert.deepEqual(route.queues, { mode: 'weighted', queues: [] });
    assert.equal(route.queuesRefreshMs, 60_000);
    const tagOnly = resolve(['--function', 'fn', '--queues-tag', 'team=a b', '--queues-refresh', '2s']).config!.routes[0]!;
    assert.deepEqual(tagOnly.discovery, { prefix: undefined, tag: { key: 'team', value: 'a b' } });
    assert.equal(tagOnly.queuesRefreshMs, 2_000);
  });

  it('an invalid prefix or tag is a problem naming the flag and the value', () => {
    for (const [flag, value] of [
      ['--queues-prefix', 'tenant.'],
      ['--queues-prefix', 'x'.repeat(81)],
      ['--queues-tag', 'no-equals'],
      ['--queues-tag', '=value'],
      ['--queues-tag', 'aws:reserved=1'],
      ['--queues-tag', 'key=bad*value'],
    ] as const) {
      const { problems } = resolve(['--function', 'fn', flag, value]);
      assert.equal(problems.length, 1, `${flag} ${value}: ${JSON.stringify(problems)}`);
      assert.ok(problems[0]!.startsWith(`${flag} must be`) && problems[0]!.includes(JSON.stringify(value)), problems[0]);
    }
  });

  it('--queues with a prefix or tag is a problem: list the queues, or find them', () => {
    const { problems } = resolve(['--function', 'fn', '--queues', 'a', '--queues-prefix', 'tenant-']);
    assert.deepEqual(problems, ['--queues cannot be used with --queues-prefix or --queues-tag: list the queues, or find them']);
  });

  it('queue-options may name a queue that is not listed: found queues are not known yet', () => {
    const { problems, config } = resolve(['--function', 'fn', '--queues-prefix', 't-', '--queue-max-concurrency', 't-1=2']);
    assert.deepEqual(problems, []);
    assert.equal(config!.routes[0]!.queueOptions.get('t-1')?.maxConcurrency, 2);
  });

  it('the tag splits at the first =', () => {
    assert.deepEqual(parseQueueTag('k=v=w'), { key: 'k', value: 'v=w' });
    assert.deepEqual(parseQueueTag('k='), { key: 'k', value: '' });
  });
});
