import { createHash } from 'node:crypto';

/**
 * The DurableExecutionName of a message: Lambda's idempotency key for starting a durable execution ("Execution
 * names", https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html): 1-64 characters of
 * [a-zA-Z0-9-_], unique within the account and region. Lambda answers a second start under a name with the
 * execution it already has, so the name must be the same on every delivery of one message and differ between
 * any two messages:
 *
 *   <16 characters of the queue's ARN, hashed>-<the message id>
 *
 * - The queue's ARN, not its URL (which differs by endpoint style) nor its name (up to 80 characters, and the
 *   same name exists in other accounts and regions): hashed (SHA-256, base64url) to 16 characters, 96 bits, so
 *   two queues never share a prefix in practice.
 * - The message id: SQS gives each message a UUID (36 characters) that stays with it across receives. An id that
 *   is longer than 47 characters or holds other characters (an emulator's) is hashed too.
 *
 * Never change this derivation: a message received before an upgrade and again after it would start a second
 * execution (test/unit/invoke/durable-name.test.ts holds it to known values).
 */
export function durableExecutionName(queueArn: string, messageId: string): string {
  const id = MESSAGE_ID.test(messageId) ? messageId : `h${hash(messageId, 43)}`;
  return `${hash(queueArn, QUEUE_PART)}-${id}`;
}

/** DurableExecutionName's constraint (the SDK's model, InvocationRequest.DurableExecutionName). */
export const DURABLE_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

const QUEUE_PART = 16;
/** What is left of the 64 characters after the queue's part and the hyphen. */
const MESSAGE_ID = new RegExp(`^[a-zA-Z0-9_-]{1,${64 - QUEUE_PART - 1}}$`);

function hash(text: string, length: number): string {
  return createHash('sha256').update(text, 'utf8').digest('base64url').slice(0, length);
}
