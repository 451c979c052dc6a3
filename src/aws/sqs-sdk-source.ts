import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  ListQueueTagsCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
  type QueueAttributeName,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { AwsCallError, classifyAwsError, withDeadline } from '../core/errors.ts';
import { messageAttributesOf } from './destination-send.ts';
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
import { listQueuePages } from './list-queue-pages.ts';

/**
 * MessageSource and QueueLookup on the AWS SDK's SQSClient (`--aws-client sdk`). Only loaded on that path:
 * the SDK client costs tens of MiB of memory that the lean path (sqs-http-source.ts) does without.
 */
export class SqsSdkSource implements MessageSource, QueueLookup, QueueDirectory, MessageSender {
  readonly #client: SQSClient;

  constructor(client: SQSClient) {
    this.#client = client;
  }

  async receive(queue: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]> {
    if (options.startBefore?.aborted) return [];
    const command = new ReceiveMessageCommand({
      QueueUrl: queue.url,
      MaxNumberOfMessages: options.max,
      WaitTimeSeconds: options.waitSec,
      ...(options.visibilityTimeoutSec !== undefined ? { VisibilityTimeout: options.visibilityTimeoutSec } : {}),
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    });
    const out = await this.#call('ReceiveMessage', options.waitSec * 1000 + RECEIVE_MARGIN_MS, signal, (abortSignal) =>
      this.#client.send(command, { abortSignal }),
    );
    return out.Messages ?? [];
  }

  async deleteBatch(queue: ResolvedQueue, entries: readonly ReceiptEntry[], signal?: AbortSignal): Promise<EntryFailure[]> {
    if (entries.length === 0) return [];
    const command = new DeleteMessageBatchCommand({
      QueueUrl: queue.url,
      Entries: entries.map((e) => ({ Id: e.id, ReceiptHandle: e.receiptHandle })),
    });
    const out = await this.#call('DeleteMessageBatch', CALL_DEADLINE_MS, signal, (abortSignal) =>
      this.#client.send(command, { abortSignal }),
    );
    return entryFailures(out.Failed);
  }

  async changeVisibility(
    queue: ResolvedQueue,
    entries: readonly ReceiptEntry[],
    timeoutSec: number,
    signal?: AbortSignal,
  ): Promise<EntryFailure[]> {
    if (entries.length === 0) return [];
    const command = new ChangeMessageVisibilityBatchCommand({
      QueueUrl: queue.url,
      Entries: entries.map((e) => ({ Id: e.id, ReceiptHandle: e.receiptHandle, VisibilityTimeout: timeoutSec })),
    });
    const out = await this.#call('ChangeMessageVisibilityBatch', CALL_DEADLINE_MS, signal, (abortSignal) =>
      this.#client.send(command, { abortSignal }),
    );
    return entryFailures(out.Failed);
  }

  async sendMessage(queueUrl: string, message: OutgoingMessage, signal?: AbortSignal): Promise<string> {
    const command = new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: message.body,
      ...(message.groupId !== undefined ? { MessageGroupId: message.groupId } : {}),
      ...(message.deduplicationId !== undefined ? { MessageDeduplicationId: message.deduplicationId } : {}),
      ...(message.attributes !== undefined ? { MessageAttributes: messageAttributesOf(message) } : {}),
    });
    const out = await this.#call('SendMessage', DESTINATION_DEADLINE_MS, signal, (abortSignal) =>
      this.#client.send(command, { abortSignal }),
    );
    return out.MessageId ?? '';
  }

  async queueUrl(name: string, signal?: AbortSignal): Promise<string> {
    try {
      return (await this.#client.send(new GetQueueUrlCommand({ QueueName: name }), { abortSignal: signal })).QueueUrl ?? '';
    } catch (err) {
      throw new AwsCallError('GetQueueUrl', classifyAwsError(err, signal));
    }
  }

  async queueAttributes(url: string, names: readonly string[], signal?: AbortSignal): Promise<Record<string, string>> {
    try {
      const command = new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: names as QueueAttributeName[] });
      return (await this.#client.send(command, { abortSignal: signal })).Attributes ?? {};
    } catch (err) {
      throw new AwsCallError('GetQueueAttributes', classifyAwsError(err, signal));
    }
  }

  async listQueues(prefix: string | undefined, signal?: AbortSignal): Promise<ListedQueues> {
    return listQueuePages(async (token) => {
      const command = new ListQueuesCommand({
        ...(prefix !== undefined ? { QueueNamePrefix: prefix } : {}),
        MaxResults: LIST_QUEUES_PAGE_MAX,
        ...(token !== undefined ? { NextToken: token } : {}),
      });
      // Each page under its own deadline: 10,000 queues are ten pages.
      const out = await this.#call('ListQueues', CALL_DEADLINE_MS, signal, (abortSignal) => this.#client.send(command, { abortSignal }));
      return { urls: out.QueueUrls ?? [], nextToken: out.NextToken };
    });
  }

  async queueTags(url: string, signal?: AbortSignal): Promise<Record<string, string>> {
    const command = new ListQueueTagsCommand({ QueueUrl: url });
    const out = await this.#call('ListQueueTags', CALL_DEADLINE_MS, signal, (abortSignal) => this.#client.send(command, { abortSignal }));
    return out.Tags ?? {};
  }

  /** Runs one call under its deadline and classifies what it throws, once, here at the boundary. */
  async #call<T>(
    operation: string,
    deadlineMs: number,
    signal: AbortSignal | undefined,
    send: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    const abortSignal = withDeadline(deadlineMs, signal);
    try {
      return await send(abortSignal);
    } catch (err) {
      throw new AwsCallError(operation, classifyAwsError(err, abortSignal));
    }
  }
}

function entryFailures(
  failed: readonly { Id?: string | undefined; Code?: string | undefined; Message?: string | undefined }[] | undefined,
): EntryFailure[] {
  return (failed ?? []).map((f) => ({ id: f.Id ?? '', code: f.Code ?? 'Unknown', message: f.Message ?? '' }));
}
