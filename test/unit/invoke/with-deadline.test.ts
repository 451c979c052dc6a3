import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import type { Invoke } from '../../../src/invoke/invoke.ts';
import { INVOKE_TIMEOUT_MS, withDeadline } from '../../../src/invoke/with-deadline.ts';
import { ok } from '../../support/factories.ts';
import { invokeContext } from '../../support/invoke-context.ts';
import { countTimers } from '../../support/count-timers.ts';

describe('withDeadline', () => {
  it('is a minute over the 15 minutes Lambda runs a function at most', () => {
    assert.equal(INVOKE_TIMEOUT_MS, 16 * 60_000);
  });

  it('aborts a call with no answer in time with a TimeoutError, given to the call as its signal', async () => {
    let seen: AbortSignal | undefined;
    const hangs: Invoke = (_p, _c, signal) => {
      seen = signal;
      return new Promise((resolve) => signal?.addEventListener('abort', () => resolve(ok())));
    };
    await withDeadline(20)(hangs)('{}', invokeContext());
    assert.ok(seen?.aborted, 'the signal aborted');
    assert.equal((seen.reason as DOMException).name, 'TimeoutError');
  });

  it('clears its timer once the call ends: an answered call is never aborted afterwards', async () => {
    let seen: AbortSignal | undefined;
    const answers: Invoke = (_p, _c, signal) => {
      seen = signal;
      return Promise.resolve(ok());
    };
    assert.deepEqual(await withDeadline(20)(answers)('{}', invokeContext()), ok());
    await delay(60);
    assert.equal(seen?.aborted, false);
  });

  it('passes the payload and context on, and turns a throw into a rejection as an async function would', async () => {
    const ctx = invokeContext();
    const seen: unknown[] = [];
    const echo: Invoke = (payload, c) => {
      seen.push(payload, c);
      return Promise.resolve(ok());
    };
    await withDeadline(1_000)(echo)('{"a":1}', ctx);
    assert.deepEqual(seen, ['{"a":1}', ctx]);
    const throws: Invoke = () => {
      throw new Error('bug');
    };
    const call = withDeadline(1_000)(throws)('{}', ctx);
    assert.ok(call instanceof Promise);
    await assert.rejects(call, /bug/);
  });

  it('one timer for the deadlines of every open call, and it holds no process open', async () => {
    const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timeouts();
    const timers = countTimers();
    const answers: (() => void)[] = [];
    const waits: Invoke = () => new Promise((resolve) => answers.push(() => resolve(ok())));
    let calls: Promise<unknown>[];
    try {
      const chain = withDeadline(60_000)(waits);
      calls = Array.from({ length: 50 }, () => chain('{}', invokeContext()));
      assert.equal(timers.armed(), 1, 'fifty calls open, one timer');
      assert.equal(timeouts(), before, "the timer is unref'd");
    } finally {
      timers.restore();
    }
    for (const answer of answers) answer();
    await Promise.all(calls);
  });
});
