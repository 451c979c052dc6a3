import { sqsCallOrigin, type ServiceEndpoint } from './endpoints.ts';
import { callErrorOf, firstLine, StartupError, type ClassifiedError } from '../core/errors.ts';
import type { QueueLookup, ResolvedQueue } from '../core/queue.ts';
import { queueNameOf } from '../core/queue.ts';
import type { QueueSpec } from '../receive/queue-order.ts';
import { maxReceiveCountOf } from '../settle/failure-destination.ts';

/** The SQS calls that resolve a queue, named for the IAM action each needs (sqs:GetQueueUrl, sqs:GetQueueAttributes). */
export type ResolveOperation = 'GetQueueUrl' | 'GetQueueAttributes';

/**
 * A queue that could not be resolved: which call failed and how, so that `workerless check` and the start-up
 * (check/queue-resolve.ts reads it for both) can say what it means and name the missing IAM action.
 */
export class QueueResolveError extends StartupError {
  readonly ref: string;
  readonly operation: ResolveOperation;
  readonly error: ClassifiedError;
  /** The endpoint the failed call went to, when known: "cannot reach" names it. */
  readonly endpoint: string | undefined;

  constructor(ref: string, operation: ResolveOperation, error: ClassifiedError, endpoint?: string) {
    super(`${operation} for queue "${ref}": ${error.code}: ${firstLine(error.message)}`);
    this.ref = ref;
    this.operation = operation;
    this.error = error;
    this.endpoint = endpoint;
  }
}

/** The SQS attributes resolveQueue reads. */
export const RESOLVE_ATTRIBUTES = ['QueueArn', 'VisibilityTimeout', 'FifoQueue', 'RedrivePolicy'] as const;

/**
 * Resolves a name to its URL (GetQueueUrl) and reads the queue's ARN, FIFO flag, visibility timeout and redrive
 * policy (GetQueueAttributes), so that every payload carries the queue's real eventSourceARN and awsRegion. Throws
 * a QueueResolveError when an SQS call failed, a StartupError (whose message is what is wrong with the queue, named
 * by the caller) when its answer cannot be used. `endpoint`: the run's SQS endpoint, so that an error names where
 * the failed call went.
 */
export async function resolveQueue(
  lookup: QueueLookup,
  spec: QueueSpec,
  visibilityTimeoutOverrideSec: number | undefined,
  signal?: AbortSignal,
  endpoint?: ServiceEndpoint,
): Promise<ResolvedQueue> {
  const isUrl = /^https?:\/\//i.test(spec.ref);
  const name = queueNameOf(spec.ref);
  let operation: ResolveOperation = isUrl ? 'GetQueueAttributes' : 'GetQueueUrl';
  let calledUrl: string | undefined = isUrl ? spec.ref : undefined;
  try {
    const url = isUrl ? spec.ref : await lookup.queueUrl(spec.ref, signal);
    operation = 'GetQueueAttributes';
    calledUrl = url;
    const attrs = await lookup.queueAttributes(url, RESOLVE_ATTRIBUTES, signal);
    const arn = attrs['QueueArn'] ?? '';
    const region = arn.split(':')[3] ?? '';
    if (!arn || !region) throw new StartupError(`has no usable QueueArn (got "${arn}")`);
    return {
      name,
      url,
      arn,
      region,
      fifo: attrs['FifoQueue'] === 'true' || name.endsWith('.fifo'),
      visibilityTimeoutSec: visibilityTimeoutOverrideSec ?? Number(attrs['VisibilityTimeout'] ?? 30),
      weight: spec.weight,
      ...withMaxReceiveCount(maxReceiveCountOf(attrs['RedrivePolicy'])),
    };
  } catch (err) {
    if (err instanceof StartupError) throw err;
    throw new QueueResolveError(spec.ref, operation, callErrorOf(err), endpoint && sqsCallOrigin(endpoint, calledUrl));
  }
}

/** The field only when the queue has a redrive policy, so a queue without one reads as it always has. */
function withMaxReceiveCount(n: number | undefined): { maxReceiveCount?: number } {
  return n === undefined ? {} : { maxReceiveCount: n };
}
