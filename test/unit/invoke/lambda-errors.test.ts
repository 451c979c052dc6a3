// One classification of Lambda's Invoke errors for the SQS path and Temporal spillover (issue 21). The errors are
// the SDK's own exception classes, as @aws-sdk/client-lambda throws them; AWS's list is the Invoke API reference,
// Errors (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  InvalidRequestContentException,
  KMSDisabledException,
  LambdaServiceException,
  RequestTooLargeException,
  ResourceConflictException,
  ResourceNotFoundException,
  ResourceNotReadyException,
  ServiceException,
  SnapStartNotReadyException,
  TooManyRequestsException,
} from '@aws-sdk/client-lambda';
import { classifyInvokeError, retryHorizon } from '../../../src/invoke/lambda-errors.ts';
import { decideInvokeRetry, countAttempt, NO_ATTEMPTS } from '../../../src/invoke/invoke-retry.ts';

const meta = (status: number) => ({ $metadata: { httpStatusCode: status } });

/** [name, error as the SDK throws it, the SQS path's kind, how soon spillover retries] */
const CASES: [string, unknown, string, string][] = [
  ['TooManyRequestsException (429)', new TooManyRequestsException({ message: 'Rate Exceeded.', ...meta(429) }), 'throttled', 'throttled'],
  [
    'ResourceConflictException (409, Pending)',
    new ResourceConflictException({ message: 'The function is currently in the following state: Pending', ...meta(409) }),
    'unusable',
    'soon',
  ],
  [
    'SnapStartNotReadyException (409)',
    new SnapStartNotReadyException({ message: 'Lambda is initializing your function.', ...meta(409) }),
    'unusable',
    'soon',
  ],
  ['ResourceNotReadyException (502)', new ResourceNotReadyException({ message: 'inactive', ...meta(502) }), 'unusable', 'soon'],
  ['KMSDisabledException (502)', new KMSDisabledException({ message: 'disabled', ...meta(502) }), 'unusable', 'soon'],
  [
    'ResourceNotFoundException (404)',
    new ResourceNotFoundException({ message: 'Function not found', ...meta(404) }),
    'unusable',
    'after-a-fix',
  ],
  [
    'AccessDeniedException (403, no class of its own in the SDK)',
    new LambdaServiceException({ name: 'AccessDeniedException', $fault: 'client', message: 'no', ...meta(403) }),
    'unusable',
    'after-a-fix',
  ],
  ['RequestTooLargeException (413)', new RequestTooLargeException({ message: 'too big', ...meta(413) }), 'rejected', 'after-a-fix'],
  [
    'InvalidRequestContentException (400)',
    new InvalidRequestContentException({ message: 'bad json', ...meta(400) }),
    'rejected',
    'after-a-fix',
  ],
  ['ServiceException (500)', new ServiceException({ message: 'x', ...meta(500) }), 'unknown', 'soon'],
  ['a 503 without a type', new LambdaServiceException({ name: 'Unknown', $fault: 'server', message: '', ...meta(503) }), 'unknown', 'soon'],
  ['ECONNREFUSED (nothing sent)', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'not-sent', 'soon'],
];

describe('Lambda error classification', () => {
  for (const [name, err, kind, horizon] of CASES) {
    it(`${name}: ${kind} on the SQS path, ${horizon} for spillover`, () => {
      const error = classifyInvokeError(err);
      assert.equal(error.kind, kind);
      assert.equal(retryHorizon(error), horizon);
    });
  }

  it(
    'ResourceConflictException is a state that passes (AWS Lambda Developer Guide, "Lambda function states": Pending; ' +
      '"Troubleshoot invocation issues in Lambda"): the SQS path pauses the function and tries again, spillover retries soon',
    () => {
      const error = classifyInvokeError(
        new ResourceConflictException({
          message: 'The operation cannot be performed at this time. The function is currently in the following state: Pending',
          ...meta(409),
        }),
      );
      // Not given up (the messages stay invisible, no receive count spent) and not held as an unknown outcome.
      assert.deepEqual(
        decideInvokeRetry(error, countAttempt(NO_ATTEMPTS, error), { unknownHoldMs: 30_000, maxUnknown: 3 }, () => 0),
        {
          action: 'pause-function',
        },
      );
      // Not "after a fix": nobody has to act for the function to become Active.
      assert.equal(retryHorizon(error), 'soon');
    },
  );
});
