import { ANSWER_TOO_LARGE } from '../core/answer-caps.ts';
import { classifyAwsError } from '../core/errors.ts';
import type { InvokeError } from '../core/function-invoker.ts';

// The one classification of Lambda's Invoke errors, for the SQS path (src/invoke/retry.ts, through the invokers in
// src/aws/) and Temporal spillover (src/temporal/worker-invoker.ts). AWS's list: the Invoke API reference, Errors
// (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html).

/**
 * Errors that say the function cannot run now, in a state that ends without anyone acting:
 * - ResourceConflictException (409): the function is Pending, being created or set up again after it was
 *   Inactive ("The operation cannot be performed at this time. The function is currently in the following state:
 *   Pending"; AWS Lambda Developer Guide, "Lambda function states" and "Troubleshoot invocation issues in Lambda");
 *   about a minute when Lambda creates a VPC function's network interfaces;
 * - ResourceNotReadyException (502): the function is Inactive and its VPC connection is gone; "Wait for the VPC
 *   connection to reestablish and try again" (Invoke API reference, Errors);
 * - SnapStartNotReadyException (409): an Inactive SnapStart version; "Wait until the function version reaches the
 *   Active state, and then invoke it again" (AWS Lambda Developer Guide, "Troubleshooting SnapStart errors").
 * Every invocation fails alike meanwhile, so the SQS path pauses the function as for UNUSABLE, and retries when
 * the pause ends; spillover retries them soon, not after a fix.
 */
const WAIT_FOR_STATE = new Set(['ResourceConflictException', 'ResourceNotReadyException', 'SnapStartNotReadyException']);

/** Errors that say the function (not the request) cannot be invoked until someone fixes it. */
const UNUSABLE = new Set([
  'AccessDeniedException',
  'ResourceNotFoundException',
  'KMSAccessDeniedException',
  'KMSDisabledException',
  'KMSInvalidStateException',
  'KMSNotFoundException',
  'EC2AccessDeniedException',
  'EC2UnexpectedException',
  'ENILimitReachedException',
  'InvalidRuntimeException',
  'InvalidSecurityGroupIDException',
  'InvalidSubnetIDException',
  'InvalidZipFileException',
  'SubnetIPAddressLimitReachedException',
  'EFSMountConnectivityException',
  'EFSMountFailureException',
  'EFSMountTimeoutException',
  'EFSIOException',
  'SnapStartException',
  'SnapStartTimeoutException',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'ExpiredTokenException',
]);

/** `signal`: the signal the call was given, so that its timeout counts as "no answer in time". */
export function classifyInvokeError(err: unknown, signal?: AbortSignal): InvokeError {
  const e = classifyAwsError(err, signal);
  const base = { code: e.code, message: e.message, ...(e.status !== undefined ? { status: e.status } : {}) };
  if (e.kind === 'throttled') {
    return {
      kind: 'throttled',
      ...base,
      ...(e.reason !== undefined ? { reason: e.reason } : {}),
      ...(e.retryAfterSec !== undefined ? { retryAfterMs: e.retryAfterSec * 1000 } : {}),
    };
  }
  // Nothing left this machine (the one decision: src/core/errors.ts notSentCode).
  if (e.notSent) return { kind: 'not-sent', ...base };
  if (e.code === ANSWER_TOO_LARGE) return { kind: 'rejected', ...base, ran: true };
  if (UNUSABLE.has(e.code) || WAIT_FOR_STATE.has(e.code) || e.status === 403) return { kind: 'unusable', ...base };
  if (e.kind === 'fatal' && e.status !== undefined && e.status >= 400 && e.status < 500) return { kind: 'rejected', ...base };
  // 5xx, resets, timeouts, and anything that failed without an HTTP answer we understand.
  return { kind: 'unknown', ...base };
}

/**
 * How soon trying again can help, for a caller that holds no messages (spillover's Event invocations, which start
 * Temporal workers):
 * - throttled: over the function's or the account's concurrency; back off;
 * - soon: nothing ran, Lambda's side failed (5xx), no answer came, or the function waits for a state to pass
 *   (WAIT_FOR_STATE);
 * - after-a-fix: someone must act first: the function is missing, access is denied, the request is invalid.
 */
export type RetryHorizon = 'throttled' | 'soon' | 'after-a-fix';

export function retryHorizon(error: InvokeError): RetryHorizon {
  switch (error.kind) {
    case 'throttled':
      return 'throttled';
    case 'not-sent':
    case 'unknown':
      return 'soon';
    case 'unusable':
      // A 5xx is Lambda's side (a VPC, EFS or KMS set-up that failed), retried within a minute as any 5xx.
      return WAIT_FOR_STATE.has(error.code) || (error.status !== undefined && error.status >= 500) ? 'soon' : 'after-a-fix';
    case 'rejected':
      return 'after-a-fix';
  }
}
