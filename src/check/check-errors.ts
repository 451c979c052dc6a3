// What an AWS error means for the operator of `workerless check`: access denied names the IAM actions, refused
// credentials say so, an unreachable service names the endpoint tried; one rule for every check's line.
import { unreachableReason, type ClassifiedError } from '../core/errors.ts';
import { NETWORK_HINT, firstLine } from '../core/errors.ts';
import type { CheckResult } from './check-ports.ts';

/** A result that failed because its service could not be reached; merged with its siblings into one line. */
export interface Checked extends CheckResult {
  readonly unreachable?: { readonly service: string; readonly reason: string };
}

/** What both AWS error classifications (SQS/CloudWatch and Lambda Invoke) tell. */
type AwsErrorFacts = Pick<ClassifiedError, 'code' | 'message' | 'status' | 'fault'>;

/**
 * The line for an AWS error: access denied names the IAM actions, an unreachable service the endpoint that was
 * tried (when known) and the network hint, a TLS or proxy fault (an untrusted, mismatched or expired certificate,
 * a proxy that refused the tunnel) the endpoint and the fault, whose words carry their own hint.
 */
export function explainAwsError(
  e: AwsErrorFacts,
  service: string,
  actions: readonly string[],
  endpoint: string | undefined,
): Omit<Checked, 'name' | 'ok'> {
  if (isAccessDenied(e)) return { detail: `access denied (needs ${actions.join(', ')})` };
  if (CREDENTIAL_ERRORS.has(e.code)) return { detail: `credentials refused (${e.code}): ${firstLine(e.message)}` };
  const reason = unreachableReason(e);
  if (reason !== undefined) {
    const where = endpoint !== undefined ? `${service} at ${endpoint}` : service;
    const hint = e.fault !== undefined ? '' : ` (${NETWORK_HINT})`;
    return { detail: `cannot reach ${where}: ${reason}${hint}`, unreachable: { service: where, reason } };
  }
  return { detail: `${e.code}: ${firstLine(e.message)}` };
}

/** The request was signed by someone AWS knows, who lacks the permission. */
function isAccessDenied(e: AwsErrorFacts): boolean {
  if (/^(AWS\.SimpleQueueService\.)?AccessDenied(Exception)?$|^AuthorizationError(Exception)?$|^UnauthorizedOperation$/.test(e.code))
    return true;
  return e.status === 403 && !CREDENTIAL_ERRORS.has(e.code) && !e.code.startsWith('KMS');
}

/** The credentials themselves are wrong, missing or expired: no IAM policy would help. */
export const CREDENTIAL_ERRORS = new Set([
  'CredentialsProviderError',
  'InvalidClientTokenId',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'SignatureDoesNotMatch',
  'IncompleteSignature',
  'IncompleteSignatureException',
  'MissingAuthenticationToken',
  'MissingAuthenticationTokenException',
  'ExpiredToken',
  'ExpiredTokenException',
  'RequestExpired',
  'InvalidAccessKeyId',
]);
