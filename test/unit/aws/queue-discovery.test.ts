// The executor of found queues (src/aws/queue-discovery.ts) with an in-memory SQS directory: what it calls, what a
// failure skips, and what it tells the route. The calls follow the ListQueues and ListQueueTags API references:
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ListQueues.html
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ListQueueTags.html
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AwsCallError } from '../../../src/core/errors.ts';
import type { ListedQueues, QueueDirectory, QueueLookup, ResolvedQueue } from '../../../src/core/queue.ts';
import { listQueuePages } from '../../../src/aws/list-queue-pages.ts';
import { QueueDiscovery, TAGS_EVERY_REFRESHES, findQueues } from '../../../src/aws/queue-discovery.ts';
import type { QueueLimit } from '../../../src/receive/queue-limits.ts';
import { checkFoundQueues } from '../../../src/daemon/startup-checks.ts';
import { MISSING_LAST_RECEIVE, parseDestination } from '../../../src/settle/failure-destination.ts';
import { recordingLogger } from '../../support/factories.ts';

const ORIGIN = 'http://sqs.local/000000000000/';
/** The code and message of a logged `err` (pino's serializer adds a type and a stack). */
const pick = (err: unknown) => {
  const { code, message } = err as { code?: unknown; message?: unknown };
  return { code, message };
};
const TAGS_UNREAD = "found queues' tags cannot be read; those queues are skipped until the next refresh";
const denied = (op: string) => new AwsCallError(op, { kind: 'fatal', code: 'AccessDenied', message: 'no', status: 403 });

/** Queues by name with their tags; counts every call as SQS would bill it (a ListQueues per page of 1,000). */
class FakeSqs implements QueueDirectory, QueueLookup {
  readonly queues = new Map<string, Record<string, string>>();
  readonly calls = { ListQueues: 0, ListQueueTags: 0, GetQueueAttributes: 0 };
  failTags = new Set<string>();
  failAttributes = new Set<string>();
  failList = false;
  /** Queues with a RedrivePolicy, by name: its maxReceiveCount. */
  readonly redrive = new Map<string, number>();

  /** Pages of this many URLs, each with a NextToken; `repeatToken`: the server answers the same NextToken for ever. */
  pageSize = 1000;
  repeatToken = false;

  async listQueues(prefix: string | undefined): Promise<ListedQueues> {
    const names = [...this.queues.keys()].filter((n) => prefix === undefined || n.startsWith(prefix));
    if (this.failList) {
      this.calls.ListQueues++;
      throw denied('ListQueues');
    }
    return listQueuePages(async (token) => {
      this.calls.ListQueues++;
      const from = token === undefined ? 0 : this.repeatToken ? this.pageSize : Number(token);
      const next = from + this.pageSize;
      return {
        urls: names.slice(from, next).map((n) => ORIGIN + n),
        nextToken: this.repeatToken ? String(this.pageSize) : next < names.length ? String(next) : undefined,
      };
    });
  }
  async queueTags(url: string): Promise<Record<string, string>> {
    this.calls.ListQueueTags++;
    const name = url.slice(ORIGIN.length);
    if (this.failTags.has(name)) throw denied('ListQueueTags');
    return this.queues.get(name) ?? {};
  }
  async queueUrl(name: string): Promise<string> {
    return ORIGIN + name;
  }
  async queueAttributes(url: string): Promise<Record<string, string>> {
    this.calls.GetQueueAttributes++;
    const name = url.slice(ORIGIN.length);
    if (this.failAttributes.has(name)) throw denied('GetQueueAttributes');
    const redrive = this.redrive.get(name);
    return {
      QueueArn: `arn:aws:sqs:us-east-1:000000000000:${name}`,
      VisibilityTimeout: '30',
      ...(redrive === undefined ? {} : { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: 'arn:dlq', maxReceiveCount: redrive }) }),
    };
  }
}

function discovery(sqs: FakeSqs, selector: ConstructorParameters<typeof QueueDiscovery>[0], clock = { now: 0 }, refreshMs = 60_000) {
  const { logger, lines } = recordingLogger();
  const finder = new QueueDiscovery(selector, refreshMs, {
    directory: sqs,
    lookup: sqs,
    logger,
    functionName: 'fn',
    visibilityTimeoutSec: undefined,
    now: () => clock.now,
  });
  return { finder, lines, clock };
}

