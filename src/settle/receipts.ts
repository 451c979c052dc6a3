import type { Message } from '@aws-sdk/client-sqs';
import type { ReceiptEntry } from '../core/queue.ts';
import { messageIdOf } from '../core/message.ts';

export function ids(messages: readonly Message[]): string[] {
  return messages.map((m) => messageIdOf(m));
}

export function receipts(messages: readonly Message[]): ReceiptEntry[] {
  return messages.map((m) => ({ id: messageIdOf(m), receiptHandle: m.ReceiptHandle ?? '' }));
}
