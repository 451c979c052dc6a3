/**
 * Which received messages are not invoked again: those received more often than their queue allows
 * (ApproximateReceiveCount above the allowed receives, src/settle/failure-destination.ts). Such a message failed
 * on its last allowed receive, and its record was not accepted by the failure destination then; on a queue
 * without a redrive policy (--max-attempts) nothing else takes it off the queue, so SQS delivers it again and
 * again. Invoking it each time would run the function once per receive; it goes straight to the destination
 * instead (src/settle/settle-exhausted.ts). With a redrive policy SQS moves such a message to the DLQ before
 * anyone receives it ("Using dead-letter queues", SQS Developer Guide), so this only matters for --max-attempts,
 * or a maxReceiveCount lowered since.
 */
import type { Message } from '@aws-sdk/client-sqs';
import type { FailureReason } from './failure-destination.ts';
import { receiveCountOf } from './retry-backoff.ts';
import { messageGroupOf } from '../core/message.ts';

export interface ExhaustedSplit {
  /** Not invoked: they go to the failure destination, in batch order. */
  readonly exhausted: Message[];
  /** Invoked as usual, in batch order. */
  readonly invoke: Message[];
}

/**
 * Splits a batch; undefined when no message is past `allowed` (the usual case: nothing is allocated).
 * - Standard queue: every message received more than `allowed` times.
 * - FIFO queue: per message group, the leading run of such messages. SQS hands out a group's messages in order
 *   and counts a receive of each, so a group's counts do not grow along it; a later message past its receives
 *   behind one that is not would be invoked after it, as the group's order wants.
 */
export function splitExhausted(messages: readonly Message[], fifo: boolean, allowed: number): ExhaustedSplit | undefined {
  const over = (m: Message) => receiveCountOf(m) > allowed;
  if (!messages.some(over)) return undefined;
  if (!fifo) return { exhausted: messages.filter(over), invoke: messages.filter((m) => !over(m)) };
  const exhausted: Message[] = [];
  const invoke: Message[] = [];
  const started = new Set<string>();
  for (const m of messages) {
    const group = messageGroupOf(m);
    if (!started.has(group) && over(m)) exhausted.push(m);
    else {
      started.add(group);
      invoke.push(m);
    }
  }
  return { exhausted, invoke };
}

/**
 * On a FIFO queue, the messages to invoke whose group has a message in `left` (not accepted by the destination,
 * so still on the queue): they wait behind it, else they would run before a message they follow. None on a
 * standard queue.
 */
export function heldBehind(invoke: readonly Message[], left: readonly Message[], fifo: boolean): Message[] {
  if (!fifo || left.length === 0) return [];
  const groups = new Set(left.map((m) => messageGroupOf(m)));
  return invoke.filter((m) => groups.has(messageGroupOf(m)));
}

/** The reason a record gives for a message past its receives whose failure this process does not know. */
export function retriesExhausted(message: Message, allowed: number): FailureReason {
  return {
    kind: 'retries-exhausted',
    errorType: 'RetriesExhausted',
    errorMessage: `received ${receiveCountOf(message)} times, more than the ${allowed} allowed; not invoked again`,
    requestId: undefined,
  };
}
