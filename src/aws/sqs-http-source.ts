import { createHash } from 'node:crypto';
import type { Message } from '@aws-sdk/client-sqs';
import { AwsCallError, classifyAwsError } from '../core/errors.ts';
import { RECEIVE_ANSWER_MAX_BYTES, SMALL_ANSWER_MAX_BYTES } from '../core/answer-caps.ts';
import { messageAttributesOf } from './destination-send.ts';
import { postWithSdkRetries } from './sdk-retry.ts';
import { CallDeadlines, joinPath, type SignedHttp } from './signed-http.ts';
import {
  CALL_DEADLINE_MS,
  DESTINATION_DEADLINE_MS,
  LIST_QUEUES_PAGE_MAX,
  type ListedQueues,
  RECEIVE_MARGIN_MS,
  type EntryFailure,
  type MessageSender,
  type MessageSource,
  type OutgoingMessage,
  type QueueDirectory,
  type QueueLookup,
  type ReceiptEntry,
  type ReceiveOptions,
  type ResolvedQueue,
} from '../core/queue.ts';
import { messageIdOf } from '../core/message.ts';
import { listQueuePages } from './list-queue-pages.ts';

/**
 * MessageSource and QueueLookup on the lean path (`--aws-client lean`): SQS's AWS JSON 1.0 protocol spoken
 * directly over SignedHttp, with what the SDK's SQSClient did that matters kept the same:
 * - the endpoint: a configured one (--endpoint-url, AWS_ENDPOINT_URL[_SQS]) for every call, else each queue
 *   URL's own host (the SDK's useQueueUrlAsEndpoint) and the regional endpoint for GetQueueUrl;
 * - the error names: the SDK's exception names, not SQS's older awsQuery codes (QueueDoesNotExist, not
 *   AWS.SimpleQueueService.NonExistentQueue), so that messages and logs read the same on both paths;
 * - the deadlines and the classification (AwsCallError from classifyAwsError) of SqsSdkSource;
 * - the SDK's standard retries inside each call's deadline (3 attempts for throttling, 5xx and network errors,
 *   jittered exponential back-off);
 * - the MD5OfBody check of every received message (an "Invalid MD5 checksum" error, as the SDK throws);
 * - Message objects of the SDK's shape (BinaryValue as bytes), so payloads are built exactly as before.
 */
export class SqsHttpSource implements MessageSource, QueueLookup, QueueDirectory, MessageSender {
  readonly #http: SignedHttp;
  /** The configured endpoint, or undefined to send each call to its queue URL's host. */
  readonly #endpoint: URL | undefined;
  /** Where calls without a queue URL (GetQueueUrl) go. */
  readonly #serviceUrl: URL;
  readonly #onCall: ((operation: string, err: unknown) => void) | undefined;
  /** Every call's deadline, under one timer. */
  readonly #deadlines = new CallDeadlines();

  /** `endpoint`: serviceEndpoint('sqs', ...): a configured endpoint (`custom`) or the regional one. */
  constructor(http: SignedHttp, endpoint: { url: URL; custom: boolean }, onCall?: (operation: string, err: unknown) => void) {
    this.#http = http;
    this.#endpoint = endpoint.custom ? endpoint.url : undefined;
    this.#serviceUrl = endpoint.url;
    this.#onCall = onCall;
  }

  receive(queue: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]> {
    if (options.startBefore?.aborted) return Promise.resolve([]);
    const input = JSON.stringify({
      QueueUrl: queue.url,
      MaxNumberOfMessages: options.max,
      WaitTimeSeconds: options.waitSec,
      ...(options.visibilityTimeoutSec !== undefined ? { VisibilityTimeout: options.visibilityTimeoutSec } : {}),
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    });
    // Not awaited here: a long poll's wait holds one async step less (10,000 of them at a time).
    return this.#call(queue.url, 'ReceiveMessage', options.waitSec * 1000 + RECEIVE_MARGIN_MS, signal, input).then(receivedMessages);
  }

