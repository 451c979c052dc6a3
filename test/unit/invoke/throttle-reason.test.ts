import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ThrottleReason } from '@aws-sdk/client-lambda';
import { THROTTLE_REASONS, describeThrottle } from '../../../src/invoke/throttle-reason.ts';

describe('throttle reason', () => {
  it("knows exactly the SDK's ThrottleReason values (its model of Lambda's TooManyRequestsException)", () => {
    assert.deepEqual([...THROTTLE_REASONS].sort(), Object.values(ThrottleReason).sort());
  });

  it('labels a known Reason as itself, an unknown one "other", none "none"; the log keeps the Reason or a capped message', () => {
    assert.deepEqual(describeThrottle({ reason: 'ConcurrentInvocationLimitExceeded', message: 'Rate Exceeded.' }), {
      reason: 'ConcurrentInvocationLimitExceeded',
      label: 'ConcurrentInvocationLimitExceeded',
    });
    assert.deepEqual(describeThrottle({ reason: 'ExecutionEnvironmentCpuLimitExceeded', message: 'x' }), {
      reason: 'ExecutionEnvironmentCpuLimitExceeded',
      label: 'other',
    });
    const long = describeThrottle({ message: `busy ${'x'.repeat(10_000)}` });
    assert.equal(long.label, 'none');
    assert.ok(Buffer.byteLength(long.reason) < 300, `capped: ${long.reason.length}`);
    assert.ok(long.reason.startsWith('busy x'));
  });
});
