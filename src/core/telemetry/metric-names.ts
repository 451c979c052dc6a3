/**
 * Every metric workerless emits, in one place. Each has a CloudWatch name (the event counts are named after
 * Lambda's event source mapping EventCount metrics, so dashboards built for the trigger read the same) and a
 * Prometheus name (prefix `workerless_`, `_total` for counters, `_seconds` for durations). Components record
 * through MetricsSink with the CloudWatch name; the Prometheus sink maps it with this table.
 */
export type MetricKind = 'counter' | 'gauge' | 'histogram';

export interface MetricDef {
  /** CloudWatch metric name, also the name components record under. */
  readonly cloudwatch: string;
  readonly prometheus: string;
  readonly kind: MetricKind;
  /** CloudWatch unit; histograms record milliseconds and Prometheus exposes seconds. */
  readonly unit: 'Count' | 'Milliseconds';
  /** Prometheus label names, from the datum's dimensions (`Queue` -> `queue`, `TaskQueue` -> `task_queue`). */
  readonly labels: readonly string[];
  /**
   * The dimension sets CloudWatch gets the datum under, when not all its dimensions as one set: CloudWatch tells
   * metrics apart by their whole set of dimensions, so a dimension added to an existing metric would part it from
   * every dashboard and alarm that names the old set (as Lambda publishes its own metrics under several sets).
   */
  readonly cloudwatchDimensionSets?: readonly (readonly string[])[];
  /** A histogram's Prometheus buckets in seconds, when not the durations' (src/operator/metrics/prometheus.ts). */
  readonly buckets?: readonly number[];
  readonly help: string;
}

const def = (d: MetricDef): MetricDef => Object.freeze(d);

/**
 * The `queue` label (Prometheus) and `Queue` dimension (CloudWatch) of a route's per-queue metrics while they are
 * aggregated (`--metrics-per-queue`, src/operator/metrics/queue-series.ts): counters and histograms hold every
 * queue's events, gauges the sum over the queues. Part of the dashboards' contract, like the names below.
 */
export const AGGREGATED_QUEUE = '_aggregated';

