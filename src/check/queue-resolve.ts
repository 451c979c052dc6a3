// What a queue that could not be resolved (GetQueueUrl, GetQueueAttributes) means for the operator, as one line.
import { QueueResolveError } from '../aws/resolve-queues.ts';
import { explainAwsError, type Checked } from './check-errors.ts';

/** The line named `name` ("queue payments") of a queue whose resolution threw `err`. */
export function queueResolveVerdict(name: string, err: unknown): Checked {
  if (!(err instanceof QueueResolveError)) return { name, ok: false, detail: err instanceof Error ? err.message : String(err) };
  const e = err.error;
  if (e.code === 'QueueDoesNotExist' || e.code === 'AWS.SimpleQueueService.NonExistentQueue') {
    return { name, ok: false, detail: `does not exist (${e.code})` };
  }
  // GetQueueAttributes is never tried when GetQueueUrl is refused, so both may be missing.
  const actions = err.operation === 'GetQueueUrl' ? ['sqs:GetQueueUrl', 'sqs:GetQueueAttributes'] : ['sqs:GetQueueAttributes'];
  return { name, ok: false, ...explainAwsError(e, 'SQS', actions, err.endpoint) };
}
