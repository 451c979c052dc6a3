import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  NO_ATTEMPTS,
  countAttempt,
  decideInvokeRetry,
  safeToRelease,
  type InvokeAttempts,
  type InvokeRetryPolicy,
  type InvokeRetryDecision,
} from '../../../src/invoke/invoke-retry.ts';
import type { InvokeError, InvokeErrorKind } from '../../../src/core/function-invoker.ts';

/** An Invoke failure of `kind`, shaped as the Lambda adapter classifies it. */
function invokeError(kind: InvokeErrorKind): InvokeError {
  const byKind: Record<InvokeErrorKind, InvokeError> = {
    throttled: { kind, code: 'TooManyRequestsException', message: 'Rate Exceeded.', status: 429 },
    'not-sent': { kind, code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' },
    unknown: { kind, code: 'ServiceException', message: 'internal error', status: 500 },
    unusable: { kind, code: 'AccessDeniedException', message: 'not allowed', status: 403 },
    rejected: { kind, code: 'RequestTooLargeException', message: 'payload too large', status: 413 },
  };
  return byKind[kind];
}

function attempts(overrides: Partial<InvokeAttempts> = {}): InvokeAttempts {
  return { ...NO_ATTEMPTS, ...overrides };
}

function policy(overrides: Partial<InvokeRetryPolicy> = {}): InvokeRetryPolicy {
  return { unknownHoldMs: 30_000, maxUnknown: 3, ...overrides };
}

/** random() just below 1: a full-jitter delay lands on its ceiling minus 1 ms, so the ceiling shows. */
const highest = () => 1 - 1e-9;
const lowest = () => 0;

/** The delays of n consecutive failures of one kind, counted the way the dispatcher counts them. */
function delays(kind: 'throttled' | 'not-sent', n: number, random: () => number, start: InvokeAttempts = NO_ATTEMPTS): number[] {
  const out: number[] = [];
  let counted = start;
  for (let i = 0; i < n; i++) {
    counted = countAttempt(counted, invokeError(kind));
    const step = decideInvokeRetry(invokeError(kind), counted, policy(), random);
    assert.equal(step.action, 'retry', `${kind} failure ${i + 1} is retried`);
    if (step.action === 'retry') out.push(step.delayMs);
  }
  return out;
}

describe('countAttempt', () => {
  it('counts each kind in its own field and leaves the input untouched', () => {
    const cases: [InvokeErrorKind, InvokeAttempts][] = [
      ['throttled', attempts({ throttled: 1 })],
      ['not-sent', attempts({ notSent: 1 })],
      ['unknown', attempts({ unknown: 1 })],
      ['unusable', attempts({ unusable: 1 })],
      // A rejected request is not retried, so there is nothing to count.
      ['rejected', attempts()],
    ];
    for (const [kind, expected] of cases) {
      assert.deepEqual(countAttempt(NO_ATTEMPTS, invokeError(kind)), expected, kind);
    }
    assert.deepEqual(NO_ATTEMPTS, { throttled: 0, notSent: 0, unknown: 0, unusable: 0 }, 'the shared starting value was not mutated');
    assert.ok(Object.isFrozen(NO_ATTEMPTS));
  });

  it('accumulates over a mixed sequence', () => {
    const sequence: InvokeErrorKind[] = ['throttled', 'unknown', 'throttled', 'not-sent', 'unusable', 'unknown', 'throttled', 'rejected'];
    const total = sequence.reduce((a, kind) => countAttempt(a, invokeError(kind)), NO_ATTEMPTS);
    assert.deepEqual(total, { throttled: 3, notSent: 1, unknown: 2, unusable: 1 });
  });

  it('returns a new object each time', () => {
    const before = attempts({ throttled: 2 });
    const after = countAttempt(before, invokeError('throttled'));
    assert.notEqual(after, before);
    assert.equal(before.throttled, 2);
    assert.equal(after.throttled, 3);
  });
});

describe('decideInvokeRetry', () => {
  it('maps every InvokeErrorKind to a step', () => {
    // A Record over the union: adding a kind without deciding its step here fails the type-check.
    const expected: Record<InvokeErrorKind, InvokeRetryDecision['action']> = {
      throttled: 'retry',
      'not-sent': 'retry',
      unknown: 'retry',
      unusable: 'pause-function',
      rejected: 'give-up',
    };
    for (const [kind, action] of Object.entries(expected) as [InvokeErrorKind, InvokeRetryDecision['action']][]) {
      const error = invokeError(kind);
      assert.equal(decideInvokeRetry(error, countAttempt(NO_ATTEMPTS, error), policy(), highest).action, action, kind);
    }
  });

  describe('throttled', () => {
    it('backs off with full jitter from 100 ms, doubling to a 5 s ceiling', () => {
      assert.deepEqual(delays('throttled', 9, highest), [99, 199, 399, 799, 1599, 3199, 4999, 4999, 4999]);
    });

    it('may retry at once (full jitter: the delay is drawn from [0, ceiling))', () => {
      assert.deepEqual(delays('throttled', 4, lowest), [0, 0, 0, 0]);
      assert.deepEqual(
        delays('throttled', 4, () => 0.5),
        [50, 100, 200, 400],
      );
    });

    // Invoke API reference, Errors (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html): TooManyRequestsException's
    // retryAfterSeconds, "the number of seconds the caller should wait before retrying".
    it("never retries before Lambda's Retry-After, and waits the curve when it is longer", () => {
      const snapshot: InvokeError = { ...invokeError('throttled'), reason: 'ConcurrentSnapshotCreateLimitExceeded', retryAfterMs: 7_000 };
      assert.deepEqual(decideInvokeRetry(snapshot, attempts({ throttled: 1 }), policy(), lowest), { action: 'retry', delayMs: 7_000 });
      assert.deepEqual(decideInvokeRetry(snapshot, attempts({ throttled: 1 }), policy(), highest), { action: 'retry', delayMs: 7_000 });
      const short: InvokeError = { ...snapshot, retryAfterMs: 1_000 };
      assert.deepEqual(decideInvokeRetry(short, attempts({ throttled: 9 }), policy(), highest), { action: 'retry', delayMs: 4999 });
    });

    it('honours a Retry-After up to 15 minutes, the longest a function runs', () => {
      const huge: InvokeError = { ...invokeError('throttled'), retryAfterMs: 86_400_000 };
      assert.deepEqual(decideInvokeRetry(huge, attempts({ throttled: 1 }), policy(), lowest), { action: 'retry', delayMs: 900_000 });
    });

    it('is retried for as long as the messages are held: nothing ran, so it is not an attempt', () => {
      const step = decideInvokeRetry(invokeError('throttled'), attempts({ throttled: 10_000 }), policy(), highest);
      assert.deepEqual(step, { action: 'retry', delayMs: 4999 });
    });

    it('backs off on throttles only, not on failures of other kinds', () => {
      const mixed = attempts({ notSent: 20, unknown: 2, unusable: 5, throttled: 1 });
      assert.deepEqual(decideInvokeRetry(invokeError('throttled'), mixed, policy(), highest), { action: 'retry', delayMs: 99 });
    });
  });

  describe('not-sent', () => {
    it('backs off with full jitter from 100 ms, capped at 1 s so dispatching resumes quickly', () => {
      assert.deepEqual(delays('not-sent', 7, highest), [99, 199, 399, 799, 999, 999, 999]);
      assert.deepEqual(delays('not-sent', 3, lowest), [0, 0, 0]);
    });

    it('never gives up and ignores throttle counts', () => {
      assert.deepEqual(decideInvokeRetry(invokeError('not-sent'), attempts({ notSent: 10_000 }), policy(), highest), {
        action: 'retry',
        delayMs: 999,
      });
      assert.deepEqual(decideInvokeRetry(invokeError('not-sent'), attempts({ notSent: 1, throttled: 50 }), policy(), highest), {
        action: 'retry',
        delayMs: 99,
      });
    });
  });

  describe('unknown', () => {
    it('holds the messages for unknownHoldMs (no jitter, no back-off) and gives up after maxUnknown holds', () => {
      const p = policy({ unknownHoldMs: 45_000, maxUnknown: 3 });
      const steps: InvokeRetryDecision[] = [];
      let counted: InvokeAttempts = NO_ATTEMPTS;
      for (let i = 0; i < 4; i++) {
        counted = countAttempt(counted, invokeError('unknown'));
        steps.push(decideInvokeRetry(invokeError('unknown'), counted, p, highest));
      }
      assert.deepEqual(steps, [
        { action: 'retry', delayMs: 45_000 },
        { action: 'retry', delayMs: 45_000 },
        { action: 'retry', delayMs: 45_000 },
        { action: 'give-up' },
      ]);
    });

    it('does not depend on random: the hold is a whole visibility timeout, never shortened', () => {
      for (const random of [lowest, () => 0.5, highest]) {
        assert.deepEqual(decideInvokeRetry(invokeError('unknown'), attempts({ unknown: 1 }), policy({ unknownHoldMs: 12_000 }), random), {
          action: 'retry',
          delayMs: 12_000,
        });
      }
    });

    it('gives up on the first unknown outcome when maxUnknown is 0', () => {
      assert.deepEqual(decideInvokeRetry(invokeError('unknown'), attempts({ unknown: 1 }), policy({ maxUnknown: 0 }), highest), {
        action: 'give-up',
      });
    });

    it('counts unknown outcomes only: throttles in between neither use up nor reset the allowance', () => {
      const p = policy({ maxUnknown: 2, unknownHoldMs: 1_000 });
      const sequence: InvokeErrorKind[] = ['unknown', 'throttled', 'throttled', 'unknown', 'not-sent', 'throttled', 'unknown'];
      let counted: InvokeAttempts = NO_ATTEMPTS;
      const actions = sequence.map((kind) => {
        counted = countAttempt(counted, invokeError(kind));
        return decideInvokeRetry(invokeError(kind), counted, p, highest);
      });
      assert.deepEqual(actions, [
        { action: 'retry', delayMs: 1_000 },
        { action: 'retry', delayMs: 99 },
        { action: 'retry', delayMs: 199 },
        { action: 'retry', delayMs: 1_000 },
        { action: 'retry', delayMs: 99 },
        { action: 'retry', delayMs: 399 },
        { action: 'give-up' },
      ]);
    });
  });

  it('unusable pauses the function, however often it happened', () => {
    for (const unusable of [1, 2, 100]) {
      assert.deepEqual(decideInvokeRetry(invokeError('unusable'), attempts({ unusable }), policy(), highest), { action: 'pause-function' });
    }
  });

  it('rejected gives up at once: the request itself is wrong and would fail again', () => {
    assert.deepEqual(decideInvokeRetry(invokeError('rejected'), NO_ATTEMPTS, policy({ maxUnknown: 100 }), highest), { action: 'give-up' });
    assert.deepEqual(decideInvokeRetry(invokeError('rejected'), attempts({ throttled: 3, notSent: 2 }), policy(), lowest), {
      action: 'give-up',
    });
  });
});

describe('safeToRelease', () => {
  it('allows releasing at once only while no attempt could still be running', () => {
    assert.equal(safeToRelease(NO_ATTEMPTS), true, 'nothing was tried');
    assert.equal(
      safeToRelease(attempts({ throttled: 5, notSent: 3, unusable: 2 })),
      true,
      'throttled, not sent and unusable calls never ran',
    );
    assert.equal(safeToRelease(attempts({ unknown: 1 })), false, 'an unknown outcome may still be running');
    assert.equal(
      safeToRelease(attempts({ unknown: 1, throttled: 9 })),
      false,
      'later throttles do not make an earlier unknown outcome safe',
    );
  });

  it('follows the counts of a real sequence', () => {
    let counted: InvokeAttempts = NO_ATTEMPTS;
    const safe = (['throttled', 'not-sent', 'unusable', 'unknown', 'throttled'] as const).map((kind) => {
      counted = countAttempt(counted, invokeError(kind));
      return safeToRelease(counted);
    });
    assert.deepEqual(safe, [true, true, true, false, false]);
  });
});
