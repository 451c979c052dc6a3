import { capText } from '../util/cap-text.ts';
import type { InvokeError } from '../core/function-invoker.ts';

/**
 * Why Lambda throttled an Invoke, as an operator needs it: a CPU or capacity limit (Lambda Managed Instances
 * rejecting new invokes to protect those in flight) told apart from a concurrency limit (reserved or account).
 *
 * Lambda's TooManyRequestsException carries `Reason`, one of the values below: the SDK's own model
 * (`ThrottleReason` in @aws-sdk/client-lambda; test/unit/invoke/throttle-reason.test.ts holds this list to it) and
 * the Invoke API reference (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html, Errors). A 429 from
 * Managed Instances may carry none, or a value newer than this list ("Troubleshooting Lambda Managed Instances",
 * https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-troubleshooting.html: "Lambda Managed
 * Instances might reject new invokes to protect invokes that are already in flight").
 */
export const THROTTLE_REASONS = [
  'CallerRateLimitExceeded',
  'ConcurrentInvocationLimitExceeded',
  'ConcurrentSnapshotCreateLimitExceeded',
  'FunctionInvocationRateLimitExceeded',
  'ReservedFunctionConcurrentInvocationLimitExceeded',
  'ReservedFunctionInvocationRateLimitExceeded',
] as const;

/**
 * The metric label: a known Reason, `other` for a Reason not in the list, `none` without one. Never free text:
 * a label's values make a metric's series, and a text that varies would make them without bound.
 */
export type ThrottleLabel = (typeof THROTTLE_REASONS)[number] | 'other' | 'none';

/** A message says more than nothing, but it is Lambda's text of any length: this much of it is logged. */
const MESSAGE_CAP_BYTES = 256;

const KNOWN: ReadonlySet<string> = new Set(THROTTLE_REASONS);

/** The throttle's reason for the log line (Reason, or else the capped message) and its bounded metric label. */
export function describeThrottle(error: Pick<InvokeError, 'reason' | 'message'>): { reason: string; label: ThrottleLabel } {
  const given = error.reason;
  if (given === undefined) return { reason: capText(error.message, MESSAGE_CAP_BYTES), label: 'none' };
  return { reason: given, label: KNOWN.has(given) ? (given as ThrottleLabel) : 'other' };
}
