/**
 * A failure destination: where a message that failed on its last allowed receive goes, with the reason it
 * failed, before workerless deletes it. SQS's own DLQ keeps the message but not why it failed, and Lambda's SQS
 * trigger has no on-failure destination (its Kinesis, DynamoDB and Kafka triggers have one: "Capturing discarded
 * batches for a Kinesis/DynamoDB event source", Lambda Developer Guide). This file is the pure policy: which
 * destinations are valid, which messages go, and what record they carry. src/settle/deliver-failures.ts sends.
 *
 * The last allowed receive is the queue's RedrivePolicy maxReceiveCount (SQS moves a message to the DLQ when a
 * receive would take its ApproximateReceiveCount past it: "Using dead-letter queues", SQS Developer Guide), or
 * --max-attempts on a queue without a redrive policy.
 */
import { createHash } from 'node:crypto';
import type { Message } from '@aws-sdk/client-sqs';
import { toRecord, type EventSourceQueue, type SqsRecord } from '../invoke/sqs-event.ts';
import type { ResolvedQueue } from '../core/queue.ts';
import { capText } from '../util/cap-text.ts';
import { receiveCountOf } from './retry-backoff.ts';
import { messageGroupOf, messageIdOf } from '../core/message.ts';

/** An SQS queue (by URL) or an SNS topic (by ARN); `fifo` from the name's `.fifo` suffix, as SQS and SNS require. */
export type FailureDestination =
  | { readonly kind: 'sqs'; readonly url: string; readonly fifo: boolean }
  | { readonly kind: 'sns'; readonly arn: string; readonly fifo: boolean };

/** A queue URL: http(s), a host, then the account and queue name as the last path segments. */
const SQS_URL = /^https?:\/\/[^\s/]+(\/[^\s/]+)*\/([A-Za-z0-9_-]{1,80}(\.fifo)?)$/;
/** arn:<partition>:sns:<region>:<account>:<topic> ("Amazon SNS resource ARNs", IAM Service Authorization Reference). */
const SNS_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:([A-Za-z0-9_-]{1,256}(\.fifo)?)$/;

/** What an error says a destination must be. */
export const DESTINATION_FORMS = 'an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<queue>) or an SNS topic ARN';

/** The destination a --failure-destination value names; undefined when it is neither form. */
export function parseDestination(text: string): FailureDestination | undefined {
  const value = text.trim();
  const sqs = SQS_URL.exec(value);
  if (sqs) return Object.freeze({ kind: 'sqs', url: value, fifo: value.endsWith('.fifo') });
  const sns = SNS_ARN.exec(value);
  if (sns) return Object.freeze({ kind: 'sns', arn: value, fifo: value.endsWith('.fifo') });
  return undefined;
}

/** The destination's URL or ARN, for logs. */
export function destinationName(d: FailureDestination): string {
  return d.kind === 'sqs' ? d.url : d.arn;
}

/**
 * The maxReceiveCount of a queue's RedrivePolicy attribute (a JSON document; SQS gives the count as a number,
 * some implementations as a string); undefined without a policy or with one that has no usable count.
 */
