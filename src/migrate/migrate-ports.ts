/**
 * What `workerless migrate` reads and changes, as plain values: a function's SQS event source mappings (Lambda's
 * ListEventSourceMappings, EventSourceMappingConfiguration) and their queues' attributes (SQS GetQueueAttributes).
 * The core (migrate-config.ts) turns them into a config file; the adapters (migrate-adapters.ts) fill them in.
 */

/** One event source mapping, as much of it as the migration reads. */
export interface SqsMapping {
  readonly uuid: string;
  /** The function the mapping invokes, as Lambda names it (an alias or version ARN when the mapping has one). */
  readonly functionArn: string;
  /** The event source: an SQS queue ARN for the mappings migrated, anything else is left out. */
  readonly eventSourceArn: string;
  /** Enabled, Disabled, Enabling, Disabling, Creating, Updating, Deleting. */
  readonly state: string;
  /** BatchSize: Lambda's default for SQS is 10. */
  readonly batchSize: number;
  /** MaximumBatchingWindowInSeconds; 0 when unset. */
  readonly windowSec: number;
  /** FilterCriteria.Filters[].Pattern, each a JSON text; empty without filters. */
  readonly filterPatterns: readonly string[];
  /** FilterCriteriaError.Message: Lambda could not decrypt the filters (KMSKeyArn without kms:Decrypt). */
  readonly filterError?: string | undefined;
  /** KMSKeyArn: the filter criteria are encrypted with a customer managed key. */
  readonly filterKmsKeyArn?: string | undefined;
  /** ScalingConfig.MaximumConcurrency (2-1,000); undefined when unset. */
  readonly maxConcurrency?: number | undefined;
  /** FunctionResponseTypes holds ReportBatchItemFailures. */
  readonly reportBatchItemFailures: boolean;
  /** MetricsConfig.Metrics holds EventCount. */
  readonly eventCountMetrics: boolean;
  /** ProvisionedPollerConfig (provisioned mode). */
  readonly provisionedPollers?: { readonly min?: number | undefined; readonly max?: number | undefined } | undefined;
}

/** What the migration reads of a queue (GetQueueUrl, GetQueueAttributes). */
export interface QueueFacts {
  readonly arn: string;
  readonly url: string;
  /** RedrivePolicy, when the queue has one. */
  readonly redrive?: { readonly deadLetterTargetArn: string; readonly maxReceiveCount: number } | undefined;
}

/** The I/O of `workerless migrate`; each call throws an AwsCallError when AWS refuses or cannot be reached. */
export interface MigratePorts {
  /** Every event source mapping of the function (ListEventSourceMappings, all pages). */
  listMappings(functionName: string, signal: AbortSignal): Promise<SqsMapping[]>;
  /** The queue behind an SQS queue ARN. */
  queueFacts(queueArn: string, signal: AbortSignal): Promise<QueueFacts>;
  /** UpdateEventSourceMapping Enabled=...; returns the State Lambda answers (Disabling, Enabling...). */
  setEnabled(uuid: string, enabled: boolean, signal: AbortSignal): Promise<string>;
  /** GET the URL: the HTTP status, or why it could not be reached (ECONNREFUSED, timed out). */
  probe(url: string, signal: AbortSignal): Promise<{ status: number } | { unreachable: string }>;
  /**
   * What the workerless run behind a /readyz URL invokes and reads: from its status.json beside it, `functions` and
   * the names of every queue it lists (all its pages); or why that could not be read.
   */
  runReads(readyUrl: string, signal: AbortSignal): Promise<RunStatus | { unreachable: string }>;
}

/** What a ready run says it does (its status.json). */
export interface RunStatus {
  readonly functions: string[];
  /** The names of the queues it reads (configured, and found by prefix or tag). */
  readonly queues: string[];
}
