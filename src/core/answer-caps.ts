/**
 * The largest answer each AWS call can get, so that a broken proxy or endpoint cannot fill the daemon's memory
 * (a 600 MB answer to an Invoke once raised RSS to 1.3 GB). An answer over its cap is refused as soon as its
 * Content-Length, or its body so far, says so, and its socket is closed unread (src/aws/signed-http.ts).
 */

/**
 * Lambda's synchronous Invoke answers with at most 6 MB (6,291,456 bytes: "Invocation payload (request and
 * response): 6 MB each for request and response (synchronous)", https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html).
 * DryRun and error answers are far smaller.
 */
export const INVOKE_ANSWER_MAX_BYTES = 6 * 1024 * 1024;

/**
 * ReceiveMessage returns at most 10 messages (MaxNumberOfMessages) of at most 1 MiB each, "including the message
 * body and message attributes" (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html).
 * JSON escapes can make each byte six: a body may hold #x9 #xA #xD and #x20 to #xD7FF (SendMessage API reference,
 * MessageBody), and an encoder that writes \uXXXX (LocalStack and moto write DEL, #x7F, as \u007f) turns one byte
 * into six; `"` and `\` double, multi-byte characters at most triple, base64 of binary attributes is 4/3. Each message
 * also carries its receipt handle, MD5s, ids and system attributes, which do not count towards its 1 MiB: 64 KiB
 * each is far more than they take. So 10 x (6 MiB + 64 KiB), about 60.6 MiB: any answer SQS may legally send.
 */
export const RECEIVE_ANSWER_MAX_BYTES = 10 * (6 * 1024 * 1024 + 64 * 1024);

/**
 * Every other call (GetQueueUrl, GetQueueAttributes, the batch deletes and visibility changes, PutMetricData,
 * error answers) answers with a few KiB: a batch of 10 failed entries with their messages is under 10 KiB,
 * GetQueueAttributes' largest attribute (a 20 KiB Policy) well under this, SNS Publish's answer (a message id) too.
 */
export const SMALL_ANSWER_MAX_BYTES = 1024 * 1024;

/** The error name of an answer over its cap, on both clients: classifyAwsError and classifyInvokeError (src/invoke/lambda-errors.ts) read it. */
export const ANSWER_TOO_LARGE = 'AnswerTooLarge';

/** The error for an answer of `bytes` (announced by Content-Length, or read so far) over `maxBytes`. */
export function answerTooLarge(bytes: number, maxBytes: number, announced: boolean): Error {
  const size = announced ? `announces ${bytes} bytes` : `exceeded ${maxBytes} bytes (${bytes} read)`;
  return Object.assign(new Error(`answer ${size}; AWS sends at most ${maxBytes} bytes for this call`), {
    name: ANSWER_TOO_LARGE,
    bytes,
    maxBytes,
  });
}
