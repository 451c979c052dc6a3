import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { AwsCallError, classifyAwsError, unreachableReason, withDeadline, type ClassifiedError } from '../aws-errors.ts';
import type { QueueSpec } from './queue-order.ts';

/** A queue as the dispatcher uses it, resolved once at start-up. */
export interface ResolvedQueue {
  /** Short name, used in logs and as the metrics dimension. */
  readonly name: string;
  readonly url: string;
  readonly arn: string;
  /** The queue's region, from its ARN: the payload's awsRegion. */
  readonly region: string;
  readonly fifo: boolean;
  /** The queue's default visibility timeout, or the --visibility-timeout override. */
  readonly visibilityTimeoutSec: number;
  readonly weight: number;
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
  /** Overrides the queue's visibility timeout for these messages. */
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

/**
 * A long poll gets its wait time plus this margin; SQS answers a long poll at its wait time, so a call still
 * open after that is hung (a dead connection behind a NAT, a stuck proxy) and must not hold its loop.
 */
export const RECEIVE_MARGIN_MS = 5_000;
/** Every other SQS call answers in milliseconds when SQS is healthy. */
export const CALL_DEADLINE_MS = 5_000;

export class SqsMessageSource implements MessageSource {
  readonly #client: SQSClient;

  constructor(client: SQSClient) {
    this.#client = client;
  }

  async receive(queue: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]> {
    if (options.startBefore?.aborted) return [];
    const command = new ReceiveMessageCommand({
      QueueUrl: queue.url,
      MaxNumberOfMessages: options.max,
      WaitTimeSeconds: options.waitSec,
      ...(options.visibilityTimeoutSec !== undefined ? { VisibilityTimeout: options.visibilityTimeoutSec } : {}),
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    });
    const out = await this.#call('ReceiveMessage', options.waitSec * 1000 + RECEIVE_MARGIN_MS, signal, (abortSignal) =>
      this.#client.send(command, { abortSignal }),
    );
    return out.Messages ?? [];
  }

  async deleteBatch(queue: ResolvedQueue, entries: readonly ReceiptEntry[], signal?: AbortSignal): Promise<EntryFailure[]> {
    if (entries.length === 0) return [];
    const command = new DeleteMessageBatchCommand({
      QueueUrl: queue.url,
      Entries: entries.map((e) => ({ Id: e.id, ReceiptHandle: e.receiptHandle })),
    });
    const out = await this.#call('DeleteMessageBatch', CALL_DEADLINE_MS, signal, (abortSignal) =>
      this.#client.send(command, { abortSignal }),
    );
    return entryFailures(out.Failed);
  }

  async changeVisibility(
    queue: ResolvedQueue,
    entries: readonly ReceiptEntry[],
    timeoutSec: number,
    signal?: AbortSignal,
  ): Promise<EntryFailure[]> {
    if (entries.length === 0) return [];
    const command = new ChangeMessageVisibilityBatchCommand({
      QueueUrl: queue.url,
      Entries: entries.map((e) => ({ Id: e.id, ReceiptHandle: e.receiptHandle, VisibilityTimeout: timeoutSec })),
    });
    const out = await this.#call('ChangeMessageVisibilityBatch', CALL_DEADLINE_MS, signal, (abortSignal) =>
      this.#client.send(command, { abortSignal }),
    );
    return entryFailures(out.Failed);
  }

  /** Runs one call under its deadline and classifies what it throws, once, here at the boundary. */
  async #call<T>(
    operation: string,
    deadlineMs: number,
    signal: AbortSignal | undefined,
    send: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const abortSignal = withDeadline(deadlineMs, signal);
    try {
      return await send(abortSignal);
    } catch (err) {
      throw new AwsCallError(operation, classifyAwsError(err, abortSignal));
    }
  }
}

function entryFailures(
  failed: readonly { Id?: string | undefined; Code?: string | undefined; Message?: string | undefined }[] | undefined,
): EntryFailure[] {
  return (failed ?? []).map((f) => ({ id: f.Id ?? '', code: f.Code ?? 'Unknown', message: f.Message ?? '' }));
}

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

  constructor(ref: string, operation: ResolveOperation, error: ClassifiedError) {
    super(explainQueueError(ref, error));
    this.ref = ref;
    this.operation = operation;
    this.error = error;
  }
}

/**
 * Resolves names to URLs (GetQueueUrl) and reads each queue's ARN, FIFO flag and visibility timeout
 * (GetQueueAttributes), so that every payload carries the queue's real eventSourceARN and awsRegion.
 * Any failure here is fatal: the daemon must not start with a queue it cannot read.
 */
export async function resolveQueues(
  client: SQSClient,
  specs: readonly QueueSpec[],
  visibilityTimeoutOverrideSec: number | undefined,
  signal?: AbortSignal,
): Promise<ResolvedQueue[]> {
  return Promise.all(specs.map((spec) => resolveQueue(client, spec, visibilityTimeoutOverrideSec, signal)));
}

/** Resolves one queue (see resolveQueues); throws a StartupError, a QueueResolveError when an SQS call failed. */
export async function resolveQueue(
  client: SQSClient,
  spec: QueueSpec,
  visibilityTimeoutOverrideSec: number | undefined,
  signal?: AbortSignal,
): Promise<ResolvedQueue> {
  const isUrl = /^https?:\/\//i.test(spec.ref);
  const name = queueNameOf(spec.ref);
  let operation: ResolveOperation = isUrl ? 'GetQueueAttributes' : 'GetQueueUrl';
  try {
    const url = isUrl
      ? spec.ref
      : ((await client.send(new GetQueueUrlCommand({ QueueName: spec.ref }), { abortSignal: signal })).QueueUrl ?? '');
    operation = 'GetQueueAttributes';
    const attrs =
      (
        await client.send(
          new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn', 'VisibilityTimeout', 'FifoQueue'] }),
          { abortSignal: signal },
        )
      ).Attributes ?? {};
    const arn = attrs.QueueArn ?? '';
    const region = arn.split(':')[3] ?? '';
    if (!arn || !region) throw new StartupError(`queue "${spec.ref}" has no usable QueueArn (got "${arn}")`);
    return {
      name,
      url,
      arn,
      region,
      fifo: attrs.FifoQueue === 'true' || name.endsWith('.fifo'),
      visibilityTimeoutSec: visibilityTimeoutOverrideSec ?? Number(attrs.VisibilityTimeout ?? 30),
      weight: spec.weight,
    };
  } catch (err) {
    if (err instanceof StartupError) throw err;
    throw new QueueResolveError(spec.ref, operation, classifyAwsError(err));
  }
}

export function explainQueueError(ref: string, e: ClassifiedError): string {
  if (e.code === 'QueueDoesNotExist' || e.code === 'AWS.SimpleQueueService.NonExistentQueue') {
    return `queue "${ref}" does not exist (${e.code})`;
  }
  const unreachable = unreachableReason(e);
  if (unreachable) return `cannot reach SQS for queue "${ref}": ${unreachable} (${NETWORK_HINT})`;
  return `cannot read queue "${ref}": ${e.code}: ${firstLine(e.message)}`;
}

/** Appended to every "cannot reach" start-up message. */
export const NETWORK_HINT = 'check --endpoint-url / --region and the network';

export function firstLine(text: string): string {
  return text.split('\n')[0]?.trim() ?? '';
}
