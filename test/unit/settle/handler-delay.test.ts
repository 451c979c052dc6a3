import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planHandlerDelays, readHandlerDelay } from '../../../src/settle/handler-delay.ts';
import { MAX_VISIBILITY_SEC } from '../../../src/settle/retry-backoff.ts';
import { message } from '../../support/factories.ts';

describe('readHandlerDelay', () => {
  it('takes a number of seconds of 0 or more; a fraction is rounded up, never down', () => {
    assert.deepEqual(readHandlerDelay(0, MAX_VISIBILITY_SEC), { kind: 'delay', sec: 0, clamped: false });
    assert.deepEqual(readHandlerDelay(30, MAX_VISIBILITY_SEC), { kind: 'delay', sec: 30, clamped: false });
    assert.deepEqual(readHandlerDelay(2.1, MAX_VISIBILITY_SEC), { kind: 'delay', sec: 3, clamped: false });
    assert.deepEqual(readHandlerDelay(MAX_VISIBILITY_SEC, MAX_VISIBILITY_SEC), { kind: 'delay', sec: 43_200, clamped: false });
  });

  it('clamps a delay beyond what SQS allows for the handle (12 hours from the receive) and says so', () => {
    assert.deepEqual(readHandlerDelay(43_201, MAX_VISIBILITY_SEC), { kind: 'delay', sec: 43_200, clamped: true });
    assert.deepEqual(readHandlerDelay(1e12, 43_000), { kind: 'delay', sec: 43_000, clamped: true });
    assert.deepEqual(readHandlerDelay(43_100, 43_000), { kind: 'delay', sec: 43_000, clamped: true });
  });

  it('refuses what is not a number, or negative, without echoing text from the function', () => {
    const cases: [unknown, string][] = [
      ['30', 'retryDelaySeconds must be a number of seconds, got string'],
      ['card 4111 1111 1111 1111', 'retryDelaySeconds must be a number of seconds, got string'],
      [null, 'retryDelaySeconds must be a number of seconds, got null'],
      [true, 'retryDelaySeconds must be a number of seconds, got boolean'],
      [{ sec: 1 }, 'retryDelaySeconds must be a number of seconds, got object'],
      [undefined, 'retryDelaySeconds must be a number of seconds, got undefined'],
      [Number.NaN, 'retryDelaySeconds must be a number of seconds, got number'],
      [Number.POSITIVE_INFINITY, 'retryDelaySeconds must be a number of seconds, got number'],
      [-1, 'retryDelaySeconds must not be negative, got -1'],
      [-0.5, 'retryDelaySeconds must not be negative, got -0.5'],
    ];
    for (const [raw, reason] of cases)
      assert.deepEqual(readHandlerDelay(raw, MAX_VISIBILITY_SEC), { kind: 'invalid', reason }, String(raw));
  });
});

describe('planHandlerDelays', () => {
  const counted = (id: string, group?: string) =>
    message({ MessageId: id, Attributes: { ApproximateReceiveCount: '1', ...(group ? { MessageGroupId: group } : {}) } });

  it('no delays: every kept message is left to the back-off', () => {
    const kept = [counted('a'), counted('b')];
    assert.deepEqual(planHandlerDelays(kept, false, new Map(), MAX_VISIBILITY_SEC), { changes: [], rest: kept, invalid: [], clamped: [] });
  });

  it('standard queue: each message its own delay, grouped by timeout; invalid and missing ones go to the back-off', () => {
    const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((id) => counted(id));
    const plan = planHandlerDelays(
      [a!, b!, c!, d!, e!],
      false,
      new Map<string, unknown>([
        ['a', 10],
        ['b', 5],
        ['c', 10],
        ['d', 'soon'],
      ]),
      MAX_VISIBILITY_SEC,
    );
    assert.deepEqual(
      plan.changes.map((c) => [c.timeoutSec, c.messages.map((m) => m.MessageId)]),
      [
        [10, ['a', 'c']],
        [5, ['b']],
      ],
    );
    assert.deepEqual(
      plan.rest.map((m) => m.MessageId),
      ['d', 'e'],
    );
    assert.deepEqual(
      plan.invalid.map((i) => [i.message.MessageId, i.reason]),
      [['d', 'retryDelaySeconds must be a number of seconds, got string']],
    );
  });

  it("FIFO: a group's kept messages share the longest valid delay among them; a group without one is left to the back-off", () => {
    const kept = [counted('a1', 'a'), counted('a2', 'a'), counted('b1', 'b'), counted('a3', 'a'), counted('c1', 'c')];
    const plan = planHandlerDelays(
      kept,
      true,
      new Map<string, unknown>([
        ['a1', 5],
        ['a3', 20],
        ['c1', -3],
      ]),
      MAX_VISIBILITY_SEC,
    );
    assert.deepEqual(
      plan.changes.map((c) => [c.timeoutSec, c.messages.map((m) => m.MessageId)]),
      [[20, ['a1', 'a2', 'a3']]],
    );
    assert.deepEqual(
      plan.rest.map((m) => m.MessageId),
      ['b1', 'c1'],
    );
    assert.equal(plan.invalid.length, 1);
  });

  it('counts the clamped ones', () => {
    const plan = planHandlerDelays([counted('a')], false, new Map([['a', 100_000]]), 43_000);
    assert.deepEqual(
      plan.clamped.map((c) => [c.message.MessageId, c.sec]),
      [['a', 43_000]],
    );
    assert.equal(plan.changes[0]?.timeoutSec, 43_000);
  });
});
