import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MAX_VISIBILITY_SEC,
  curveSec,
  planRetryBackoff,
  receiveCountOf,
  retryDelaySec,
  type RetryBackoff,
} from '../../../src/settle/retry-backoff.ts';
import { message } from '../../support/factories.ts';

const exact: RetryBackoff = { baseSec: 2, maxSec: 60, jitter: 0 };
const received = (count: number, group?: string) =>
  message({ Attributes: { ApproximateReceiveCount: String(count), ...(group !== undefined ? { MessageGroupId: group } : {}) } });
const ids = (ms: readonly { MessageId?: string | undefined }[]) => ms.map((m) => m.MessageId);

describe('retry back-off', () => {
  it('doubles from the base with each receive and stops at the cap', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7, 20].map((n) => retryDelaySec(n, exact, () => 0.9)),
      [2, 4, 8, 16, 32, 60, 60, 60],
    );
  });

  it('jitter takes up to its share off the delay: random 0 gives the curve, random near 1 the low end', () => {
    const p: RetryBackoff = { baseSec: 10, maxSec: 1000, jitter: 0.5 };
    assert.equal(
      retryDelaySec(3, p, () => 0),
      40,
    );
    assert.equal(
      retryDelaySec(3, p, () => 0.999_999),
      21,
    ); // 40 * 0.5000005 rounded up
    assert.equal(
      retryDelaySec(3, p, () => 0.5),
      30,
    );
  });

  it('rounds up to whole seconds (SQS takes integers) and never passes the 12-hour limit or the handle limit', () => {
    assert.equal(
      retryDelaySec(1, { baseSec: 0.4, maxSec: 10, jitter: 0 }, () => 0),
      1,
    );
    assert.equal(
      retryDelaySec(100, { baseSec: 60, maxSec: 10e6, jitter: 0 }, () => 0),
      MAX_VISIBILITY_SEC,
    );
    assert.equal(
      retryDelaySec(5, exact, () => 0, 7),
      7,
    );
    assert.equal(
      retryDelaySec(5, exact, () => 0, -3),
      0,
    );
  });

  it('treats a missing or broken receive count as the first delivery', () => {
    assert.equal(receiveCountOf(message({ Attributes: {} })), 1);
    assert.equal(receiveCountOf(message({ Attributes: { ApproximateReceiveCount: 'x' } })), 1);
    assert.equal(receiveCountOf(received(7)), 7);
    assert.equal(curveSec(0, exact), 2);
    assert.equal(curveSec(10_000, exact), 60);
  });

  it('standard queue: each message by its own receive count, grouped by timeout', () => {
    const a = received(1);
    const b = received(3);
    const c = received(1);
    const steps = planRetryBackoff([a, b, c], false, exact, () => 0);
    assert.deepEqual(
      steps.map((s) => [s.timeoutSec, ids(s.messages)]),
      [
        [2, ids([a, c])],
        [8, ids([b])],
      ],
    );
  });

  it('standard queue: one jitter draw per message', () => {
    let draws = 0;
    planRetryBackoff([received(1), received(1), received(1)], false, { ...exact, jitter: 1 }, () => (draws++, 0.5));
    assert.equal(draws, 3);
  });

  it('FIFO: one timeout per message group, from its highest receive count, so a group never overtakes itself', () => {
    const g1a = received(2, 'g1');
    const g1b = received(1, 'g1');
    const g2 = received(1, 'g2');
    let draws = 0;
    const steps = planRetryBackoff([g1a, g1b, g2], true, exact, () => (draws++, 0));
    assert.equal(draws, 2);
    assert.deepEqual(
      steps.map((s) => [s.timeoutSec, ids(s.messages)]),
      [
        [4, ids([g1a, g1b])],
        [2, ids([g2])],
      ],
    );
  });

  it('nothing kept, nothing to change', () => {
    assert.deepEqual(planRetryBackoff([], false, exact, Math.random), []);
    assert.deepEqual(planRetryBackoff([], true, exact, Math.random), []);
  });
});
