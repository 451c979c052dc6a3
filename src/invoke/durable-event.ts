import type { Message } from '@aws-sdk/client-sqs';
import { durableExecutionName } from './durable-name.ts';
import type { InvokeParams } from '../core/function-invoker.ts';
import { MAX_SYNC_PAYLOAD_BYTES, toRecord, type EventSourceQueue } from './sqs-event.ts';
import { messageIdOf } from '../core/message.ts';

/**
 * How a route invokes a durable function (--durable): off (a plain function), sync (RequestResponse with an
 * execution name: waits for the execution, at most 15 minutes) or async (Event with an execution name: Lambda
 * accepts the start, and the execution may run for up to a year). docs/targets.md, "Durable functions".
 */
export type DurableMode = 'off' | 'sync' | 'async';

/**
 * Lambda's limit for an asynchronous (Event) Invoke request: 1 MB since October 2025 (was 256 KB). Counted as
 * MAX_SYNC_PAYLOAD_BYTES counts 6 MB, in binary megabytes.
 */
export const MAX_ASYNC_PAYLOAD_BYTES = 1024 * 1024;

/** One message's invocation on a durable route. */
export interface DurableInvocation {
  readonly message: Message;
  readonly payload: string;
  readonly params: Required<Pick<InvokeParams, 'durableExecutionName' | 'async'>>;
  /** The payload's size in bytes, and the limit of the mode's invocation type (1 MB async, 6 MB sync). */
  readonly bytes: number;
  readonly limitBytes: number;
}

/**
 * A durable route's invocations: one per message, each under its own execution name (src/invoke/durable-name.ts),
 * with an event that is the same on every delivery of the message (durableEvent). A message whose event is over
 * its invocation type's limit is returned too, with `bytes > limitBytes`: the caller does not send it.
 */
export function durableInvocations(messages: readonly Message[], queue: EventSourceQueue, mode: 'sync' | 'async'): DurableInvocation[] {
  return messages.map((message) => {
    const payload = durableEvent(message, queue);
    return {
      message,
      payload,
      params: { durableExecutionName: durableExecutionName(queue.arn, messageIdOf(message)), async: mode === 'async' },
      bytes: Buffer.byteLength(payload),
      limitBytes: mode === 'async' ? MAX_ASYNC_PAYLOAD_BYTES : MAX_SYNC_PAYLOAD_BYTES,
    };
  });
}

/**
 * The trigger's SQS event for one message (src/invoke/sqs-event.ts), less what changes from one receive of the
 * message to the next. Lambda compares a second start's payload with the first's: the same payload gets the
 * execution that exists, another one DurableExecutionAlreadyStartedException (Invoke API reference,
 * DurableExecutionName). So a redelivered message must give the same bytes:
 * - `receiptHandle` is empty: SQS issues a new one on every receive, and workerless, not the function, deletes
 *   the message (a handle would be stale long before a year-long execution ends anyway);
 * - `attributes.ApproximateReceiveCount` is left out: it grows on every receive.
 * Every other field is the trigger's, and stays the same across receives (ApproximateFirstReceiveTimestamp is
 * the first receive's).
 */
export function durableEvent(message: Message, queue: EventSourceQueue): string {
  const record = toRecord(message, queue);
  const { ApproximateReceiveCount: _perReceive, ...attributes } = record.attributes;
  return JSON.stringify({ Records: [{ ...record, receiptHandle: '', attributes }] });
}
