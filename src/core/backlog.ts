import type { Message } from '@aws-sdk/client-sqs';

/**
 * The backlog of a queue, as SQS counts it (GetQueueAttributes; "approximate", as SQS's own CloudWatch metrics
 * are: Amazon SQS Developer Guide, "Available CloudWatch metrics for Amazon SQS"):
 * - visible: messages waiting to be received (ApproximateNumberOfMessages);
 * - notVisible: received and not yet deleted or made visible again, by any consumer (ApproximateNumberOfMessagesNotVisible);
 * - delayed: not yet visible because of a delay (ApproximateNumberOfMessagesDelayed).
 */
export interface BacklogCounts {
  readonly visible: number;
  readonly notVisible: number;
  readonly delayed: number;
}

/** The attributes the queue attribute re-read (src/dispatch/queue-visibility.ts) asks for, for the backlog gauges. */
export const BACKLOG_ATTRIBUTES = [
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
] as const;

/** The counts from a GetQueueAttributes answer; undefined when one is missing or not a count (nothing is guessed). */
export function backlogOf(attributes: Readonly<Record<string, string>>): BacklogCounts | undefined {
  const [visible, notVisible, delayed] = BACKLOG_ATTRIBUTES.map((name) => Number(attributes[name] ?? Number.NaN));
  const counts = [visible, notVisible, delayed];
  if (!counts.every((n) => n !== undefined && Number.isInteger(n) && n >= 0)) return undefined;
  return { visible: visible!, notVisible: notVisible!, delayed: delayed! };
}

/**
 * Each message's age when it was received, ms: now minus its SentTimestamp (epoch ms, set by SQS; the receive asks
 * for every system attribute). A clock behind SQS's would make an age negative: it counts as 0. A message without
 * the attribute has no age.
 */
export function agesAtReceive(messages: readonly Message[], epochNowMs: number): number[] {
  return messages.flatMap((m) => {
    const sent = Number(m.Attributes?.['SentTimestamp']);
    return Number.isFinite(sent) && sent > 0 ? [Math.max(0, epochNowMs - sent)] : [];
  });
}
