import type { Message } from '@aws-sdk/client-sqs';
import { sqsCallOrigin, type ServiceEndpoint } from './endpoints.ts';
import { callErrorOf, unreachableReason, type ClassifiedError } from './errors.ts';
import type { QueueSpec } from '../receive/queue-order.ts';
import { maxReceiveCountOf } from '../settle/failure-destination.ts';

/** A queue as the dispatcher uses it, resolved once at start-up. */
export interface ResolvedQueue {
  /** Short name, used in logs and as the metrics dimension. */
  readonly name: string;
  readonly url: string;
  readonly arn: string;
  /** The queue's region, from its ARN: the payload's awsRegion. */
  readonly region: string;
  readonly fifo: boolean;
  /** The queue's visibility timeout at start-up, or the --visibility-timeout override (src/settle/queue-visibility.ts). */
  readonly visibilityTimeoutSec: number;
  readonly weight: number;
  /** The maxReceiveCount of the queue's RedrivePolicy at start-up; undefined: no redrive policy (src/settle/queue-visibility.ts keeps it current). */
  readonly maxReceiveCount?: number | undefined;
}

export interface ReceiptEntry {
  readonly id: string;
  readonly receiptHandle: string;
}

export interface EntryFailure {
  readonly id: string;
  readonly code: string;
  readonly message: string;
}

export interface ReceiveOptions {
  /** 1-10 */
  readonly max: number;
  /** 0 = short poll; up to 20 = long poll. */
  readonly waitSec: number;
  /**
   * The visibility timeout SQS applies to these messages. The Receiver always states one (the one their lease
   * assumes); left out, SQS applies the queue's current timeout, whatever it has become since start-up.
   */
  readonly visibilityTimeoutSec?: number | undefined;
  /**
   * A receive that has not been sent when this aborts is not sent (it returns no messages). It never aborts a
   * receive already sent: SQS could hand messages to a call whose answer nobody reads.
   */
  readonly startBefore?: AbortSignal | undefined;
}

/**
 * The SQS operations the dispatcher needs. Every call has a deadline; a failure is thrown as an AwsCallError
 * that carries its classification (retryable, throttled, fatal), so callers never see raw SDK errors.
 */
export interface MessageSource {
  receive(queue: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]>;
  /** Deletes up to 10 messages; returns the entries SQS refused. */
  deleteBatch(queue: ResolvedQueue, entries: readonly ReceiptEntry[], signal?: AbortSignal): Promise<EntryFailure[]>;
  /** Sets the visibility timeout of up to 10 messages (0 releases them at once). */
  changeVisibility(
    queue: ResolvedQueue,
    entries: readonly ReceiptEntry[],
    timeoutSec: number,
    signal?: AbortSignal,
  ): Promise<EntryFailure[]>;
}

/** What SendMessage sends (a FIFO queue needs the group and deduplication ids). */
export interface OutgoingMessage {
  readonly body: string;
  readonly groupId?: string | undefined;
  readonly deduplicationId?: string | undefined;
  /** String message attributes, by name. */
  readonly attributes?: Readonly<Record<string, string>> | undefined;
}

/**
 * SendMessage, for a failure destination (src/settle/deliver-failures.ts): resolves with the new message's id
 * once SQS accepted it; a failure is thrown as a classified AwsCallError, as every MessageSource call is.
 */
export interface MessageSender {
  sendMessage(queueUrl: string, message: OutgoingMessage, signal?: AbortSignal): Promise<string>;
}

/**
 * A long poll gets its wait time plus this margin; SQS answers a long poll at its wait time, so a call still
 * open after that is hung (a dead connection behind a NAT, a stuck proxy) and must not hold its loop.
 */
export const RECEIVE_MARGIN_MS = 5_000;
/** Every other SQS call answers in milliseconds when SQS is healthy. */
export const CALL_DEADLINE_MS = 5_000;

