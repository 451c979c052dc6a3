import type { OutgoingMessage } from './sqs-source.ts';

/**
 * The deadline of one SendMessage or Publish to a failure destination, the SDK's retries (3 attempts) inside it.
 * Neither the SendMessage (SQS) nor the Publish (SNS) API reference bounds how long a call can take, so the
 * clients' own limits say when an answer is not coming: the AWS CLI and botocore give up reading after 60 s
 * (`--cli-read-timeout`, default 60, AWS CLI Command Reference; `read_timeout`, botocore's Config reference); the
 * AWS SDK for JavaScript v3 has no request timeout by default and closes an idle socket only after 900 s for SQS
 * and 300 s for SNS (each client's runtime config, `defaultSocketTimeout`, @aws-sdk/client-sqs and client-sns
 * 3.1169). 60 s is what the AWS CLI allows one call, where the 5 s of the other SQS calls cut a slow but
 * accepted send and made the record go again. A send given up even so is recognised by its deduplication key
 * (src/settle/failure-destination.ts).
 */
export const DESTINATION_DEADLINE_MS = 60_000;

/** The message's String attributes as SendMessage and Publish take them (MessageAttributeValue); undefined: none. */
export function messageAttributesOf(message: OutgoingMessage): Record<string, { DataType: 'String'; StringValue: string }> | undefined {
  if (message.attributes === undefined) return undefined;
  return Object.fromEntries(Object.entries(message.attributes).map(([name, value]) => [name, { DataType: 'String', StringValue: value }]));
}
