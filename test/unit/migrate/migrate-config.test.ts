// The migration's core: event source mappings (as the Lambda API reference's EventSourceMappingConfiguration
// describes them) and their queues to the config, and what it says differs. Every config produced here also goes
// through the daemon's own reading (daemonProblems), so a test that builds a config the daemon refuses fails.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { configText } from '../../../src/migrate/config-text.ts';
import { daemonProblems } from '../../../src/migrate/daemon-check.ts';
import { migrateMappings, type Migration } from '../../../src/migrate/migrate-config.ts';
import type { QueueFacts, SqsMapping } from '../../../src/migrate/migrate-ports.ts';

const ACCOUNT = '123456789012';
const FN = `arn:aws:lambda:eu-west-1:${ACCOUNT}:function:orders-fn`;
const queueArn = (name: string, account = ACCOUNT) => `arn:aws:sqs:eu-west-1:${account}:${name}`;

function mapping(over: Partial<SqsMapping> & { queue: string }): SqsMapping {
  const { queue, ...rest } = over;
  return {
    uuid: `uuid-${queue}`,
    functionArn: FN,
    eventSourceArn: queueArn(queue),
    state: 'Enabled',
    batchSize: 10,
    windowSec: 0,
    filterPatterns: [],
    reportBatchItemFailures: true,
    eventCountMetrics: false,
    ...rest,
  };
}

function facts(...mappings: SqsMapping[]): Map<string, QueueFacts> {
  return new Map(
    mappings.map((m) => {
      const name = m.eventSourceArn.split(':').pop()!;
      const account = m.eventSourceArn.split(':')[4]!;
      return [m.eventSourceArn, { arn: m.eventSourceArn, url: `https://sqs.eu-west-1.amazonaws.com/${account}/${name}` }];
    }),
  );
}

/** Migrates, asserts the daemon takes the printed file, and returns the migration. */
function migrated(...mappings: SqsMapping[]): Migration {
  const result = migrateMappings('orders-fn', mappings, facts(...mappings));
  assert.ok(result.ok, result.ok ? '' : result.problem);
  const text = configText('orders-fn', result.migration);
  assert.deepEqual(daemonProblems(text), [], text);
  assert.deepEqual(parse(text), result.migration.config, 'the YAML holds the config');
  return result.migration;
}

const about = (m: Migration, word: RegExp) => m.differences.filter((d) => word.test(d));

describe('migrateMappings: one mapping', () => {
  it('carries batch size, window, filters and MaximumConcurrency over, metrics as the mapping has them', () => {
    const pattern = { body: { type: ['order'], amount: [{ numeric: ['>', 0] }] } };
    const m = migrated(
      mapping({
        queue: 'orders',
        batchSize: 50,
        windowSec: 5,
        filterPatterns: [JSON.stringify(pattern)],
        maxConcurrency: 4,
        eventCountMetrics: true,
      }),
    );
    assert.deepEqual(m.config, {
      region: 'eu-west-1',
      name: 'orders-fn',
      metrics: true,
      function: 'orders-fn',
      queues: 'orders',
      concurrency: 4,
      'batch-size': 50,
      'batch-window': '5s',
      'queue-options': { orders: { filters: [pattern] } },
    });
    // https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html: the trigger filters before batching.
    assert.equal(about(m, /filters apply to the received batch/).length, 1);
    assert.equal(about(m, /MaximumConcurrency/).length, 0);
  });

  it('without MaximumConcurrency leaves concurrency at the daemon default and says why', () => {
    const m = migrated(mapping({ queue: 'orders' }));
    assert.equal(m.config['concurrency'], undefined);
    assert.equal(m.config['metrics'], false);
    assert.equal(about(m, /no MaximumConcurrency, so the trigger scales up to 1,250/).length, 1);
    assert.equal(about(m, /filters apply/).length, 0, 'no filter, no filter caveat');
  });

  it('without ReportBatchItemFailures says the trigger deletes the whole batch', () => {
    const m = migrated(mapping({ queue: 'orders', reportBatchItemFailures: false, maxConcurrency: 2 }));
    assert.equal(about(m, /no ReportBatchItemFailures/).length, 1);
    assert.equal(
      migrated(mapping({ queue: 'orders', maxConcurrency: 2 })).differences.some((d) => /ReportBatchItemFailures/.test(d)),
      false,
    );
  });

  it('notes the redrive policy, a disabled mapping, provisioned mode and encrypted filters', () => {
    const m1 = mapping({
      queue: 'orders',
      state: 'Disabled',
      provisionedPollers: { min: 2, max: 10 },
      filterKmsKeyArn: 'arn:aws:kms:eu-west-1:123456789012:key/k',
      filterPatterns: ['{"body":{"type":["order"]}}'],
    });
    const queues = facts(m1);
    queues.set(m1.eventSourceArn, {
      ...queues.get(m1.eventSourceArn)!,
      redrive: { deadLetterTargetArn: queueArn('orders-dlq'), maxReceiveCount: 5 },
    });
    const result = migrateMappings('orders-fn', [m1], queues);
    assert.ok(result.ok);
    assert.deepEqual(result.migration.notes, ['queue orders: SQS moves a message to orders-dlq after 5 receives (its RedrivePolicy)']);
    const d = result.migration.differences;
    assert.ok(d.some((x) => x.startsWith('queue orders: its mapping uuid-orders is Disabled now')));
    assert.ok(d.some((x) => x.includes('ProvisionedPollerConfig 2-10 pollers')));
    assert.ok(d.some((x) => x.includes('encrypted with arn:aws:kms')));
  });

  it('a mapping of a function alias invokes the alias', () => {
    const m = migrated(mapping({ queue: 'orders', functionArn: `${FN}:live`, maxConcurrency: 3 }));
    assert.equal(m.config['function'], 'orders-fn:live');
  });

  it('a queue of another account is named by its URL', () => {
    const m = migrated(mapping({ queue: 'shared', eventSourceArn: queueArn('shared', '210987654321'), maxConcurrency: 2 }));
    assert.equal(m.config['queues'], 'https://sqs.eu-west-1.amazonaws.com/210987654321/shared');
  });
});

