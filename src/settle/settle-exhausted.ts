import type { Message } from '@aws-sdk/client-sqs';
import type { ResolvedQueue } from '../core/queue.ts';
import { heldBehind, retriesExhausted, splitExhausted } from './exhausted.ts';
import { deliverFailures, type DeliverDeps, type FailureRoute } from './deliver-failures.ts';
import { ids } from './receipts.ts';
import type { VisibilityLease } from './visibility-lease.ts';
import { messageIdOf } from '../core/message.ts';

export interface ExhaustedDeps extends DeliverDeps {
  /** Gives the messages that stay their retry back-off (src/settle/set-retry-backoff.ts). */
  readonly backOff: (left: Message[]) => Promise<void>;
}

/**
 * Before the Invoke: the messages received more often than their queue allows (src/settle/exhausted.ts) are
 * not invoked; their records go to the failure destination, with the reason this process last saw them fail
 * (else RetriesExhausted), and those accepted are deleted. Those refused stay on the queue with their retry
 * back-off (or visibility timeout), and on FIFO so do the later messages of their groups. Returns the messages
 * to invoke.
 */
export async function settleExhausted(
  batch: { readonly queue: ResolvedQueue; readonly lease: Pick<VisibilityLease, 'expiresAt' | 'stop'> },
  messages: Message[],
  route: FailureRoute,
  deps: ExhaustedDeps,
): Promise<Message[]> {
  const { queue, lease } = batch;
  const split = splitExhausted(messages, queue.fifo, route.maxAttempts);
  if (split === undefined) return messages;
  deps.log.warn(
    { queue: queue.name, function: deps.functionName, messageIds: ids(split.exhausted), maxAttempts: route.maxAttempts },
    'messages received more often than allowed; not invoking them again, sending them to the failure destination',
  );
  const reasonOf = (m: Message) => deps.failureReasons?.recall(queue.arn, messageIdOf(m)) ?? retriesExhausted(m, route.maxAttempts);
  const failed = new Set(ids(split.exhausted));
  const sent = new Set(await deliverFailures(batch, split.exhausted, failed, reasonOf, route, deps));
  const refused = split.exhausted.filter((m) => !sent.has(m));
  const held = heldBehind(split.invoke, refused, queue.fifo);
  const left = [...refused, ...held];
  if (left.length > 0) {
    await lease.stop(left);
    await deps.backOff(left);
  }
  return held.length === 0 ? split.invoke : split.invoke.filter((m) => !held.includes(m));
}