/** SQS dispatch, per queue (dimensions Function and Queue). */
export const SQS_METRICS = {
  polled: def({
    cloudwatch: 'PolledEventCount',
    prometheus: 'workerless_polled_events_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Messages received from the queue',
  }),
  invoked: def({
    cloudwatch: 'InvokedEventCount',
    prometheus: 'workerless_invoked_events_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Messages passed to an invocation that the function answered',
  }),
  failedInvoke: def({
    cloudwatch: 'FailedInvokeEventCount',
    prometheus: 'workerless_failed_invoke_events_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Messages whose invocation failed (function error, invalid response, or an Invoke error given up on)',
  }),
  deleted: def({
    cloudwatch: 'DeletedEventCount',
    prometheus: 'workerless_deleted_events_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Messages deleted after the function processed them',
  }),
  dropped: def({
    cloudwatch: 'DroppedEventCount',
    prometheus: 'workerless_dropped_events_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Messages released back to the queue unprocessed (shutdown while throttled or paused)',
  }),
  lapsed: def({
    cloudwatch: 'LeaseLapsedEventCount',
    prometheus: 'workerless_lease_lapsed_events_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Messages whose visibility lease lapsed: never invoked again nor counted as deleted; SQS delivers them again',
  }),
  filtered: def({
    cloudwatch: 'FilteredOutEventCount',
    prometheus: 'workerless_filtered_out_events_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Messages that did not match the filter criteria',
  }),
  oversized: def({
    cloudwatch: 'OversizedEventCount',
    prometheus: 'workerless_oversized_events_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: "Messages whose event is over their invocation type's payload limit (1 MB async, 6 MB sync): not invoked, left to the queue's redrive policy",
  }),
  untenanted: def({
    cloudwatch: 'NoTenantEventCount',
    prometheus: 'workerless_no_tenant_events_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: "Messages without a tenant id for a tenant-isolated function (--tenant-id-from): not invoked, left to the queue's redrive",
  }),
  throttled: def({
    cloudwatch: 'ThrottledInvokeCount',
    prometheus: 'workerless_throttled_invocations_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue', 'reason'],
    // Function+Queue as before (dashboards and alarms keep matching), and Function+Reason beside it.
    cloudwatchDimensionSets: [
      ['Function', 'Queue'],
      ['Function', 'Reason'],
    ],
    help: "Invocations refused by Lambda throttling (retried, not counted as attempts), by Lambda's Reason",
  }),
  failureDelivered: def({
    cloudwatch: 'OnFailureDestinationDeliveredEventCount',
    prometheus: 'workerless_failure_destination_delivered_events_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Failed messages sent to the failure destination on their last allowed receive (then deleted)',
  }),
  failureNotDelivered: def({
    cloudwatch: 'OnFailureDestinationDeliveryFailedEventCount',
    prometheus: 'workerless_failure_destination_delivery_failed_events_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Failed messages the failure destination did not accept (they stay on the queue, under its redrive policy)',
  }),
  retryDelayInvalid: def({
    cloudwatch: 'RetryDelayInvalidCount',
    prometheus: 'workerless_retry_delay_invalid_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'retryDelaySeconds values from the function that were invalid (the retry back-off applied instead)',
  }),
  retryDelayClamped: def({
    cloudwatch: 'RetryDelayClampedCount',
    prometheus: 'workerless_retry_delay_clamped_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: "retryDelaySeconds values from the function beyond SQS's 12-hour visibility limit, clamped to it",
  }),
  inFlight: def({
    cloudwatch: 'InFlightEventCount',
    prometheus: 'workerless_in_flight_messages',
    kind: 'gauge',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Messages received and not yet settled',
  }),
  invocationDuration: def({
    cloudwatch: 'InvocationDuration',
    prometheus: 'workerless_invocation_duration_seconds',
    kind: 'histogram',
    unit: 'Milliseconds',
    labels: ['function', 'queue'],
    help: 'Duration of Invoke calls the function answered',
  }),
  backlogVisible: def({
    cloudwatch: 'QueueMessagesVisible',
    prometheus: 'workerless_queue_messages_visible',
    kind: 'gauge',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Messages waiting in the queue (ApproximateNumberOfMessages), read every --visibility-refresh',
  }),
  backlogNotVisible: def({
    cloudwatch: 'QueueMessagesNotVisible',
    prometheus: 'workerless_queue_messages_not_visible',
    kind: 'gauge',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Messages received by any consumer and not yet deleted (ApproximateNumberOfMessagesNotVisible)',
  }),
  backlogDelayed: def({
    cloudwatch: 'QueueMessagesDelayed',
    prometheus: 'workerless_queue_messages_delayed',
    kind: 'gauge',
    unit: 'Count',
    labels: ['function', 'queue'],
    help: 'Messages not yet visible because of a delay (ApproximateNumberOfMessagesDelayed)',
  }),
  ageAtReceive: def({
    cloudwatch: 'MessageAgeAtReceive',
    prometheus: 'workerless_message_age_at_receive_seconds',
    kind: 'histogram',
    unit: 'Milliseconds',
    labels: ['function', 'queue'],
    // From a message just sent to SQS's 14-day retention maximum.
    buckets: [0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 14_400, 86_400, 345_600, 1_209_600],
    help: 'Time from sending a message (SentTimestamp) to receiving it, each receive counted',
  }),
  receiveToSettle: def({
    cloudwatch: 'ProcessingDuration',
    prometheus: 'workerless_receive_to_settle_seconds',
    kind: 'histogram',
    unit: 'Milliseconds',
    labels: ['function', 'queue'],
    help: 'Time from receiving a message to settling it (deleted, kept or released)',
  }),
} as const;

/** Per function (dimension Function). */
export const FUNCTION_METRICS = {
  concurrencyInUse: def({
    cloudwatch: 'ConcurrencyInUse',
    prometheus: 'workerless_concurrency_in_use',
    kind: 'gauge',
    unit: 'Count',
    labels: ['function'],
    help: 'Worker loops holding a batch right now',
  }),
  concurrencyLimit: def({
    cloudwatch: 'ConcurrencyLimit',
    prometheus: 'workerless_concurrency_limit',
    kind: 'gauge',
    unit: 'Count',
    labels: ['function'],
    help: 'Worker loops allowed to hold a batch: --concurrency, lower while --adaptive-concurrency backs off throttles',
  }),
  paused: def({
    cloudwatch: 'FunctionPaused',
    prometheus: 'workerless_function_paused',
    kind: 'gauge',
    unit: 'Count',
    labels: ['function'],
    help: '1 while the function is paused as unusable (access denied, deleted, KMS, update in progress)',
  }),
  queueSetChanges: def({
    cloudwatch: 'QueueSetChangeCount',
    prometheus: 'workerless_queue_set_changes_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['function', 'change'],
    help: 'Queues found by --queues-prefix or --queues-tag that joined (change="added") or left (change="removed") the route',
  }),
} as const;

