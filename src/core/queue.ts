import type { Message } from '@aws-sdk/client-sqs';

/** A queue as the dispatcher uses it, resolved once at start-up. */
export interface ResolvedQueue {
  /** Short name, used in logs and as the metrics dimension. */
  readonly name: string;
  readonly url: string;
  readonly arn: string;
  /** The queue's region, from its ARN: the payload's awsRegion. */
  readonly region: string;
  readonly fifo: boolean;
  /** The queue's visibility timeout at start-up, or the --visibility-timeout override (src/dispatch/queue-visibility.ts). */
  readonly visibilityTimeoutSec: number;
  readonly weight: number;
  /** The maxReceiveCount of the queue's RedrivePolicy at start-up; undefined: no redrive policy (src/dispatch/queue-visibility.ts keeps it current). */
  readonly maxReceiveCount?: number | undefined;
}

export interface ReceiptEntry {
  readonly id: string;
  readonly receiptHandle: string;
}

export interface EntryFailure {
  readonly id: string;
  readonly code: string;
  readonly message: string;
}

export interface ReceiveOptions {
  /** 1-10 */
  readonly max: number;
  /** 0 = short poll; up to 20 = long poll. */
  readonly waitSec: number;
  /**
   * The visibility timeout SQS applies to these messages. The Receiver always states one (the one their lease
   * assumes); left out, SQS applies the queue's current timeout, whatever it has become since start-up.
   */
  readonly visibilityTimeoutSec?: number | undefined;
  /**
   * A receive that has not been sent when this aborts is not sent (it returns no messages). It never aborts a
   * receive already sent: SQS could hand messages to a call whose answer nobody reads.
   */
  readonly startBefore?: AbortSignal | undefined;
}

/**
 * The SQS operations the dispatcher needs. Every call has a deadline; a failure is thrown as an AwsCallError
 * that carries its classification (retryable, throttled, fatal), so callers never see raw SDK errors.
 */
export interface MessageSource {
  receive(queue: ResolvedQueue, options: ReceiveOptions, signal?: AbortSignal): Promise<Message[]>;
  /** Deletes up to 10 messages; returns the entries SQS refused. */
  deleteBatch(queue: ResolvedQueue, entries: readonly ReceiptEntry[], signal?: AbortSignal): Promise<EntryFailure[]>;
  /** Sets the visibility timeout of up to 10 messages (0 releases them at once). */
  changeVisibility(
    queue: ResolvedQueue,
    entries: readonly ReceiptEntry[],
    timeoutSec: number,
    signal?: AbortSignal,
  ): Promise<EntryFailure[]>;
}

/** What SendMessage sends (a FIFO queue needs the group and deduplication ids). */
export interface OutgoingMessage {
  readonly body: string;
  readonly groupId?: string | undefined;
  readonly deduplicationId?: string | undefined;
  /** String message attributes, by name. */
  readonly attributes?: Readonly<Record<string, string>> | undefined;
}

/**
 * SendMessage, for a failure destination (src/settle/deliver-failures.ts): resolves with the new message's id
 * once SQS accepted it; a failure is thrown as a classified AwsCallError, as every MessageSource call is.
 */
export interface MessageSender {
  sendMessage(queueUrl: string, message: OutgoingMessage, signal?: AbortSignal): Promise<string>;
}

/** SQS returns at most 10 messages per ReceiveMessage (MaxNumberOfMessages 1-10: ReceiveMessage API reference). */
export const SQS_RECEIVE_MAX = 10;
/** SQS batch calls (DeleteMessageBatch, ChangeMessageVisibilityBatch) take at most 10 entries (their API references). */
export const SQS_BATCH_MAX = 10;

/**
 * A long poll gets its wait time plus this margin; SQS answers a long poll at its wait time, so a call still
 * open after that is hung (a dead connection behind a NAT, a stuck proxy) and must not hold its loop.
 */
export const RECEIVE_MARGIN_MS = 5_000;
/** Every other SQS call answers in milliseconds when SQS is healthy. */
export const CALL_DEADLINE_MS = 5_000;

/** The short name of a queue reference (a name, or a URL's last path segment): the name in logs and metrics. */
export function queueNameOf(ref: string): string {
  return /^https?:\/\//i.test(ref) ? (ref.replace(/\/+$/, '').split('/').pop() ?? ref) : ref;
}

/**
 * The two start-up calls that resolve a queue, with the SDK's retries and no deadline but `signal`'s.
 * Failures are thrown as an AwsCallError (classified by the adapter, like every MessageSource call).
 */
export interface QueueLookup {
  /** GetQueueUrl: the URL of the queue with this name. */
  queueUrl(name: string, signal?: AbortSignal): Promise<string>;
  /** GetQueueAttributes: the named attributes of the queue at this URL. */
  queueAttributes(url: string, names: readonly string[], signal?: AbortSignal): Promise<Record<string, string>>;
}

/**
 * The SQS calls that find a route's queues by name prefix or tag (src/aws/queue-discovery.ts). Each call has
 * its own deadline; failures are thrown as a classified AwsCallError, as every MessageSource call is.
 */
export interface QueueDirectory {
  /**
   * ListQueues with QueueNamePrefix (undefined: every queue), every page (MaxResults 1000, NextToken): the queue URLs.
   * Without MaxResults SQS returns at most 1,000 URLs and no NextToken (ListQueues API reference), so a prefix
   * matching more would silently lose the rest. Stops at a NextToken seen before or after LIST_QUEUES_MAX_PAGES
   * pages, and says why (`stopped`), with the URLs read so far.
   */
  listQueues(prefix: string | undefined, signal?: AbortSignal): Promise<ListedQueues>;
  /** ListQueueTags: the queue's tags (ListQueueTags API reference). */
  queueTags(url: string, signal?: AbortSignal): Promise<Record<string, string>>;
}

/** ListQueues returns at most this many URLs a page (MaxResults 1-1000, ListQueues API reference). */
export const LIST_QUEUES_PAGE_MAX = 1_000;

/**
 * The most ListQueues pages one listing reads: 100,000 queues at LIST_QUEUES_PAGE_MAX a page. The ListQueues API
 * reference bounds a page (MaxResults 1-1000) but not how many pages a listing has (SQS sets no quota on the queues
 * of an account), so the bound is ours: ten times the 10,000 queues one daemon is measured with, for a few MiB of
 * URLs; a server that never stops giving a NextToken (issue 42: one that repeated it grew the daemon from 120 to
 * 735 MiB in 30 s) costs at most this many calls a listing.
 */
export const LIST_QUEUES_MAX_PAGES = 100;

/** What a ListQueues listing read. */
export interface ListedQueues {
  /** The queue URLs, each once. */
  readonly urls: readonly string[];
  /** Why the listing stopped before a last page (a repeated NextToken, the page bound); absent when it read them all. */
  readonly stopped?: string;
}

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

/**
 * Queues resolved at a time (two calls each), by the start-up and by `workerless check`. All at once, 10,000 queues
 * opened 10,000 connections together, and ElasticMQ answered some of them after the start-up deadline; 64 at a time
 * resolve 10,000 queues in seconds on SQS's latency.
 */
export const QUEUE_RESOLVES_AT_ONCE = 64;
