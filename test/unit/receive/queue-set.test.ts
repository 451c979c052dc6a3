// The policy of queues found by prefix or tag: which tags to read, what the answers mean, what changed.
// SQS: ListQueues (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ListQueues.html) lists
// by name prefix only; tags come from ListQueueTags
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ListQueueTags.html), one call per queue.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { QueueSet, describeSelector, matches, settingsFromTags, type TagAnswer } from '../../../src/receive/queue-set.ts';

const url = (name: string) => `http://sqs.local/000000000000/${name}`;
const TAG = { key: 'workerless', value: 'payments' };
const TAGGED = { workerless: 'payments' };
const tagsOf = (entries: [string, TagAnswer][]) => new Map(entries.map(([n, t]) => [url(n), t]));
const names = (qs: readonly { name: string }[]) => qs.map((q) => q.name);

describe('QueueSet', () => {
  it('a prefix alone: every listed queue is a member, no tag is read; appearing and vanishing queues are the change', () => {
    const set = new QueueSet({ prefix: 't-' }, 600_000);
    assert.deepEqual(set.tagsToRead([url('t-1')], 0), []);
    let change = set.update([url('t-2'), url('t-1')], new Map(), 0);
    assert.deepEqual(names(change.added), ['t-2', 't-1']);
    assert.deepEqual(names(set.members), ['t-1', 't-2'], 'members sorted by name');
    assert.deepEqual(set.members[0], { url: url('t-1'), name: 't-1', weight: 1, limit: {} });
    change = set.update([url('t-2'), url('t-3')], new Map(), 60_000);
    assert.deepEqual(names(change.added), ['t-3']);
    assert.deepEqual(names(change.removed), ['t-1']);
    assert.deepEqual(change.changed, []);
  });

  it('a tag: the first refresh reads every tag; later ones only new queues, until the full re-read is due', () => {
    const set = new QueueSet({ tag: TAG }, 600_000);
    assert.deepEqual(set.tagsToRead([url('a'), url('b')], 0), [url('a'), url('b')]);
    const change = set.update(
      [url('a'), url('b')],
      tagsOf([
        ['a', TAGGED],
        ['b', { workerless: 'reports' }],
      ]),
      0,
    );
    assert.deepEqual(names(change.added), ['a'], 'b carries another value');
    assert.deepEqual(set.tagsToRead([url('a'), url('b'), url('c')], 60_000), [url('c')], 'only the new queue');
    set.update([url('a'), url('b'), url('c')], tagsOf([['c', TAGGED]]), 60_000);
    assert.deepEqual(names(set.members), ['a', 'c']);
    assert.deepEqual(set.tagsToRead([url('a'), url('b'), url('c')], 599_999), []);
    assert.deepEqual(set.tagsToRead([url('a'), url('b'), url('c')], 600_000), [url('a'), url('b'), url('c')], 'full re-read');
  });

  it('a tag changed on a queue that stays is seen at the full re-read: it leaves, or its weight changes', () => {
    const set = new QueueSet({ tag: TAG }, 600_000);
    set.update(
      [url('a'), url('b')],
      tagsOf([
        ['a', TAGGED],
        ['b', TAGGED],
      ]),
      0,
    );
    const change = set.update(
      [url('a'), url('b')],
      tagsOf([
        ['a', { ...TAGGED, 'workerless:weight': '3' }],
        ['b', {}],
      ]),
      600_000,
    );
    assert.deepEqual(names(change.removed), ['b']);
    assert.deepEqual(change.changed, [{ url: url('a'), name: 'a', weight: 3, limit: {} }]);
    assert.deepEqual(set.tagsToRead([url('a')], 600_001), [], 'the next full re-read is 10 refreshes on');
  });

  it('a new queue whose tags cannot be read is skipped and read again next refresh; a member keeps its tags', () => {
    const set = new QueueSet({ prefix: 't-', tag: TAG }, 600_000);
    set.update([url('t-a')], tagsOf([['t-a', TAGGED]]), 0);
    let change = set.update([url('t-a'), url('t-b')], tagsOf([['t-b', undefined]]), 60_000);
    assert.deepEqual(change.unreadable, [url('t-b')]);
    assert.deepEqual(names(set.members), ['t-a']);
    assert.deepEqual(set.tagsToRead([url('t-a'), url('t-b')], 120_000), [url('t-b')]);
    change = set.update(
      [url('t-a'), url('t-b')],
      tagsOf([
        ['t-a', undefined],
        ['t-b', TAGGED],
      ]),
      600_000,
    );
    assert.deepEqual(change.unreadable, [], 't-a failed but was read before: it stays');
    assert.deepEqual(names(set.members), ['t-a', 't-b']);
    assert.deepEqual(set.tagsToRead([url('t-a'), url('t-b')], 660_000), [], 'a failing queue does not make every refresh a full one');
  });

  it('a queue that vanishes is forgotten: when it comes back its tags are read again', () => {
    const set = new QueueSet({ tag: TAG }, 600_000);
    set.update([url('a')], tagsOf([['a', TAGGED]]), 0);
    const change = set.update([], new Map(), 60_000);
    assert.deepEqual(names(change.removed), ['a']);
    assert.deepEqual(set.tagsToRead([url('a')], 120_000), [url('a')]);
  });
});

describe('tags', () => {
  it('match on the exact key and value (case-sensitive, as SQS tags are)', () => {
    assert.equal(matches(TAG, TAGGED), true);
    assert.equal(matches(TAG, { workerless: 'Payments' }), false);
    assert.equal(matches(TAG, { Workerless: 'payments' }), false);
    assert.equal(matches({ key: 'k', value: '' }, { k: '' }), true);
    assert.equal(matches({ key: 'toString', value: 'x' }, {}), false);
  });

  it('set the weight and limits; a value out of range is a problem and its default applies', () => {
    assert.deepEqual(
      settingsFromTags({
        'workerless:weight': '3',
        'workerless:max-concurrency': '2',
        'workerless:min-concurrency': '1',
        'workerless:rate': '0.5',
      }),
      { weight: 3, limit: { maxConcurrency: 2, minConcurrency: 1, ratePerSec: 0.5 }, problems: [] },
    );
    const bad = settingsFromTags({ 'workerless:weight': '0', 'workerless:max-concurrency': 'two', 'workerless:rate': '' });
    assert.equal(bad.weight, 1);
    assert.deepEqual(bad.limit, {});
    assert.deepEqual(bad.problems, [
      'tag workerless:weight must be an integer from 1 to 1000, got "0"',
      'tag workerless:max-concurrency must be an integer from 1 to 10000, got "two"',
      'tag workerless:rate must be a number from 0.001 to 10000, got ""',
    ]);
  });

  it('describe a selector in words', () => {
    assert.equal(describeSelector({ prefix: 't-' }), 'prefix t-');
    assert.equal(describeSelector({ prefix: 't-', tag: TAG }), 'prefix t- and tag workerless=payments');
  });
});
