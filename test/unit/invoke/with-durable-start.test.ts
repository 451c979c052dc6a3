import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { InvokeResult } from '../../../src/core/function-invoker.ts';
import { ALREADY_STARTED, withDurableStart } from '../../../src/invoke/with-durable-start.ts';
import { ok, silentLogger } from '../../support/factories.ts';
import { invokeContext } from '../../support/invoke-context.ts';

/** Lambda's 409 for a reused execution name with another payload (the SDK's model: DurableExecutionAlreadyStartedException$). */
const alreadyStarted: InvokeResult = {
  ok: false,
  error: { kind: 'rejected', code: ALREADY_STARTED, message: 'already started', status: 409 },
};
const answering = (r: InvokeResult) => () => Promise.resolve(r);

describe('withDurableStart', () => {
  it('an async start refused as already started counts as started (accepted, no function error)', async () => {
    const ctx = { ...invokeContext(), params: { durableExecutionName: 'n-1', async: true } };
    const result = await withDurableStart(silentLogger, 'fn')(answering(alreadyStarted))('{}', ctx);
    assert.deepEqual(result, { ok: true, response: { payload: undefined, functionError: undefined } });
  });

  it('a sync start refused as already started stays a failure: its caller waits for a result it does not get', async () => {
    const ctx = { ...invokeContext(), params: { durableExecutionName: 'n-1', async: false } };
    assert.deepEqual(await withDurableStart(silentLogger, 'fn')(answering(alreadyStarted))('{}', ctx), alreadyStarted);
  });

  it('leaves other answers, and invocations without a name, as they are', async () => {
    const named = { ...invokeContext(), params: { durableExecutionName: 'n-1', async: true } };
    assert.deepEqual(await withDurableStart(silentLogger, 'fn')(answering(ok()))('{}', named), ok());
    const other: InvokeResult = { ok: false, error: { kind: 'rejected', code: 'RequestTooLargeException', message: 'big', status: 413 } };
    assert.deepEqual(await withDurableStart(silentLogger, 'fn')(answering(other))('{}', named), other);
    const plain = { ...invokeContext(), params: { async: true } };
    assert.deepEqual(await withDurableStart(silentLogger, 'fn')(answering(alreadyStarted))('{}', plain), alreadyStarted);
  });

  it("hands any call but an async start straight through: the call's own promise, no step of its own", () => {
    const call = Promise.resolve(ok());
    const ctx = { ...invokeContext(), params: { durableExecutionName: 'n-1', async: false } };
    assert.equal(withDurableStart(silentLogger, 'fn')(() => call)('{}', ctx), call);
    assert.equal(withDurableStart(silentLogger, 'fn')(() => call)('{}', invokeContext()), call);
  });
});
