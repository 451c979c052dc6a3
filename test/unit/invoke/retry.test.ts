import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FunctionGate } from '../../../src/invoke/function-gate.ts';
import type { Invoke } from '../../../src/invoke/invoke.ts';
import type { InvokeResult } from '../../../src/core/function-invoker.ts';
import { withRetry, type RetryDeps } from '../../../src/invoke/retry.ts';
import { withLeaseCheck } from '../../../src/invoke/with-lease-check.ts';
import { message, notSent, ok, recordingLogger, serverError, throttled, unusable } from '../../support/factories.ts';
import { invokeContext } from '../../support/invoke-context.ts';

const rejected: InvokeResult = {
  ok: false,
  error: { kind: 'rejected', code: 'RequestEntityTooLargeException', message: 'too big', status: 413 },
};

/**
 * withRetry over an attempt that answers `results` in turn (the last one again once they run out), on a clock
 * that moves 1 s per reading (a pause is over once read) and random() = 0 (every back-off is 0 ms).
 */
function retrying(results: InvokeResult[], overrides: Partial<RetryDeps> = {}, permitWaitMs = 0) {
  let t = 0;
  const now = () => (t += 1_000);
  const { logger, lines } = recordingLogger();
  const events: string[] = [];
  let aside = false;
  let calls = 0;
  const attempt: Invoke = (_payload, ctx) => {
    // A wait for a permit, before the attempt starts.
    t += permitWaitMs;
    ctx.onStart();
    const result = results[Math.min(calls, results.length - 1)] ?? ok();
    calls++;
    return Promise.resolve(result);
  };
  const deps: RetryDeps = {
    logger,
    functionName: 'fn',
    now,
    random: () => 0,
    gate: new FunctionGate({ logger, random: () => 0, now }),
    capacity: {
      isAside: () => aside,
      stepAside: () => {
        aside = true;
        events.push('step aside');
      },
      rejoin: () => {
        aside = false;
        events.push('rejoin');
        return Promise.resolve();
      },
    },
    drainOver: new AbortController().signal,
    maxUnknown: 3,
    attemptMs: 960_000,
    events: {
      activity: (_loop, activity) => events.push(`${activity}`),
      throttled: (queue) => events.push(`throttled ${queue}`),
      paused: (paused) => events.push(`paused ${paused}`),
    },
    ...overrides,
  };
  return { invoke: withRetry(deps)(attempt), lines, events, calls: () => calls };
}

const warnings = (lines: { msg: string; level: number }[]) => lines.filter((l) => l.level === 40).map((l) => l.msg);

describe('withRetry', () => {
  it('retries throttles and requests that never left, giving capacity up between attempts, until Lambda answers', async () => {
    const r = retrying([throttled(), notSent(), ok()]);
    const outcome = await r.invoke('{}', invokeContext());
    assert.equal(outcome.kind, 'answered');
    assert.equal(r.calls(), 3);
    assert.deepEqual(r.events, [
      'invoke',
      'throttled q',
      'step aside',
      'invoke back-off',
      'waiting for capacity',
      'rejoin',
      'invoke',
      'step aside',
      'invoke back-off',
      'waiting for capacity',
      'rejoin',
      'invoke',
      'paused false',
    ]);
    assert.deepEqual(warnings(r.lines), ['function throttled, retrying', 'Invoke could not reach Lambda, retrying']);
    assert.deepEqual(
      r.lines.filter((l) => l.level === 40).map((l) => l['attempt']),
      [1, 2],
    );
  });

  it("measures the answer's duration from the attempt's start, not from before a wait for a permit", async () => {
    // The clock moves 1 s per reading, and 60 s while the attempt waits for a permit.
    const outcome = await retrying([ok()], {}, 60_000).invoke('{}', invokeContext());
    assert.deepEqual(outcome.kind === 'answered' && outcome.durationMs, 1_000);
  });

  it('holds an unknown outcome for the visibility timeout, and leaves the batch to redrive after more than maxUnknown', async () => {
    const r = retrying([serverError()]);
    const outcome = await r.invoke('{}', invokeContext({ timeoutMs: 1 }));
    assert.deepEqual(outcome, { kind: 'failed', error: errorOf(serverError()) });
    assert.equal(r.calls(), 4);
    const holds = r.lines.filter((l) => l.level === 40);
    assert.deepEqual(
      holds.map((l) => [l['holdMs'], l['attempt']]),
      [
        [1, 1],
        [1, 2],
        [1, 3],
      ],
    );
  });

  it('pauses the function (every loop waits) when it cannot run at all, and resumes it with the first answer', async () => {
    const r = retrying([unusable(), ok()]);
    const outcome = await r.invoke('{}', invokeContext());
    assert.equal(outcome.kind, 'answered');
    assert.ok(r.events.includes('paused true'));
    assert.equal(r.events.at(-1), 'paused false');
    assert.deepEqual(
      r.lines.filter((l) => l.level >= 30).map((l) => l.msg),
      ['the function cannot be invoked; pausing it, messages are kept invisible', 'the function can be invoked again; resuming'],
    );
  });

  it('gives a rejected request up at once: no wait, no second attempt', async () => {
    const r = retrying([rejected, ok()]);
    const outcome = await r.invoke('{}', invokeContext());
    assert.equal(outcome.kind, 'failed');
    assert.equal(r.calls(), 1);
    assert.ok(!r.events.includes('step aside'));
  });

  it('on shutdown: an unknown outcome is not held and its messages are not released; a throttle after the drain time is released', async () => {
    const halted = new AbortController();
    halted.abort();
    assert.deepEqual(await retrying([serverError()]).invoke('{}', invokeContext({ halt: halted.signal })), {
      kind: 'released',
      atOnce: false,
    });
    const over = new AbortController();
    over.abort();
    assert.deepEqual(await retrying([throttled()], { drainOver: over.signal }).invoke('{}', invokeContext()), {
      kind: 'released',
      atOnce: true,
    });
  });

  it('stops at a lapsed lease without invoking', async () => {
    const gone = [message({ MessageId: 'm1' })];
    let calls = 0;
    const invoke = withRetry(quietDeps())(
      withLeaseCheck()(() => {
        calls++;
        return Promise.resolve(ok());
      }),
    );
    assert.deepEqual(await invoke('{}', invokeContext({ lapsed: gone })), { kind: 'lapsed', lapsed: gone });
    assert.equal(calls, 0);
  });

  it('waits out a throttle through throttledBackOff when given (adaptive concurrency cuts it short)', async () => {
    const waits: number[] = [];
    const r = retrying([throttled(), ok()], {
      throttledBackOff: (ms) => {
        waits.push(ms);
        return Promise.resolve();
      },
    });
    assert.equal((await r.invoke('{}', invokeContext())).kind, 'answered');
    assert.deepEqual(waits, [0]);
  });
});

/** The minimal deps for a withRetry of its own (the lapsed-lease case needs the real lease check inside). */
function quietDeps(): RetryDeps {
  const { logger } = recordingLogger();
  return {
    logger,
    functionName: 'fn',
    now: () => 0,
    random: () => 0,
    gate: new FunctionGate({ logger }),
    capacity: { isAside: () => false, stepAside: () => {}, rejoin: () => Promise.resolve() },
    drainOver: new AbortController().signal,
    maxUnknown: 3,
    attemptMs: 1,
    events: { activity: () => {}, throttled: () => {}, paused: () => {} },
  };
}

function errorOf(result: InvokeResult) {
  assert.ok(!result.ok);
  return result.error;
}