  async deleteBatch(queue: ResolvedQueue, entries: readonly ReceiptEntry[], signal?: AbortSignal): Promise<EntryFailure[]> {
    if (entries.length === 0) return [];
    const input = JSON.stringify({ QueueUrl: queue.url, Entries: entries.map((e) => ({ Id: e.id, ReceiptHandle: e.receiptHandle })) });
    return entryFailures(await this.#call(queue.url, 'DeleteMessageBatch', CALL_DEADLINE_MS, signal, input));
  }

  async changeVisibility(
    queue: ResolvedQueue,
    entries: readonly ReceiptEntry[],
    timeoutSec: number,
    signal?: AbortSignal,
  ): Promise<EntryFailure[]> {
    if (entries.length === 0) return [];
    const input = JSON.stringify({
      QueueUrl: queue.url,
      Entries: entries.map((e) => ({ Id: e.id, ReceiptHandle: e.receiptHandle, VisibilityTimeout: timeoutSec })),
    });
    return entryFailures(await this.#call(queue.url, 'ChangeMessageVisibilityBatch', CALL_DEADLINE_MS, signal, input));
  }

  async sendMessage(queueUrl: string, message: OutgoingMessage, signal?: AbortSignal): Promise<string> {
    const input = JSON.stringify({
      QueueUrl: queueUrl,
      MessageBody: message.body,
      ...(message.groupId !== undefined ? { MessageGroupId: message.groupId } : {}),
      ...(message.deduplicationId !== undefined ? { MessageDeduplicationId: message.deduplicationId } : {}),
      ...(message.attributes !== undefined ? { MessageAttributes: messageAttributesOf(message) } : {}),
    });
    const out = await this.#call(queueUrl, 'SendMessage', DESTINATION_DEADLINE_MS, signal, input);
    // The SDK (middleware-sdk-sqs's sendMessageMiddleware) checks MD5OfMessageBody against the body it sent and
    // throws "InvalidChecksumError" when it differs or is missing: so does the lean path.
    if (out['MD5OfMessageBody'] !== createHash('md5').update(message.body).digest('hex')) {
      throw new AwsCallError('SendMessage', classifyAwsError(new Error('InvalidChecksumError')));
    }
    return typeof out['MessageId'] === 'string' ? out['MessageId'] : '';
  }

  async queueUrl(name: string, signal?: AbortSignal): Promise<string> {
    const out = await this.#attempts(this.#serviceUrl, 'GetQueueUrl', signal, JSON.stringify({ QueueName: name }));
    return typeof out['QueueUrl'] === 'string' ? out['QueueUrl'] : '';
  }

  async queueAttributes(url: string, names: readonly string[], signal?: AbortSignal): Promise<Record<string, string>> {
    const out = await this.#attempts(
      this.#endpoint ?? this.#originOf(url),
      'GetQueueAttributes',
      signal,
      JSON.stringify({ QueueUrl: url, AttributeNames: names }),
    );
    return (out['Attributes'] as Record<string, string> | undefined) ?? {};
  }

  async listQueues(prefix: string | undefined, signal?: AbortSignal): Promise<ListedQueues> {
    return listQueuePages(async (token) => {
      const input = JSON.stringify({
        ...(prefix !== undefined ? { QueueNamePrefix: prefix } : {}),
        MaxResults: LIST_QUEUES_PAGE_MAX,
        ...(token !== undefined ? { NextToken: token } : {}),
      });
      // Each page under its own deadline: 10,000 queues are ten pages.
      const out = await this.#serviceCall('ListQueues', signal, input);
      const page = out['QueueUrls'];
      return {
        urls: Array.isArray(page) ? page.filter((url): url is string => typeof url === 'string') : [],
        nextToken: typeof out['NextToken'] === 'string' ? out['NextToken'] : undefined,
      };
    });
  }

  async queueTags(url: string, signal?: AbortSignal): Promise<Record<string, string>> {
    const out = await this.#call(url, 'ListQueueTags', CALL_DEADLINE_MS, signal, JSON.stringify({ QueueUrl: url }));
    return (out['Tags'] as Record<string, string> | undefined) ?? {};
  }

  /** A call without a queue URL (ListQueues), to the configured or regional endpoint, under CALL_DEADLINE_MS. */
  #serviceCall(operation: string, signal: AbortSignal | undefined, body: string): Promise<Record<string, unknown>> {
    return this.#post(this.#serviceUrl, operation, CALL_DEADLINE_MS, signal, body);
  }

  /** Each queue URL's host, parsed once (the dispatcher uses a handful of queues). */
  readonly #origins = new Map<string, URL>();
  #originOf(queueUrl: string): URL {
    let origin = this.#origins.get(queueUrl);
    if (!origin) {
      origin = new URL(new URL(queueUrl).origin);
      this.#origins.set(queueUrl, origin);
    }
    return origin;
  }

  /** One call of a queue under its deadline, to the configured endpoint, else the queue URL's host. */
  #call(
    queueUrl: string,
    operation: string,
    deadlineMs: number,
    signal: AbortSignal | undefined,
    body: string,
  ): Promise<Record<string, unknown>> {
    return this.#post(this.#endpoint ?? this.#originOf(queueUrl), operation, deadlineMs, signal, body);
  }

  /** One call without a deadline of its own: until `signal` (if any) aborts. */
  #attempts(origin: URL, operation: string, signal: AbortSignal | undefined, body: string): Promise<Record<string, unknown>> {
    return this.#post(origin, operation, undefined, signal, body);
  }

  /**
   * One call with the SDK's retries, under `deadlineMs` (if given) and `signal`; failures classified once
   * (sdk-retry.ts). One async step for all of it: a long poll is suspended here for up to 20 s, thousands at a time.
   */
  async #post(
    origin: URL,
    operation: string,
    deadlineMs: number | undefined,
    signal: AbortSignal | undefined,
    body: string,
  ): Promise<Record<string, unknown>> {
    const deadline = deadlineMs === undefined ? undefined : this.#deadlines.start(deadlineMs, signal);
    try {
      const maxAnswerBytes = operation === 'ReceiveMessage' ? RECEIVE_ANSWER_MAX_BYTES : SMALL_ANSWER_MAX_BYTES;
      const call = {
        origin,
        path: joinPath(origin, '/'),
        headers: headersOf(operation),
        body,
        operation,
        maxAnswerBytes,
        sdkErrorNames: SDK_ERROR_NAMES,
      };
      const out = await postWithSdkRetries(this.#http, call, deadline?.signal ?? signal, this.#onCall);
      return out.length === 0 ? {} : (JSON.parse(out.toString('utf8')) as Record<string, unknown>);
    } finally {
      deadline?.clear();
    }
  }
}

