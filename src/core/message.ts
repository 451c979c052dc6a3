// What the steps read of a received message, in one place: its id, its FIFO group, and a batch by group.
import type { Message } from '@aws-sdk/client-sqs';

/**
 * A received message's id: the key of every per-message record (receipts, kept and failed ids, logs). SQS always
 * sends one; the SDK's type leaves it optional, so '' stands in.
 */
export function messageIdOf(m: Message): string {
  return m.MessageId ?? '';
}

/** A received message's FIFO message group; '' on a standard queue, whose messages carry none. */
export function messageGroupOf(m: Message): string {
  return m.Attributes?.MessageGroupId ?? '';
}

/** The messages of each FIFO message group, in their order, the groups in the order of their first message. */
export function groupsOf(messages: readonly Message[]): Message[][] {
  const groups = new Map<string, Message[]>();
  for (const m of messages) {
    const group = messageGroupOf(m);
    const list = groups.get(group);
    if (list) list.push(m);
    else groups.set(group, [m]);
  }
  return [...groups.values()];
}
