// What a queue that could not be resolved (GetQueueUrl, GetQueueAttributes) means for the operator, as one line.
import { QueueResolveError } from '../aws/resolve-queues.ts';
import { queueNameOf } from '../core/queue.ts';
import { explainAwsError, type Checked } from './check-errors.ts';

/**
 * The line of the queue `ref` (named by its short name: "queue payments") whose resolution threw `err`:
 * `does not exist (QueueDoesNotExist)`, `cannot reach SQS at <endpoint>: ...`, access denied naming the IAM actions,
 * refused credentials, or what its answer lacks. `workerless check` prints it; the start-up throws it
 * (daemon/startup-checks.ts).
 */
export function queueResolveVerdict(ref: string, err: unknown): Checked {
  const name = `queue ${queueNameOf(ref)}`;
  if (!(err instanceof QueueResolveError)) return { name, ok: false, detail: err instanceof Error ? err.message : String(err) };
  const e = err.error;
  if (e.code === 'QueueDoesNotExist' || e.code === 'AWS.SimpleQueueService.NonExistentQueue') {
    return { name, ok: false, detail: `does not exist (${e.code})` };
  }
  // GetQueueAttributes is never tried when GetQueueUrl is refused, so both may be missing.
  const actions = err.operation === 'GetQueueUrl' ? ['sqs:GetQueueUrl', 'sqs:GetQueueAttributes'] : ['sqs:GetQueueAttributes'];
  return { name, ok: false, ...explainAwsError(e, 'SQS', actions, err.endpoint) };
}
