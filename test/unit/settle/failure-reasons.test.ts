import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FailureReason } from '../../../src/settle/failure-destination.ts';
import { FailureReasons } from '../../../src/settle/failure-reasons.ts';
import { capText, TEXT_CAP_BYTES } from '../../../src/util/cap-text.ts';

const reason = (errorMessage: string): FailureReason => ({ kind: 'function-error', errorType: 'Error', errorMessage, requestId: 'r-1' });

describe('FailureReasons', () => {
  it('recalls a reason by queue ARN and message id until it is forgotten', () => {
    const reasons = new FailureReasons();
    reasons.remember('arn:q1', 'm-1', reason('boom'));
    assert.deepEqual(reasons.recall('arn:q1', 'm-1'), reason('boom'));
    assert.equal(reasons.recall('arn:q2', 'm-1'), undefined, 'another queue');
    reasons.remember('arn:q1', 'm-1', reason('later'));
    assert.equal(reasons.recall('arn:q1', 'm-1')?.errorMessage, 'later', 'the last reason');
    reasons.forget('arn:q1', 'm-1');
    assert.equal(reasons.recall('arn:q1', 'm-1'), undefined);
    assert.equal(reasons.size, 0);
  });

  it('keeps at most 1000, dropping the one refused longest ago', () => {
    const reasons = new FailureReasons();
    for (let i = 0; i < 1000; i++) reasons.remember('arn:q', `m-${i}`, reason('x'));
    reasons.remember('arn:q', 'm-0', reason('again'));
    reasons.remember('arn:q', 'm-new', reason('x'));
    assert.equal(reasons.size, 1000);
    assert.equal(reasons.recall('arn:q', 'm-1'), undefined);
    assert.equal(reasons.recall('arn:q', 'm-0')?.errorMessage, 'again');
  });

  it("keeps the function's text capped so that the record's cap does not cut it again", () => {
    const reasons = new FailureReasons();
    reasons.remember('arn:q', 'm', reason('é'.repeat(100_000)));
    const kept = reasons.recall('arn:q', 'm')!.errorMessage;
    assert.ok(Buffer.byteLength(kept) <= TEXT_CAP_BYTES);
    assert.equal(capText(kept), kept);
    assert.match(kept, /…\[\d+ bytes cut\]$/);
  });
});