/** AWS API calls (dimensions Service, Operation, Outcome: ok, throttled, retryable, fatal). */
export const AWS_METRICS = {
  calls: def({
    cloudwatch: 'AwsApiCalls',
    prometheus: 'workerless_aws_api_calls_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['service', 'operation', 'outcome'],
    help: 'AWS API calls by operation and outcome',
  }),
} as const;

/** Temporal spillover, per task queue (dimension TaskQueue). */
export const TEMPORAL_METRICS = {
  backlog: def({
    cloudwatch: 'Backlog',
    prometheus: 'workerless_temporal_backlog',
    kind: 'gauge',
    unit: 'Count',
    labels: ['task_queue'],
    help: 'Approximate task backlog of the task queue; absent while the server reports no statistics (see backlog_known)',
  }),
  backlogKnown: def({
    cloudwatch: 'BacklogKnown',
    prometheus: 'workerless_temporal_backlog_known',
    kind: 'gauge',
    unit: 'Count',
    labels: ['task_queue'],
    help: '1 when the latest reading had task queue statistics, 0 when the server sent none (an unloaded task queue): the backlog is unknown, not zero',
  }),
  workersAlive: def({
    cloudwatch: 'WorkersAlive',
    prometheus: 'workerless_temporal_workers_alive',
    kind: 'gauge',
    unit: 'Count',
    labels: ['task_queue'],
    help: 'Lambda workers counted as alive',
  }),
  desiredWorkers: def({
    cloudwatch: 'DesiredWorkers',
    prometheus: 'workerless_temporal_desired_workers',
    kind: 'gauge',
    unit: 'Count',
    labels: ['task_queue'],
    help: 'Long-lived workers the task queue should have (--temporal-worker-set-max): what a KEDA ScaledObject or the ECS service follows',
  }),
  workersInvoked: def({
    cloudwatch: 'WorkersInvoked',
    prometheus: 'workerless_temporal_workers_invoked_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['task_queue'],
    help: 'Lambda workers invoked',
  }),
  invocationsRefused: def({
    cloudwatch: 'InvocationsRefused',
    prometheus: 'workerless_temporal_invocations_refused_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['task_queue'],
    help: 'Worker invocations refused by Lambda',
  }),
  backlogAge: def({
    cloudwatch: 'BacklogAge',
    prometheus: 'workerless_temporal_backlog_age_seconds',
    kind: 'histogram',
    unit: 'Milliseconds',
    labels: ['task_queue'],
    help: 'Approximate age of the oldest waiting task, one sample per reading',
  }),
  workersLost: def({
    cloudwatch: 'WorkersLost',
    prometheus: 'workerless_temporal_workers_lost_total',
    kind: 'counter',
    unit: 'Count',
    labels: ['task_queue'],
    help: 'Lambda workers that stopped polling, or never started, before their lifetime ended',
  }),
} as const;

/** The fleet (--fleet-table, docs/fleet.md), this replica's view of it (dimension Fleet, the fleet's name). */
export const FLEET_METRICS = {
  shared: def({
    cloudwatch: 'FleetShared',
    prometheus: 'workerless_fleet_shared',
    kind: 'gauge',
    unit: 'Count',
    labels: ['fleet'],
    help: '1 while the fleet is shared (this replica polls the idle queues it owns), 0 while joining, fallen back (DynamoDB failing: every queue polled here) or left',
  }),
  members: def({
    cloudwatch: 'FleetMembers',
    prometheus: 'workerless_fleet_members',
    kind: 'gauge',
    unit: 'Count',
    labels: ['fleet'],
    help: 'Live members of the fleet as this replica sees them, itself included',
  }),
  ownedQueues: def({
    cloudwatch: 'FleetOwnedQueues',
    prometheus: 'workerless_fleet_owned_queues',
    kind: 'gauge',
    unit: 'Count',
    labels: ['fleet'],
    help: 'Queues whose idle long poll this replica keeps',
  }),
  share: def({
    cloudwatch: 'FleetShare',
    prometheus: 'workerless_fleet_share',
    kind: 'gauge',
    unit: 'Count',
    labels: ['fleet'],
    help: "This replica's part of --fleet-concurrency (before its own --concurrency caps it); absent without --fleet-concurrency",
  }),
} as const;

export const ALL_METRICS: readonly MetricDef[] = [
  ...Object.values(SQS_METRICS),
  ...Object.values(FUNCTION_METRICS),
  ...Object.values(AWS_METRICS),
  ...Object.values(TEMPORAL_METRICS),
  ...Object.values(FLEET_METRICS),
];