describe('QueueDiscovery', () => {
  it('by tag: resolves the matching queues with their weight and tag limits', async () => {
    const sqs = new FakeSqs();
    sqs.queues.set('t-a', { team: 'pay', 'workerless:weight': '3', 'workerless:max-concurrency': '2' });
    sqs.queues.set('t-b', { team: 'pay' });
    sqs.queues.set('t-c', { team: 'other' });
    const { finder } = discovery(sqs, { prefix: 't-', tag: { key: 'team', value: 'pay' } });
    const found = await finder.refresh();
    assert.deepEqual(
      found.queues.map((q) => [q.name, q.weight, q.arn]),
      [
        ['t-a', 3, 'arn:aws:sqs:us-east-1:000000000000:t-a'],
        ['t-b', 1, 'arn:aws:sqs:us-east-1:000000000000:t-b'],
      ],
    );
    assert.deepEqual([...found.tagLimits], [['t-a', { maxConcurrency: 2 }]]);
    assert.deepEqual([found.added, found.removed, found.changed], [['t-a', 't-b'], [], true]);
  });

  it('a queue whose tags or attributes cannot be read is logged and skipped, and tried again next refresh', async () => {
    const sqs = new FakeSqs();
    sqs.queues.set('t-a', { team: 'pay' });
    sqs.queues.set('t-b', { team: 'pay' });
    sqs.queues.set('t-c', { team: 'pay' });
    sqs.failTags.add('t-b');
    sqs.failAttributes.add('t-c');
    const { finder, lines } = discovery(sqs, { tag: { key: 'team', value: 'pay' } });
    assert.deepEqual((await finder.refresh()).added, ['t-a']);
    assert.deepEqual(
      lines
        .filter((l) => l.msg === 'a found queue cannot be read; skipped until the next refresh')
        .map((l) => [l['queue'], l['operation']]),
      [['t-c', 'GetQueueAttributes']],
    );
    assert.deepEqual(
      lines.filter((l) => l.msg === TAGS_UNREAD).map((l) => [l['count'], l['queues'], l['operation']]),
      [[1, ['t-b'], 'ListQueueTags']],
    );
    sqs.failTags.clear();
    sqs.failAttributes.clear();
    const again = await finder.refresh();
    assert.deepEqual(again.added, ['t-b', 't-c']);
    assert.deepEqual(
      again.queues.map((q) => q.name),
      ['t-a', 't-b', 't-c'],
    );
  });

  it('tags that cannot be read: one warning a refresh with the count, a few names and the error code, not one a queue', async () => {
    const sqs = new FakeSqs();
    for (let i = 0; i < 500; i++) {
      sqs.queues.set(`t-${String(i).padStart(3, '0')}`, { team: 'pay' });
      sqs.failTags.add(`t-${String(i).padStart(3, '0')}`);
    }
    sqs.queues.set('t-ok', { team: 'pay' });
    const { finder, lines } = discovery(sqs, { prefix: 't-', tag: { key: 'team', value: 'pay' } });
    for (let refresh = 0; refresh < 2; refresh++) {
      lines.length = 0;
      assert.deepEqual(
        (await finder.refresh()).queues.map((q) => q.name),
        ['t-ok'],
      );
      const warnings = lines.filter((l) => l.level === 40);
      assert.equal(warnings.length, 1, `one line a refresh, not ${warnings.length}`);
      const [line] = warnings;
      assert.equal(line!.msg, TAGS_UNREAD);
      assert.deepEqual(
        [line!['selector'], line!['operation'], line!['count'], line!['queues'], line!['codes'], pick(line!['err'])],
        [
          'prefix t- and tag team=pay',
          'ListQueueTags',
          500,
          ['t-000', 't-001', 't-002', 't-003', 't-004'],
          { AccessDenied: 500 },
          { code: 'AccessDenied', message: 'no' },
        ],
      );
    }
  });

  it('a server repeating its NextToken: the queues listed so far are used, with one warning naming the prefix and why', async () => {
    const sqs = new FakeSqs();
    for (let i = 0; i < 5; i++) sqs.queues.set(`t-${i}`, {});
    sqs.pageSize = 2;
    sqs.repeatToken = true;
    const { finder, lines } = discovery(sqs, { prefix: 't-' });
    const found = await finder.refresh();
    assert.deepEqual(
      found.queues.map((q) => q.name),
      ['t-0', 't-1', 't-2', 't-3'],
    );
    assert.equal(sqs.calls.ListQueues, 2, 'the repeated token is not followed');
    assert.deepEqual(
      lines.filter((l) => l.level === 40).map((l) => [l.msg, l['prefix'], l['queues'], l['reason']]),
      [
        [
          'ListQueues stopped before its last page; the queues it listed are used',
          't-',
          4,
          'ListQueues gave NextToken "2" again after 2 pages',
        ],
      ],
    );
  });

  it('run(): a failed ListQueues keeps the queues; a change calls setQueues once, with a log line', async () => {
    const sqs = new FakeSqs();
    sqs.queues.set('t-a', {});
    const { finder, lines } = discovery(sqs, { prefix: 't-' }, { now: 0 }, 5);
    await finder.refresh();
    const told: [string[], ReadonlyMap<string, QueueLimit>][] = [];
    const stop = new AbortController();
    const target = {
      setQueues(queues: readonly ResolvedQueue[], limits: ReadonlyMap<string, QueueLimit>) {
        told.push([queues.map((q) => q.name), limits]);
      },
    };
    sqs.failList = true;
    const running = finder.run(target, stop.signal);
    await new Promise((r) => setTimeout(r, 30));
    assert.equal(told.length, 0, 'nothing changed while ListQueues failed');
    assert.ok(lines.some((l) => l.msg === 'ListQueues failed; the route keeps its queues until the next refresh'));
    sqs.failList = false;
    sqs.queues.delete('t-a');
    sqs.queues.set('t-b', {});
    await new Promise((r) => setTimeout(r, 30));
    stop.abort();
    await running;
    assert.deepEqual(
      told.map(([names]) => names),
      [['t-b']],
    );
    const changed = lines.find((l) => l.msg === "the route's queues changed; queues that left settle what they have in flight");
    assert.deepEqual([changed?.['added'], changed?.['removed']], [['t-b'], ['t-a']]);
  });

  it('run(): the queues that joined once running, and only those, get the start-up failure-destination check, logged', async () => {
    const sqs = new FakeSqs();
    // t-a lacks a redrive policy too, but was there at the start: the start-up checked it (and would have refused it).
    sqs.queues.set('t-a', {});
    const { finder } = discovery(sqs, { prefix: 't-' }, { now: 0 }, 5);
    await finder.refresh();
    const route = {
      failureDestination: parseDestination('https://sqs.us-east-1.amazonaws.com/000000000000/failures'),
      maxAttempts: undefined,
      queueOptions: new Map(),
    };
    const { logger, lines } = recordingLogger();
    const joined: string[][] = [];
    let names: string[] = [];
    const target = {
      setQueues(queues: readonly ResolvedQueue[]) {
        names = queues.map((q) => q.name);
      },
      joined(queues: readonly ResolvedQueue[]) {
        joined.push(queues.map((q) => q.name));
        checkFoundQueues(route, queues, logger);
      },
    };
    const stop = new AbortController();
    const running = finder.run(target, stop.signal);
    const until = async (done: () => boolean) => {
      for (let waited = 0; !done(); waited += 5) {
        assert.ok(waited < 5_000, `waited for a refresh; joined ${JSON.stringify(joined)}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    try {
      // t-b has a redrive policy (its maxReceiveCount says the last receive); t-c has none.
      sqs.redrive.set('t-b', 3);
      sqs.queues.set('t-b', {});
      sqs.queues.set('t-c', {});
      await until(() => joined.length === 1);
      // A queue that leaves is not checked; one that comes back is checked again.
      sqs.queues.delete('t-c');
      await until(() => !names.includes('t-c'));
      sqs.queues.set('t-c', {});
      await until(() => joined.length === 2);
    } finally {
      stop.abort();
      await running;
    }
    assert.deepEqual(joined, [['t-b', 't-c'], ['t-c']]);
    assert.deepEqual(
      lines.map((l) => [l['level'], l['queue'], l['problem'], l['err']]),
      [
        [40, 't-c', MISSING_LAST_RECEIVE, undefined],
        [40, 't-c', MISSING_LAST_RECEIVE, undefined],
      ],
    );
  });

  it(`costs at 10,000 queues by tag: ${TAGS_EVERY_REFRESHES} ListQueues pages a refresh, every tag once per ${TAGS_EVERY_REFRESHES} refreshes, each queue resolved once`, async () => {
    const sqs = new FakeSqs();
    for (let i = 0; i < 10_000; i++) sqs.queues.set(`t-${i}`, { team: 'pay' });
    const { finder, clock } = discovery(sqs, { tag: { key: 'team', value: 'pay' } });
    const refreshes = TAGS_EVERY_REFRESHES * 3;
    for (let r = 0; r < refreshes; r++) {
      clock.now = r * 60_000;
      await finder.refresh();
    }
    // 30 refreshes = 30 minutes at the default --queues-refresh of 1 min.
    assert.deepEqual(sqs.calls, { ListQueues: 10 * refreshes, ListQueueTags: 10_000 * 3, GetQueueAttributes: 10_000 });
    const perQueuePerMinute = (sqs.calls.ListQueues + sqs.calls.ListQueueTags) / 10_000 / refreshes;
    assert.ok(perQueuePerMinute <= 0.101, `discovery: ${perQueuePerMinute} calls per queue per minute`);
  });
});

describe('findQueues (check)', () => {
  it('lists what a selector matches without resolving, and the queues whose tags could not be read', async () => {
    const sqs = new FakeSqs();
    sqs.queues.set('t-a', { team: 'pay' });
    sqs.queues.set('t-b', { team: 'pay' });
    sqs.queues.set('u-c', { team: 'pay' });
    sqs.failTags.add('t-b');
    const { found, unreadable } = await findQueues(sqs, { prefix: 't-', tag: { key: 'team', value: 'pay' } });
    assert.deepEqual(
      found.map((q) => q.name),
      ['t-a'],
    );
    assert.deepEqual(unreadable, ['t-b']);
    assert.equal(sqs.calls.GetQueueAttributes, 0);
  });
});