/** The short name of a queue reference (a name, or a URL's last path segment): the name in logs and metrics. */
export function queueNameOf(ref: string): string {
  return /^https?:\/\//i.test(ref) ? (ref.replace(/\/+$/, '').split('/').pop() ?? ref) : ref;
}

/** A start-up failure with a one-line explanation for the operator. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** The SQS calls that resolve a queue, named for the IAM action each needs (sqs:GetQueueUrl, sqs:GetQueueAttributes). */
export type ResolveOperation = 'GetQueueUrl' | 'GetQueueAttributes';

/** A queue that could not be resolved: which call failed and how, so `workerless check` can name the missing IAM action. */
export class QueueResolveError extends StartupError {
  readonly ref: string;
  readonly operation: ResolveOperation;
  readonly error: ClassifiedError;
  /** The endpoint the failed call went to, when known: "cannot reach" names it. */
  readonly endpoint: string | undefined;

  constructor(ref: string, operation: ResolveOperation, error: ClassifiedError, endpoint?: string) {
    super(explainQueueError(ref, error, endpoint));
    this.ref = ref;
    this.operation = operation;
    this.error = error;
    this.endpoint = endpoint;
  }
}

/** The SQS attributes resolveQueue reads. */
export const RESOLVE_ATTRIBUTES = ['QueueArn', 'VisibilityTimeout', 'FifoQueue', 'RedrivePolicy'] as const;

/**
 * The two start-up calls that resolve a queue, with the SDK's retries and no deadline but `signal`'s.
 * Failures are thrown as an AwsCallError (classified by the adapter, like every MessageSource call).
 */
export interface QueueLookup {
  /** GetQueueUrl: the URL of the queue with this name. */
  queueUrl(name: string, signal?: AbortSignal): Promise<string>;
  /** GetQueueAttributes: the named attributes of the queue at this URL. */
  queueAttributes(url: string, names: readonly string[], signal?: AbortSignal): Promise<Record<string, string>>;
}

/**
 * Resolves names to URLs (GetQueueUrl) and reads each queue's ARN, FIFO flag, visibility timeout and redrive
 * policy (GetQueueAttributes), so that every payload carries the queue's real eventSourceARN and awsRegion.
 * Any failure here is fatal: the daemon must not start with a queue it cannot read.
 */
export async function resolveQueues(
  lookup: QueueLookup,
  specs: readonly QueueSpec[],
  visibilityTimeoutOverrideSec: number | undefined,
  signal?: AbortSignal,
  endpoint?: ServiceEndpoint,
): Promise<ResolvedQueue[]> {
  return Promise.all(specs.map((spec) => resolveQueue(lookup, spec, visibilityTimeoutOverrideSec, signal, endpoint)));
}

/**
 * Resolves one queue (see resolveQueues); throws a StartupError, a QueueResolveError when an SQS call failed.
 * `endpoint`: the run's SQS endpoint, so that an error names where the failed call went.
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
    if (!arn || !region) throw new StartupError(`queue "${spec.ref}" has no usable QueueArn (got "${arn}")`);
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

/** One line; "cannot reach" names the endpoint that was tried when it is known. */
export function explainQueueError(ref: string, e: ClassifiedError, endpoint?: string): string {
  if (e.code === 'QueueDoesNotExist' || e.code === 'AWS.SimpleQueueService.NonExistentQueue') {
    return `queue "${ref}" does not exist (${e.code})`;
  }
  const unreachable = unreachableReason(e);
  if (unreachable) return `cannot reach SQS${endpoint ? ` at ${endpoint}` : ''} for queue "${ref}": ${unreachable} (${NETWORK_HINT})`;
  return `cannot read queue "${ref}": ${e.code}: ${firstLine(e.message)}`;
}

/** Appended to every "cannot reach" start-up message. */
export const NETWORK_HINT = 'check --endpoint-url / --region and the network';

export function firstLine(text: string): string {
  return text.split('\n')[0]?.trim() ?? '';
}