export function maxReceiveCountOf(redrivePolicy: string | undefined): number | undefined {
  if (redrivePolicy === undefined || redrivePolicy.trim() === '') return undefined;
  try {
    const n = Number((JSON.parse(redrivePolicy) as { maxReceiveCount?: unknown }).maxReceiveCount);
    return Number.isInteger(n) && n >= 1 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** The receives a queue's messages get: its redrive policy's maxReceiveCount, else --max-attempts. */
export function allowedReceives(maxReceiveCount: number | undefined, maxAttempts: number | undefined): number | undefined {
  return maxReceiveCount ?? maxAttempts;
}

/**
 * The failed messages that go to the destination now: those on their last allowed receive. `kept`: the
 * messages that stay on the queue, in batch order; `failed`: the ids that failed themselves (on FIFO, kept also
 * holds the later messages the function did not process, which never go).
 * - Standard queue: every failed message on its last receive.
 * - FIFO queue: per message group, only a leading run of the group's kept messages that failed on their last
 *   receive. Deleting a message lets its group's next one be received; a message further back must not leave
 *   while one before it stays, or the group would be out of order.
 */
export function pickForDestination(kept: readonly Message[], failed: ReadonlySet<string>, fifo: boolean, allowed: number): Message[] {
  const goes = (m: Message) => failed.has(messageIdOf(m)) && receiveCountOf(m) >= allowed;
  if (!fifo) return kept.filter(goes);
  const blocked = new Set<string>();
  const picked: Message[] = [];
  for (const m of kept) {
    const group = messageGroupOf(m);
    if (blocked.has(group)) continue;
    if (goes(m)) picked.push(m);
    else blocked.add(group);
  }
  return picked;
}

/** Why the messages of an invocation failed, as the record tells it. */
export interface FailureReason {
  /**
   * function-error: the function threw; item-failure: a batchItemFailures entry; invalid-response; invoke-rejected:
   * Lambda refused the Invoke; retries-exhausted: received more often than allowed, with no failure known to this
   * process (src/settle/exhausted.ts).
   */
  readonly kind: 'function-error' | 'item-failure' | 'invalid-response' | 'invoke-rejected' | 'retries-exhausted';
  readonly errorType: string;
  /** Text from the function or from Lambda: capped when the record is built. */
  readonly errorMessage: string;
  /** Lambda's request id of the invocation (x-amzn-RequestId), when it answered. */
  readonly requestId: string | undefined;
}

/** The record sent to the destination; its JSON schema is deploy/schemas/failure-record.schema.json. */
export interface FailureRecord {
  readonly version: '1.0';
  /** When workerless sent the record (ISO 8601). */
  readonly timestamp: string;
  /** Lambda's on-failure records say RetriesExhausted for the same condition. */
  readonly condition: 'RetriesExhausted';
  readonly function: string;
  readonly requestId: string | null;
  /** The message's ApproximateReceiveCount: the deliveries it had, this one included. */
  readonly attempts: number;
  /** The receives it was allowed (maxReceiveCount or --max-attempts). */
  readonly maxAttempts: number;
  readonly error: { readonly kind: FailureReason['kind']; readonly errorType: string; readonly errorMessage: string };
  /** From the message's SentTimestamp and ApproximateFirstReceiveTimestamp (ISO 8601), when SQS sent them. */
  readonly sentAt: string | null;
  readonly firstReceivedAt: string | null;
  readonly queue: { readonly name: string; readonly arn: string };
  /** The message as the function received it: the record of Lambda's SQS event. */
  readonly record: SqsRecord;
}

/** The record for one message. `nowMs`: wall-clock time. errorType and errorMessage are capped (capText). */
export function failureRecord(
  message: Message,
  queue: EventSourceQueue & { readonly name: string },
  reason: FailureReason,
  context: { readonly functionName: string; readonly maxAttempts: number; readonly nowMs: number },
): FailureRecord {
  return {
    version: '1.0',
    timestamp: new Date(context.nowMs).toISOString(),
    condition: 'RetriesExhausted',
    function: context.functionName,
    requestId: reason.requestId ?? null,
    attempts: receiveCountOf(message),
    maxAttempts: context.maxAttempts,
    error: { kind: reason.kind, errorType: capText(reason.errorType), errorMessage: capText(reason.errorMessage) },
    sentAt: isoOf(message.Attributes?.SentTimestamp),
    firstReceivedAt: isoOf(message.Attributes?.ApproximateFirstReceiveTimestamp),
    queue: { name: queue.name, arn: queue.arn },
    record: toRecord(message, queue),
  };
}

function isoOf(epochMs: string | undefined): string | null {
  const n = Number(epochMs);
  return epochMs !== undefined && Number.isFinite(n) && n > 0 ? new Date(n).toISOString() : null;
}

/** What one SendMessage or Publish carries. */
export interface DestinationMessage {
  readonly body: string;
  /** FIFO destinations only: the order is kept per group. */
  readonly groupId?: string | undefined;
  /** FIFO destinations only: a resend after a crash (the delete never happened) is dropped by SQS or SNS. */
  readonly deduplicationId?: string | undefined;
  /** Message attributes (String), on every destination: the record's deduplication key. */
  readonly attributes?: Readonly<Record<string, string>> | undefined;
}

/**
 * The message attribute that carries a record's deduplication key. SQS and SNS allow letters, digits, `_`, `-`
 * and `.` in an attribute name, and reserve the `AWS.` and `Amazon.` prefixes ("Amazon SQS message attributes",
 * SQS Developer Guide).
 */
export const DEDUPLICATION_ATTRIBUTE = 'workerless-deduplication-id';

/**
 * A failure record's deduplication key: the SHA-256 (hex) of the source queue's ARN and the message id. It is the
 * same for every record of one message, whichever process sends it and however often (a send given up at its
 * deadline that the destination had accepted, a crash between the send and the delete), and differs between
 * queues; 64 characters, within the 128 alphanumerics MessageDeduplicationId allows (SendMessage API reference).
 */
export function deduplicationKey(queueArn: string, messageId: string): string {
  return createHash('sha256').update(`${queueArn}\n${messageId}`).digest('hex');
}

/**
 * One message for the destination. Every record carries its deduplication key as the message attribute
 * DEDUPLICATION_ATTRIBUTE, so a consumer of a standard destination (at least once) can recognise a record sent
 * again. A FIFO destination also needs a MessageGroupId and a MessageDeduplicationId (SendMessage and Publish API
 * references): the group is the source message's own (so a FIFO source keeps its group order), else the source
 * queue's name; the deduplication id is the key, so SQS or SNS drops a record sent again within the 5-minute
 * deduplication interval.
 */
export function destinationMessage(record: FailureRecord, destination: FailureDestination): DestinationMessage {
  const body = JSON.stringify(record);
  const key = deduplicationKey(record.queue.arn, record.record.messageId);
  const attributes = { [DEDUPLICATION_ATTRIBUTE]: key };
  if (!destination.fifo) return { body, attributes };
  return {
    body,
    groupId: record.record.attributes['MessageGroupId'] ?? record.queue.name,
    deduplicationId: key,
    attributes,
  };
}

/** What is wrong with a queue that has a failure destination but no way to know a message's last receive. */
export const MISSING_LAST_RECEIVE =
  'has a failure destination but no redrive policy: give it a RedrivePolicy (maxReceiveCount) or set --max-attempts';

/** What missingLastReceive reads of a route: its destination and max attempts, and each queue's own. */
export interface DestinationSettings {
  readonly failureDestination: FailureDestination | undefined;
  readonly maxAttempts: number | undefined;
  readonly queueOptions: ReadonlyMap<
    string,
    { readonly failureDestination?: FailureDestination | undefined; readonly maxAttempts?: number | undefined }
  >;
}

/** Whether `queue` of `route` has a failure destination but neither a redrive policy nor max-attempts. */
export function missingLastReceive(route: DestinationSettings, queue: ResolvedQueue): boolean {
  const own = route.queueOptions.get(queue.name);
  const destination = own?.failureDestination ?? route.failureDestination;
  return destination !== undefined && queue.maxReceiveCount === undefined && (own?.maxAttempts ?? route.maxAttempts) === undefined;
}
