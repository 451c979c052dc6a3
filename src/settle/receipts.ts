import type { Message } from '@aws-sdk/client-sqs';
import type { ReceiptEntry } from '../core/queue.ts';

export function ids(messages: readonly Message[]): string[] {
  return messages.map((m) => m.MessageId ?? '');
}

export function receipts(messages: readonly Message[]): ReceiptEntry[] {
  return messages.map((m) => ({ id: m.MessageId ?? '', receiptHandle: m.ReceiptHandle ?? '' }));
}
