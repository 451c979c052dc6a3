import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../../src/config/config.ts';
import { resolveDeliveryConfig } from '../../../src/config/delivery-options.ts';
import { matchesRecord } from '../../../src/receive/event-filter.ts';
import { retryBackoffFor } from '../../../src/settle/retry-backoff.ts';
import { addDefaults } from '../../../src/config/with-defaults.ts';
import { QUEUE_SETTINGS } from '../../../src/config/options.ts';
import { parseQueueList } from '../../../src/config/queue-list.ts';

const ENV = { AWS_REGION: 'us-east-1' };
const BASE = ['--function', 'fn', '--queues', 'high,low,https://sqs.us-east-1.amazonaws.com/123456789012/orders'];

function resolve(argv: string[], env: Record<string, string> = ENV) {
  const cli = collectOptions([...BASE, ...argv], env, OPTIONS);
  const r = resolveConfig(cli.raw, env);
  // The delivery options are route options: with the flags, the one route.
  return { problems: [...cli.problems, ...(r.ok ? [] : r.problems)], config: r.ok ? r.config.routes[0] : undefined };
}

/** The delivery options alone, read as a route reads them (src/config/routes.ts) with --concurrency 10. */
function delivery(argv: string[], env: Record<string, string> = ENV) {
  const cli = collectOptions([...BASE, ...argv], env, OPTIONS);
  const r = addDefaults(cli.raw);
  const config = resolveDeliveryConfig(r, parseQueueList(r.read('queues')!).list, 10);
  return { problems: [...cli.problems, ...r.problems], config };
}

function configFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'wl-delivery-'));
  const path = join(dir, 'wl.yaml');
  writeFileSync(path, text);
  return path;
}

