// The chaos run's checks must be able to fail: each invariant is fed a history that breaks it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { analyse } from '../chaos/chaos.ts';
import type { InvocationLine } from '../chaos/recording-handler.ts';

const run = (inv: string, start: number, end: number, records: [id: string, handle: string, ok: boolean][]): InvocationLine[] => [
  { t: 'start', inv, at: start, ids: records.map(([id]) => id) },
  {
    t: 'end',
    inv,
    start,
    end,
    error: false,
    records: records.map(([id, receiptHandle, ok], i) => ({ id, messageId: `sqs-${id}`, receiptHandle, receiveCount: i + 1, ok })),
  },
];
const kinds = (a: ReturnType<typeof analyse>) => a.violations.map((v) => [v.kind, v.ids]);

describe('chaos analysis', () => {
  it('a clean history: failed once, then succeeded and deleted after it; a duplicate after success is allowed', () => {
    const lines = [
      ...run('a', 0, 10, [['m1', 'h1', false]]),
      ...run('b', 20, 30, [['m1', 'h2', true]]),
      ...run('c', 40, 50, [['m1', 'h3', true]]),
    ];
    const a = analyse(lines, [{ at: 31, receiptHandle: 'h2' }], ['m1']);
    assert.deepEqual(kinds(a), []);
    assert.equal(a.duplicatesAfterSuccess, 1);
    assert.equal(a.functionFailures, 1);
  });

  it('finds a message with no successful invocation', () => {
    assert.deepEqual(kinds(analyse(run('a', 0, 10, [['m1', 'h1', false]]), [], ['m1', 'm2'])), [['lost', ['m1', 'm2']]]);
  });

  it('finds two invocations of one message at the same time', () => {
    const lines = [...run('a', 0, 100, [['m1', 'h1', true]]), ...run('b', 50, 60, [['m1', 'h2', true]])];
    assert.deepEqual(
      kinds(analyse(lines, [], ['m1'])).map(([k]) => k),
      ['concurrent-invocations'],
    );
  });

  it('finds a delete sent before the invocation ended, after a failed one, or of a receipt the function never saw', () => {
    const lines = [...run('a', 0, 100, [['m1', 'h1', true]]), ...run('b', 0, 10, [['m2', 'h2', false]])];
    const a = analyse(
      lines,
      [
        { at: 90, receiptHandle: 'h1' },
        { at: 20, receiptHandle: 'h2' },
        { at: 20, receiptHandle: 'zz' },
      ],
      ['m1', 'm2'],
    );
    const early = a.violations.find((v) => v.kind === 'deleted-before-success');
    assert.equal(early?.ids.length, 3);
    assert.deepEqual(early.ids.slice(0, 2), ['m1', 'm2']);
  });

  it('finds an invocation that started and never ended', () => {
    const lines: InvocationLine[] = [{ t: 'start', inv: 'x', at: 0, ids: ['m1'] }, ...run('a', 5, 10, [['m1', 'h1', true]])];
    assert.deepEqual(kinds(analyse(lines, [], ['m1'])), [['unfinished-invocation', ['m1']]]);
  });
});
