import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseQueueList } from '../../../src/config/queue-list.ts';
import type { QueueList } from '../../../src/receive/queue-order.ts';

function list(value: string): QueueList {
  const { list, problems } = parseQueueList(value);
  assert.deepEqual(problems, []);
  return list!;
}

describe('parseQueueList', () => {
  it('reads a strict list', () => {
    const l = list('payments, submissions,default');
    assert.equal(l.mode, 'strict');
    assert.deepEqual(
      l.queues.map((q) => [q.ref, q.weight]),
      [
        ['payments', 1],
        ['submissions', 1],
        ['default', 1],
      ],
    );
  });

  it('reads weights and detects random order from equal weights', () => {
    assert.equal(list('a:3,b:2,c:1').mode, 'weighted');
    assert.deepEqual(
      list('a:3,b:2,c:1').queues.map((q) => q.weight),
      [3, 2, 1],
    );
    assert.equal(list('a:1,b:1,c:1').mode, 'random');
    assert.equal(list('a:5,b:5').mode, 'random');
  });

  it('accepts full queue URLs, with and without weights and ports', () => {
    const l = list('https://sqs.us-east-1.amazonaws.com/123456789012/payments:3,http://localhost:4566/000000000000/default:1');
    assert.deepEqual(
      l.queues.map((q) => [q.ref, q.weight]),
      [
        ['https://sqs.us-east-1.amazonaws.com/123456789012/payments', 3],
        ['http://localhost:4566/000000000000/default', 1],
      ],
    );
    const strict = list('https://sqs.us-east-1.amazonaws.com/1/a,http://localhost:4566/000000000000/b');
    assert.equal(strict.mode, 'strict');
    assert.deepEqual(
      strict.queues.map((q) => q.ref),
      ['https://sqs.us-east-1.amazonaws.com/1/a', 'http://localhost:4566/000000000000/b'],
    );
  });

  it('reports every problem at once', () => {
    const { list: l, problems } = parseQueueList('a:3,,b,a:0,c:-1,d:x');
    assert.equal(l, undefined);
    assert.deepEqual(problems, [
      '--queues has an empty queue name at position 2, got "a:3,,b,a:0,c:-1,d:x"',
      '--queues weight for "a" must be an integer from 1 to 1000, got "0"',
      '--queues lists "a" more than once',
      '--queues weight for "c" must be an integer from 1 to 1000, got "-1"',
      '--queues weight for "d" must be an integer from 1 to 1000, got "x"',
      '--queues mixes weighted and unweighted queues (give every queue a weight, or none), got "a:3,,b,a:0,c:-1,d:x"',
    ]);
  });

  it('rejects an empty name before a weight and an empty list', () => {
    assert.deepEqual(parseQueueList(':3').problems, ['--queues has an empty queue name in ":3"']);
    assert.equal(parseQueueList('').problems.length, 1);
  });
});
