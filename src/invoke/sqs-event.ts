import { createHash } from 'node:crypto';
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import { messageIdOf } from '../core/message.ts';

/** What the payload needs to know about the queue a message came from. */
export interface EventSourceQueue {
  readonly arn: string;
  readonly region: string;
}

/** One record of Lambda's SQS event, exactly as AWS's own event source mapping builds it. */
export interface SqsRecord {
  messageId: string;
  receiptHandle: string;
  body: string;
  attributes: Record<string, string>;
  messageAttributes: Record<string, SqsRecordMessageAttribute>;
  md5OfMessageAttributes: string | null;
  md5OfBody: string;
  eventSource: 'aws:sqs';
  eventSourceARN: string;
  awsRegion: string;
}

export interface SqsRecordMessageAttribute {
  stringValue?: string;
  binaryValue?: string;
  stringListValues: string[];
  binaryListValues: string[];
  dataType: string;
}

export interface SqsEvent {
  Records: SqsRecord[];
}

/** Lambda's limit for a synchronous invocation payload; AWS's trigger also cuts batches there. */
export const MAX_SYNC_PAYLOAD_BYTES = 6 * 1024 * 1024;
/** Bytes of an event without records: `{"Records":[]}`. */
export const EMPTY_EVENT_BYTES = '{"Records":[]}'.length;

export function toRecord(message: Message, queue: EventSourceQueue): SqsRecord {
  const body = message.Body ?? '';
  // for...in over the SDK's plain objects, not Object.entries: no array of pairs per message.
  const attributes: Record<string, string> = {};
  const given = message.Attributes;
  for (const k in given) {
    const v = given[k as keyof typeof given];
    if (v !== undefined) attributes[k] = String(v);
  }
  const messageAttributes: Record<string, SqsRecordMessageAttribute> = {};
  const givenAttributes = message.MessageAttributes;
  let hasAttributes = false;
  for (const name in givenAttributes) {
    messageAttributes[name] = toRecordAttribute(givenAttributes[name]!);
    hasAttributes = true;
  }
  return {
    messageId: messageIdOf(message),
    receiptHandle: message.ReceiptHandle ?? '',
    body,
    attributes,
    messageAttributes,
    // AWS sends null when the message has no attributes.
    md5OfMessageAttributes: hasAttributes ? (message.MD5OfMessageAttributes ?? null) : null,
    // SQS returns the MD5 it computed; recompute only if it is missing (some emulators omit it).
    md5OfBody: message.MD5OfBody ?? createHash('md5').update(body, 'utf8').digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: queue.arn,
    awsRegion: queue.region,
  };
}

function toRecordAttribute(value: MessageAttributeValue): SqsRecordMessageAttribute {
  const out: SqsRecordMessageAttribute = {
    stringListValues: (value.StringListValues ?? []).map(String),
    binaryListValues: (value.BinaryListValues ?? []).map(base64),
    dataType: value.DataType ?? 'String',
  };
  if (value.StringValue !== undefined) out.stringValue = value.StringValue;
  if (value.BinaryValue !== undefined) out.binaryValue = base64(value.BinaryValue);
  return out;
}

function base64(bytes: Uint8Array | string): string {
  return Buffer.from(bytes).toString('base64');
}

/**
 * Builds one or more SQS events from a batch so that each serialised event stays within the synchronous
 * invocation limit (a batch of ten 1 MiB messages does not fit in one 6 MB request).
 */
export function buildSqsEvents(
  messages: readonly Message[],
  queue: EventSourceQueue,
  maxBytes = MAX_SYNC_PAYLOAD_BYTES,
): { event: SqsEvent; payload: string; messages: Message[] }[] {
  const out: { event: SqsEvent; payload: string; messages: Message[] }[] = [];
  // Each record is serialised once; the payload is assembled from those strings.
  let records: SqsRecord[] = [];
  let parts: string[] = [];
  let group: Message[] = [];
  let size = EMPTY_EVENT_BYTES;
  const push = () => {
    if (records.length === 0) return;
    out.push({ event: { Records: records }, payload: `{"Records":[${parts.join(',')}]}`, messages: group });
    records = [];
    parts = [];
    group = [];
    size = EMPTY_EVENT_BYTES;
  };
  for (const message of messages) {
    const record = toRecord(message, queue);
    const json = JSON.stringify(record);
    // As recordBytes() counts it, so a batch gathered up to the limit is one invocation.
    const recordSize = Buffer.byteLength(json) + 1;
    if (records.length > 0 && size + recordSize > maxBytes) push();
    records.push(record);
    parts.push(json);
    group.push(message);
    size += recordSize;
  }
  push();
  return out;
}

/** Bytes a message adds to an event's payload (its record and a comma), as buildSqsEvents counts them. */
export function recordBytes(message: Message, queue: EventSourceQueue): number {
  return Buffer.byteLength(JSON.stringify(toRecord(message, queue))) + 1;
}