describe('delivery options', () => {
  it('everything is off by default', () => {
    const { config } = resolve([]);
    assert.equal(config!.retryBackoff, undefined);
    assert.equal(config!.queueOptions.size, 0);
  });

  it('--adaptive-concurrency on, with its floor (default 1), from flags or env', () => {
    assert.equal(resolve([]).config!.adaptiveConcurrency, undefined);
    assert.equal(resolve(['--adaptive-concurrency', 'off']).config!.adaptiveConcurrency, undefined);
    assert.deepEqual(resolve(['--adaptive-concurrency', 'on']).config!.adaptiveConcurrency, { minConcurrency: 1 });
    assert.deepEqual(
      resolve([], { ...ENV, WORKERLESS_ADAPTIVE_CONCURRENCY: 'on', WORKERLESS_MIN_CONCURRENCY: '4' }).config!.adaptiveConcurrency,
      { minConcurrency: 4 },
    );
  });

  it('--adaptive-concurrency problems, all at once', () => {
    assert.deepEqual(resolve(['--min-concurrency', '3']).problems, [
      '--min-concurrency is only used with --adaptive-concurrency on, got "3"',
    ]);
    assert.deepEqual(resolve(['--adaptive-concurrency', 'on', '--concurrency', '5', '--min-concurrency', '6']).problems, [
      '--min-concurrency must not be above --concurrency (5), got 6',
    ]);
    assert.deepEqual(resolve(['--adaptive-concurrency', 'maybe', '--min-concurrency', '0']).problems.length, 2);
  });

  it('--concurrency-growth: off by default; FACTORx/WINDOW with --adaptive-concurrency; a clear problem otherwise', () => {
    assert.deepEqual(resolve(['--adaptive-concurrency', 'on', '--concurrency-growth', 'off']).config!.adaptiveConcurrency, {
      minConcurrency: 1,
    });
    assert.deepEqual(
      resolve(['--adaptive-concurrency', 'on', '--min-concurrency', '8', '--concurrency', '64', '--concurrency-growth', '2x/5m']).config!
        .adaptiveConcurrency,
      { minConcurrency: 8, growth: { factor: 2, windowMs: 300_000 } },
    );
    assert.deepEqual(resolve(['--adaptive-concurrency', 'on', '--concurrency-growth', '1.5x/90s']).config!.adaptiveConcurrency?.growth, {
      factor: 1.5,
      windowMs: 90_000,
    });
    assert.deepEqual(resolve(['--concurrency-growth', '2x/5m']).problems, [
      '--concurrency-growth is only used with --adaptive-concurrency on, got "2x/5m"',
    ]);
    for (const bad of ['2', 'x2/5m', '2x', '2x/5h']) {
      assert.deepEqual(resolve(['--adaptive-concurrency', 'on', '--concurrency-growth', bad]).problems, [
        `--concurrency-growth must be off or FACTORx/WINDOW (e.g. 2x/5m), got "${bad}"`,
      ]);
    }
    for (const bad of ['1x/5m', '11x/5m', '2x/500ms', '2x/61m']) {
      assert.deepEqual(resolve(['--adaptive-concurrency', 'on', '--concurrency-growth', bad]).problems, [
        `--concurrency-growth must have a factor above 1 up to 10 and a window from 1s to 1h, got "${bad}"`,
      ]);
    }
  });

  it('--retry-backoff with its defaults, and every field set', () => {
    assert.deepEqual(resolve(['--retry-backoff', '5s']).config!.retryBackoff, { baseSec: 5, maxSec: 900, jitter: 0.5 });
    assert.deepEqual(resolve(['--retry-backoff', '2s', '--retry-backoff-max', '1m', '--retry-backoff-jitter', '0']).config!.retryBackoff, {
      baseSec: 2,
      maxSec: 60,
      jitter: 0,
    });
    assert.deepEqual(resolve([], { ...ENV, WORKERLESS_RETRY_BACKOFF: '20m' }).config!.retryBackoff, {
      baseSec: 1200,
      maxSec: 1200,
      jitter: 0.5,
    });
  });

  it('--retry-backoff problems, all at once', () => {
    assert.deepEqual(resolve(['--retry-backoff-max', '1m', '--retry-backoff-jitter', '2']).problems, [
      '--retry-backoff-jitter must be a number from 0 to 1, got "2"',
      '--retry-backoff-max is only used with --retry-backoff (none given), got "1m"',
      '--retry-backoff-jitter is only used with --retry-backoff (none given), got "2"',
    ]);
    assert.deepEqual(resolve(['--retry-backoff', '10s', '--retry-backoff-max', '5s']).problems, [
      '--retry-backoff-max must not be shorter than --retry-backoff (10s), got 5s',
    ]);
    assert.deepEqual(resolve(['--retry-backoff', '13h']).problems, [
      '--retry-backoff must be a duration from 1s to 720m (e.g. 500ms, 5s, 10m), got "13h"',
    ]);
  });

  it('per-queue flags by queue name or URL', () => {
    const { config, problems } = resolve([
      '--queue-max-concurrency',
      'high=4,orders=2',
      '--queue-min-concurrency',
      'low=2',
      '--queue-rate',
      'https://sqs.us-east-1.amazonaws.com/123456789012/orders=2.5',
    ]);
    assert.deepEqual(problems, []);
    assert.deepEqual(Object.fromEntries(config!.queueOptions), {
      high: { maxConcurrency: 4, filterAction: 'delete' },
      orders: { maxConcurrency: 2, ratePerSec: 2.5, filterAction: 'delete' },
      low: { minConcurrency: 2, filterAction: 'delete' },
    });
  });

  it('queue-options in the config file, with flags winning field by field', () => {
    const path = configFile(
      [
        'queue-options:',
        '  high: { max-concurrency: 8, rate: 10, rate-burst: 5 }',
        '  low:',
        '    min-concurrency: 1',
        '    filter-action: leave',
        '    filters:',
        '      - body: { type: [report] }',
        '      - \'{"body": [{"prefix": "Result: "}]}\'',
      ].join('\n'),
    );
    const { config, problems } = resolve(['--config', path, '--queue-max-concurrency', 'high=3']);
    assert.deepEqual(problems, []);
    const high = config!.queueOptions.get('high')!;
    assert.deepEqual({ ...high }, { maxConcurrency: 3, ratePerSec: 10, burst: 5, filterAction: 'delete' });
    const low = config!.queueOptions.get('low')!;
    assert.equal(low.minConcurrency, 1);
    assert.equal(low.filterAction, 'leave');
    assert.equal(matchesRecord(low.filter!, { body: '{"type":"report"}' }), true);
    assert.equal(matchesRecord(low.filter!, { body: 'Result: 1' }), true);
    assert.equal(matchesRecord(low.filter!, { body: '{"type":"other"}' }), false);
  });

  it("accepts the trigger's FilterCriteria as is, and JSON in the env var", () => {
    const json = JSON.stringify({ high: { filters: { Filters: [{ Pattern: '{"body":{"a":["b"]}}' }] } } });
    const { config, problems } = resolve([], { ...ENV, WORKERLESS_QUEUE_OPTIONS: json });
    assert.deepEqual(problems, []);
    assert.equal(matchesRecord(config!.queueOptions.get('high')!.filter!, { body: '{"a":"b"}' }), true);
  });

  it('reports every per-queue problem at once, naming the queue and where it came from', () => {
    const path = configFile(
      [
        'queue-options:',
        '  nope: { max-concurrency: 1 }',
        '  high: { max-concurrency: 0, rate: -1, colour: red, filter-action: drop, filters: [{ body: { a: [{ cidr: x }] } }] }',
        '  low: { min-concurrency: 5, max-concurrency: 2, rate-burst: 3 }',
      ].join('\n'),
    );
    const { problems } = resolve(['--config', path, '--queue-rate', 'high', '--queue-min-concurrency', 'orders=7']);
    assert.deepEqual(problems, [
      `--queue-options (from queue-options in ${path}) names queue "nope", which is not in --queues`,
      `--queue-options (from queue-options in ${path}) high: max-concurrency must be an integer from 1 to 10000, got 0`,
      `--queue-options (from queue-options in ${path}) high: rate must be a number of invocations per second above 0, at most 10000, got -1`,
      `--queue-options (from queue-options in ${path}) high: unknown setting "colour" (known: max-concurrency, min-concurrency, rate, rate-burst, filters, filter-action, retry-backoff, retry-backoff-max, retry-backoff-jitter)`,
      `--queue-options (from queue-options in ${path}) high: filter-action must be delete or leave, got "drop"`,
      `--queue-options (from queue-options in ${path}) high: filters: pattern 1: body.a: unknown operator "cidr" (known: prefix, suffix, equals-ignore-case, wildcard, numeric, exists, anything-but)`,
      '--queue-rate entries take the form name=value, got "high"',
      'queue "low": min-concurrency 5 is above its max-concurrency 2',
      'queue "low": rate-burst is only used with a rate',
      "the queues' min-concurrency add up to 12, more than --concurrency 10: the reserved loops must fit in the pool",
    ]);
  });

  it('a queue-options key and the name=N flag that sets it check the one range of the options table', () => {
    const perQueue = OPTIONS.flatMap((d) => ('perQueue' in d ? [{ flag: d.flag, key: d.perQueue }] : []));
    assert.deepEqual(
      perQueue.map((p) => p.key),
      ['max-concurrency', 'min-concurrency', 'rate'],
    );
    for (const { flag, key } of perQueue) {
      const def = QUEUE_SETTINGS.find((s) => s.key === key)!;
      assert.ok(def.kind === 'integer' || def.kind === 'rate');
      const below = def.kind === 'rate' ? 0 : def.min - 1;
      for (const value of [def.max, below, def.max + 1]) {
        // A pool of the most loops, so that a reservation of the most is not refused for the pool's size.
        const viaFlag = resolve(['--concurrency', '10000', `--${flag}`, `high=${value}`]);
        const viaFile = resolve(['--concurrency', '10000', '--queue-options', JSON.stringify({ high: { [key]: value } })]);
        const ok: boolean = value === def.max;
        assert.equal(viaFlag.problems.length === 0, ok, `--${flag} high=${value}: ${viaFlag.problems.join('; ')}`);
        assert.equal(viaFile.problems.length === 0, ok, `queue-options ${key}: ${value}: ${viaFile.problems.join('; ')}`);
        if (ok) {
          assert.deepEqual(viaFlag.config!.queueOptions.get('high'), viaFile.config!.queueOptions.get('high'));
          continue;
        }
        // The same words for the range, from the one definition.
        const range = (p: string) => /must be (.*), got/.exec(p)?.[1];
        assert.equal(range(viaFlag.problems[0]!), range(viaFile.problems[0]!));
        assert.match(viaFlag.problems[0]!, new RegExp(`${def.max}`));
      }
    }
  });

  it('filters with $or from the config file; an invalid $or is a config error that names the queue and the place', () => {
    const high = [
      'queue-options:',
      '  high:',
      '    filters:',
      '      - body: { type: [order], $or: [{ amount: [{ numeric: [">=", 100] }] }, { priority: [high] }] }',
    ];
    const path = configFile(
      [
        ...high,
        '  low:',
        '    filters:',
        '      - { $or: [{ body: { a: [x] } }] }',
        '      - { body: { $or: { b: [y] } } }',
        '      - { body: { $or: [{ c: [z] }, [d]] } }',
      ].join('\n'),
    );
    const { problems } = resolve(['--config', path]);
    const where = `--queue-options (from queue-options in ${path}) low: filters`;
    const needs = 'must be a list of at least 2 alternatives, each an object of fields';
    assert.deepEqual(problems, [
      `${where}: pattern 1: $or ${needs}, got [{"body":{"a":["x"]}}]`,
      `${where}: pattern 2: body.$or ${needs}, got {"b":["y"]}`,
      `${where}: pattern 3: body.$or[1] must be a non-empty object of fields, got ["d"]`,
    ]);
    const valid = delivery(['--config', configFile(high.join('\n'))]);
    assert.deepEqual(valid.problems, []);
    const filter = valid.config.queueOptions.get('high')!.filter!;
    assert.equal(matchesRecord(filter, { body: '{"type":"order","priority":"high"}' }), true);
    assert.equal(matchesRecord(filter, { body: '{"type":"order","amount":120}' }), true);
    assert.equal(matchesRecord(filter, { body: '{"type":"order","amount":99}' }), false);
  });

  describe('per-queue retry back-off (queue-options)', () => {
    it("a queue's own settings, the rest from the flags; queues without any keep the flags' policy", () => {
      const path = configFile(
        [
          'queue-options:',
          '  high: { retry-backoff: 2s, retry-backoff-max: 5m }',
          '  low: { retry-backoff-jitter: 0 }',
          '  orders: { retry-backoff: off, max-concurrency: 2 }',
        ].join('\n'),
      );
      const { config, problems } = delivery(['--config', path, '--retry-backoff', '10s', '--retry-backoff-jitter', '0.2']);
      assert.deepEqual(problems, []);
      assert.deepEqual(config.retryBackoff, { baseSec: 10, maxSec: 900, jitter: 0.2 });
      assert.deepEqual(config.queueOptions.get('high')!.retryBackoff, { baseSec: 2, maxSec: 300, jitter: 0.2 });
      assert.deepEqual(config.queueOptions.get('low')!.retryBackoff, { baseSec: 10, maxSec: 900, jitter: 0 });
      assert.equal(config.queueOptions.get('orders')!.retryBackoff, 'off');
      // What the dispatcher applies to each queue.
      const policyOf = (name: string) => retryBackoffFor(config.queueOptions.get(name)?.retryBackoff, config.retryBackoff);
      assert.deepEqual(policyOf('high'), { baseSec: 2, maxSec: 300, jitter: 0.2 });
      assert.equal(policyOf('orders'), undefined);
      assert.deepEqual(policyOf('elsewhere'), config.retryBackoff);
    });

    it("a queue may have a back-off when the flags have none; its own maximum and jitter default as the flags' do", () => {
      const path = configFile(['queue-options:', '  high: { retry-backoff: 30m }', '  low: { retry-backoff: 1s }'].join('\n'));
      const { config, problems } = delivery(['--config', path]);
      assert.deepEqual(problems, []);
      assert.equal(config.retryBackoff, undefined);
      assert.deepEqual(config.queueOptions.get('high')!.retryBackoff, { baseSec: 1800, maxSec: 1800, jitter: 0.5 });
      assert.deepEqual(config.queueOptions.get('low')!.retryBackoff, { baseSec: 1, maxSec: 900, jitter: 0.5 });
      assert.equal(retryBackoffFor(config.queueOptions.get('orders')?.retryBackoff, config.retryBackoff), undefined);
      // An inherited maximum below the queue's own first delay is raised to it, as the unset default is.
      const lifted = delivery(['--config', path, '--retry-backoff', '1s', '--retry-backoff-max', '10m']);
      assert.deepEqual(lifted.problems, []);
      assert.deepEqual(lifted.config.queueOptions.get('high')!.retryBackoff, { baseSec: 1800, maxSec: 1800, jitter: 0.5 });
    });

    it('JSON in WORKERLESS_QUEUE_OPTIONS (numbers are seconds, as in the file)', () => {
      const json = JSON.stringify({ high: { 'retry-backoff': 3, 'retry-backoff-max': '1m' } });
      const { config, problems } = delivery([], { ...ENV, WORKERLESS_QUEUE_OPTIONS: json });
      assert.deepEqual(problems, []);
      assert.deepEqual(config.queueOptions.get('high')!.retryBackoff, { baseSec: 3, maxSec: 60, jitter: 0.5 });
    });

    it("the flags' checks, each problem naming the queue and where it came from, all at once", () => {
      const path = configFile(
        [
          'queue-options:',
          '  high: { retry-backoff: 13h, retry-backoff-jitter: 2 }',
          '  low: { retry-backoff: 10s, retry-backoff-max: 5s }',
          '  orders: { retry-backoff-max: 1m }',
        ].join('\n'),
      );
      const from = (queue: string) => `(from queue "${queue}" in queue-options in ${path})`;
      assert.deepEqual(delivery(['--config', path]).problems, [
        `--retry-backoff must be a duration from 1s to 720m (e.g. 500ms, 5s, 10m), got "13h" ${from('high')}`,
        `--retry-backoff-jitter must be a number from 0 to 1, got "2" ${from('high')}`,
        'queue "low": --retry-backoff-max must not be shorter than --retry-backoff (10s), got 5s',
        `--retry-backoff-max is only used with --retry-backoff (none given), got "1m" ${from('orders')}`,
      ]);
      // With --retry-backoff given, a queue's maximum alone is enough.
      assert.deepEqual(delivery(['--config', path, '--retry-backoff', '1s']).problems.slice(3), []);
      const off = configFile(['queue-options:', '  high: { retry-backoff: off, retry-backoff-jitter: 0.1 }'].join('\n'));
      assert.deepEqual(delivery(['--config', off, '--retry-backoff', '1s']).problems, [
        `--retry-backoff-jitter is not used: queue "high" has retry-backoff off, got "0.1" (from queue "high" in queue-options in ${off})`,
      ]);
    });

    it('through resolveConfig too: an invalid queue back-off fails the config', () => {
      const path = configFile(['queue-options:', '  high: { retry-backoff: soon }'].join('\n'));
      assert.deepEqual(resolve(['--config', path]).problems, [
        `--retry-backoff must be a duration from 1s to 720m (e.g. 500ms, 5s, 10m), got "soon" (from queue "high" in queue-options in ${path})`,
      ]);
    });
  });

  it('a --queue-options flag that is not JSON is reported as such', () => {
    assert.deepEqual(resolve(['--queue-options', '{oops']).problems, [
      '--queue-options must be JSON (or a mapping in the --config file), got "{oops"',
    ]);
  });
});
