import { ANSWER_TOO_LARGE } from '../aws/answer-caps.ts';
import { classifyAwsError } from '../aws/errors.ts';
import type { InvokeError } from './lambda-invoker.ts';

/** Errors that say the function (not the request) cannot be invoked until someone fixes it. */
const UNUSABLE = new Set([
  'AccessDeniedException',
  'ResourceNotFoundException',
  'ResourceConflictException',
  'ResourceNotReadyException',
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
  'SnapStartNotReadyException',
  'SnapStartTimeoutException',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'ExpiredTokenException',
]);

/** `signal`: the signal the call was given, so that its timeout counts as "no answer in time". */
export function classifyInvokeError(err: unknown, signal?: AbortSignal): InvokeError {
  const e = classifyAwsError(err, signal);
  const base = { code: e.code, message: e.message, ...(e.status !== undefined ? { status: e.status } : {}) };
  if (e.kind === 'throttled') return { kind: 'throttled', ...base };
  // Nothing left this machine (the one decision: src/aws/errors.ts notSentCode).
  if (e.notSent) return { kind: 'not-sent', ...base };
  if (e.code === ANSWER_TOO_LARGE) return { kind: 'rejected', ...base };
  if (UNUSABLE.has(e.code) || e.status === 403) return { kind: 'unusable', ...base };
  if (e.kind === 'fatal' && e.status !== undefined && e.status >= 400 && e.status < 500) return { kind: 'rejected', ...base };
  // 5xx, resets, timeouts, and anything that failed without an HTTP answer we understand.
  return { kind: 'unknown', ...base };
}
