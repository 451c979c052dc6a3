import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Invoke } from '../../../src/invoke/invoke.ts';
import { lapsedOf, withLeaseCheck } from '../../../src/invoke/with-lease-check.ts';
import { message, ok, throttled } from '../../support/factories.ts';
import { invokeContext } from '../../support/invoke-context.ts';

describe('withLeaseCheck', () => {
  it('confirms the lease, starts the attempt and calls on while every message is still hidden', async () => {
    const ctx = invokeContext();
    let calls = 0;
    const call: Invoke = () => {
      calls++;
      assert.equal(ctx.started, 1, 'the attempt started before the call');
      return Promise.resolve(ok());
    };
    const result = await withLeaseCheck()(call)('{}', ctx);
    assert.deepEqual(result, ok());
    assert.deepEqual([ctx.confirmed, ctx.started, calls], [1, 1, 1]);
    assert.equal(lapsedOf(result), undefined);
  });

  it('invokes nothing once the lease lapsed: the attempt never starts, and the lapsed messages come back', async () => {
    const gone = message({ MessageId: 'm2' });
    const ctx = invokeContext({ lapsed: [gone] });
    let calls = 0;
    const result = await withLeaseCheck()(() => {
      calls++;
      return Promise.resolve(ok());
    })('{}', ctx);
    assert.equal(calls, 0);
    assert.equal(ctx.started, 0);
    assert.equal(result.ok, false);
    // Nothing left this machine: to adaptive concurrency and the span it is a not-sent failure.
    assert.equal(!result.ok && result.error.kind, 'not-sent');
    assert.deepEqual(lapsedOf(result), [gone]);
  });

  it('tells a lapsed lease from any other failure', () => {
    assert.equal(lapsedOf(throttled()), undefined);
  });
});
