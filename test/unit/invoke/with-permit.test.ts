import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdaptiveCeiling } from '../../../src/invoke/adaptive-ceiling.ts';
import { FixedCeiling } from '../../../src/invoke/ceiling.ts';
import { ConcurrencyGate } from '../../../src/invoke/concurrency-gate.ts';
import type { Invoke } from '../../../src/invoke/invoke.ts';
import type { InvokeResult } from '../../../src/core/function-invoker.ts';
import { invokeVerdict, withPermit } from '../../../src/invoke/with-permit.ts';
import type { LimitChange } from '../../../src/invoke/concurrency-limit.ts';
import { functionError, notSent, ok, serverError, throttled, unusable } from '../../support/factories.ts';
import { invokeContext } from '../../support/invoke-context.ts';

describe('withPermit', () => {
  it('under the fixed ceiling alone lets every loop call through at once, and its outcome moves nothing', async () => {
    const changes: NonNullable<LimitChange>[] = [];
    const gate = new ConcurrencyGate([new FixedCeiling(2)], { now: () => 0, onChange: (c) => changes.push(c) });
    const order: string[] = [];
    const call =
      (name: string, result: InvokeResult): Invoke =>
      () => {
        order.push(name);
        return new Promise((resolve) => setImmediate(() => resolve(result)));
      };
    const a = withPermit(gate, () => {})(call('a', throttled()))('{}', invokeContext());
    const b = withPermit(gate, () => {})(call('b', ok()))('{}', invokeContext());
    assert.deepEqual(order, ['a', 'b'], 'both start at once');
    await Promise.all([a, b]);
    assert.equal(gate.limit, 2);
    assert.deepEqual(changes, []);
  });

  it('holds a call while the limit is in use, tells onWait first, and lets it through when a permit frees', async () => {
    const changes: NonNullable<LimitChange>[] = [];
    const gate = new ConcurrencyGate([new FixedCeiling(1), new AdaptiveCeiling({ max: 1, min: 1 }, 0)], {
      now: () => 0,
      onChange: (c) => changes.push(c),
    });
    let waits = 0;
    let release!: (r: InvokeResult) => void;
    const order: string[] = [];
    const first: Invoke = () => {
      order.push('first');
      return new Promise((resolve) => (release = resolve));
    };
    const second: Invoke = () => {
      order.push('second');
      return Promise.resolve(ok());
    };
    const a = withPermit(gate, () => waits++)(first)('{}', invokeContext());
    const b = withPermit(gate, () => waits++)(second)('{}', invokeContext());
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, ['first'], 'the second call waits for the permit');
    assert.equal(waits, 2);
    release(ok());
    await Promise.all([a, b]);
    assert.deepEqual(order, ['first', 'second']);
  });

  it('moves the limit down on a throttle', async () => {
    const changes: NonNullable<LimitChange>[] = [];
    const gate = new ConcurrencyGate([new FixedCeiling(10), new AdaptiveCeiling({ max: 10, min: 1 }, 0)], {
      now: () => 0,
      onChange: (c) => changes.push(c),
    });
    await withPermit(gate, () => {})(() => Promise.resolve(throttled()))('{}', invokeContext());
    assert.equal(changes.length, 1);
    assert.ok(changes[0] !== undefined && changes[0].to < changes[0].from, JSON.stringify(changes));
  });

  it('only an answer (whatever the function returned) or a throttle speaks about the budget', () => {
    assert.deepEqual([ok(), functionError(), throttled(), notSent(), serverError(), unusable()].map(invokeVerdict), [
      'accepted',
      'accepted',
      'throttled',
      'failed',
      'failed',
      'failed',
    ]);
  });
});