/** Each operation's headers, made once. x-amzn-query-mode, as the SDK sends it: SQS then names its error in x-amzn-query-error (SDK_ERROR_NAMES). */
const HEADERS = new Map<string, Readonly<Record<string, string>>>();
function headersOf(operation: string): Readonly<Record<string, string>> {
  let headers = HEADERS.get(operation);
  if (headers === undefined) {
    headers = { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${operation}`, 'x-amzn-query-mode': 'true' };
    HEADERS.set(operation, headers);
  }
  return headers;
}

/**
 * SQS's awsQuery error codes (the x-amzn-query-error header) that the SDK reports under another name: it
 * throws the exception whose awsQueryError trait matches (@aws-sdk/client-sqs's schema). Codes not listed
 * keep their name there too. test/unit/aws/lean-adapters.test.ts holds this table to the installed SDK.
 */
const SDK_ERROR_NAMES: Readonly<Record<string, string>> = {
  'AWS.SimpleQueueService.BatchEntryIdsNotDistinct': 'BatchEntryIdsNotDistinct',
  'AWS.SimpleQueueService.BatchRequestTooLong': 'BatchRequestTooLong',
  'AWS.SimpleQueueService.EmptyBatchRequest': 'EmptyBatchRequest',
  'AWS.SimpleQueueService.InvalidBatchEntryId': 'InvalidBatchEntryId',
  'AWS.SimpleQueueService.MessageNotInflight': 'MessageNotInflight',
  'AWS.SimpleQueueService.NonExistentQueue': 'QueueDoesNotExist',
  'AWS.SimpleQueueService.PurgeQueueInProgress': 'PurgeQueueInProgress',
  'AWS.SimpleQueueService.QueueDeletedRecently': 'QueueDeletedRecently',
  'AWS.SimpleQueueService.TooManyEntriesInBatchRequest': 'TooManyEntriesInBatchRequest',
  'AWS.SimpleQueueService.UnsupportedOperation': 'UnsupportedOperation',
  'KMS.AccessDeniedException': 'KmsAccessDenied',
  'KMS.DisabledException': 'KmsDisabled',
  'KMS.InvalidKeyUsageException': 'KmsInvalidKeyUsage',
  'KMS.InvalidStateException': 'KmsInvalidState',
  'KMS.NotFoundException': 'KmsNotFound',
  'KMS.OptInRequired': 'KmsOptInRequired',
  'KMS.ThrottlingException': 'KmsThrottled',
  QueueAlreadyExists: 'QueueNameExists',
};

/** A ReceiveMessage answer's messages, checked and decoded as the SDK hands them out. */
function receivedMessages(out: Record<string, unknown>): Message[] {
  const messages = (out['Messages'] as Message[] | undefined) ?? [];
  checkBodies(messages);
  for (const m of messages) decodeBinaryAttributes(m);
  return messages;
}

/** The SDK's receive check: every body must match its MD5OfBody, or the whole call fails. */
function checkBodies(messages: readonly Message[]): void {
  const bad: string[] = [];
  for (const m of messages) {
    if (
      createHash('md5')
        .update(m.Body ?? '')
        .digest('hex') !== m.MD5OfBody
    )
      bad.push(messageIdOf(m));
  }
  if (bad.length > 0)
    throw new AwsCallError('ReceiveMessage', classifyAwsError(new Error(`Invalid MD5 checksum on messages: ${bad.join(', ')}`)));
}

/** The wire carries binary attribute values as base64; the SDK hands them out as bytes. */
function decodeBinaryAttributes(m: Message): void {
  const attributes = m.MessageAttributes;
  if (!attributes) return;
  for (const value of Object.values(attributes)) {
    if (typeof value.BinaryValue === 'string') value.BinaryValue = Buffer.from(value.BinaryValue, 'base64');
    if (Array.isArray(value.BinaryListValues))
      value.BinaryListValues = value.BinaryListValues.map((b) => (typeof b === 'string' ? Buffer.from(b, 'base64') : b));
  }
}

function entryFailures(out: Record<string, unknown>): EntryFailure[] {
  const failed = (out['Failed'] as { Id?: string; Code?: string; Message?: string }[] | undefined) ?? [];
  return failed.map((f) => ({ id: f.Id ?? '', code: f.Code ?? 'Unknown', message: f.Message ?? '' }));
}