describe('migrateMappings: several mappings', () => {
  it('one route, equal weights, MaximumConcurrency per queue and their sum as the pool', () => {
    const m = migrated(mapping({ queue: 'a', maxConcurrency: 5 }), mapping({ queue: 'b', maxConcurrency: 3 }));
    assert.equal(m.config['queues'], 'a:1,b:1');
    assert.equal(m.config['concurrency'], 8);
    assert.deepEqual(m.config['queue-options'], { a: { 'max-concurrency': 5 }, b: { 'max-concurrency': 3 } });
    assert.equal(about(m, /equal weights/).length, 1);
  });

  it('different batch settings: the smallest, so nothing waits longer or carries more, and it says so', () => {
    const m = migrated(
      mapping({ queue: 'a', batchSize: 100, windowSec: 10, maxConcurrency: 2 }),
      mapping({ queue: 'b', batchSize: 20, windowSec: 30, maxConcurrency: 2 }),
    );
    assert.equal(m.config['batch-size'], 20);
    assert.equal(m.config['batch-window'], '10s');
    assert.equal(about(m, /the smallest are taken \(20\/10s\)/).length, 1);
  });

  it('a FIFO queue beside a windowed one: at most 10 and no window for the route', () => {
    // Lambda refuses a window or more than 10 on a FIFO mapping, so the smallest settings fit FIFO already.
    const m = migrated(
      mapping({ queue: 'a', batchSize: 100, windowSec: 10, maxConcurrency: 2 }),
      mapping({ queue: 'b.fifo', batchSize: 10, windowSec: 0, maxConcurrency: 2 }),
    );
    assert.equal(m.config['batch-size'], 10);
    assert.equal(m.config['batch-window'], undefined);
    assert.equal(about(m, /the smallest are taken \(10\/0s\)/).length, 1);
    // An emulator may keep a FIFO mapping with a window that Lambda would refuse: the route still takes none.
    const loose = migrated(mapping({ queue: 'c.fifo', batchSize: 10, windowSec: 3, maxConcurrency: 2 }));
    assert.equal(loose['config']['batch-window'], undefined);
    assert.equal(about(loose, /has a FIFO queue, which takes at most 10 messages and no window/).length, 1);
  });

  it('mappings of two aliases become two routes', () => {
    const m = migrated(
      mapping({ queue: 'a', functionArn: `${FN}:blue`, maxConcurrency: 2 }),
      mapping({ queue: 'b', functionArn: `${FN}:green`, maxConcurrency: 2 }),
    );
    assert.deepEqual(
      (m.config['routes'] as { function: string; queues: string }[]).map((r) => [r.function, r.queues]),
      [
        ['orders-fn:blue', 'a'],
        ['orders-fn:green', 'b'],
      ],
    );
  });

  it('a mapping of another source is left out, with a line', () => {
    const m = migrated(
      mapping({ queue: 'a', maxConcurrency: 2 }),
      mapping({ queue: 'x', uuid: 'k', eventSourceArn: 'arn:aws:kinesis:eu-west-1:123456789012:stream/s' }),
    );
    assert.equal(m.config['queues'], 'a');
    assert.equal(about(m, /mapping k reads arn:aws:kinesis.*not an SQS queue/).length, 1);
  });
});

describe('migrateMappings: what cannot be migrated', () => {
  it('no SQS mapping', () => {
    const result = migrateMappings('orders-fn', [], new Map());
    assert.deepEqual(result, { ok: false, problem: 'function orders-fn has no SQS event source mapping: nothing to migrate' });
  });

  it('filters Lambda could not decrypt for the caller', () => {
    const m = mapping({ queue: 'a', filterError: 'access denied', filterKmsKeyArn: 'arn:aws:kms:eu-west-1:123456789012:key/k' });
    const result = migrateMappings('orders-fn', [m], facts(m));
    assert.ok(!result.ok);
    assert.match(
      result.problem,
      /mapping uuid-a: Lambda could not give its filter criteria \(access denied\); the caller needs kms:Decrypt on arn:aws:kms/,
    );
  });

  it('a filter the daemon does not take is reported by the daemon check, not printed', () => {
    // EventBridge's cidr matching: workerless does not support it (docs/delivery.md#filters).
    const m = mapping({ queue: 'a', maxConcurrency: 2, filterPatterns: ['{"body":{"ip":[{"cidr":"10.0.0.0/24"}]}}'] });
    const result = migrateMappings('orders-fn', [m], facts(m));
    assert.ok(result.ok);
    const problems = daemonProblems(configText('orders-fn', result.migration));
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0]!, /cidr/);
  });
});
