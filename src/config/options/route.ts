import { TENANT_SOURCE_PATTERN } from '../../invoke/tenant-split.ts';
import type { OptionDef } from './option-def.ts';

/**
 * The route options: the SQS dispatch and Delivery control groups, the options each route of the `routes` list
 * takes (src/config/routes.ts); given outside `routes` they are every route's default, except those marked
 * `ownToRoute`. First in --help and the docs tables (CORE_OPTIONS in options.ts puts daemon.ts's after them).
 */

const SQS = 'SQS dispatch:';
const DELIVERY = 'Delivery control (off by default):';
/** The groups whose options a route of the `routes` list takes (src/config/routes.ts); the rest are daemon-wide. */
export const ROUTE_GROUPS: readonly string[] = [SQS, DELIVERY];

/** name, name:alias/version, full ARN, or partial ARN (account:function:name), as Lambda's Invoke accepts. */
const FUNCTION_PATTERN =
  /^(arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:|\d{12}:function:)?[a-zA-Z0-9_-]{1,64}(:(\$LATEST|[a-zA-Z0-9_-]{1,128}))?$/;
const NAME_EQUALS_N = '`name=N,...`';
/** A queue name's characters (CreateQueue: alphanumerics, hyphens and underscores, up to 80), for a name prefix. */
const QUEUE_PREFIX_PATTERN = /^[A-Za-z0-9_-]{1,80}$/;
/**
 * `key=value` under SQS's tag rules (Amazon SQS cost allocation tags): keys up to 128 and values up to 256
 * characters of Unicode letters, digits, white space and _ . : / = + - @, and no key starting with `aws:`. The
 * key ends at the first `=`.
 */
const QUEUE_TAG_PATTERN = /^(?!aws:)[\p{L}\p{N}\s_.:/+\-@]{1,128}=[\p{L}\p{N}\s_.:/=+\-@]{0,256}$/u;

export const ROUTE_OPTIONS = [
  {
    flag: 'function',
    group: SQS,
    ownToRoute: true,
    kind: 'string',
    pattern: FUNCTION_PATTERN,
    mismatch: 'must be a function name, name:alias or function ARN',
    describe: 'Lambda function to invoke: name, ARN or name:alias',
    doc: 'function name, ARN, partial ARN or `name:alias`; an error without `--queues`',
    required: 'with queues',
    valuesText: 'name, ARN, `name:alias`',
  },
  {
    flag: 'queues',
    group: SQS,
    ownToRoute: true,
    kind: 'string',
    describe: 'Queues (names or URLs): "a,b,c" strict order, "a:3,b:1" weighted, equal weights random',
    doc: 'names or full queue URLs; see [Priority](#priority)',
    required: 'unless Temporal spillover',
    valuesText: '`a,b,c`, `a:3,b:1`',
  },
  {
    flag: 'queues-prefix',
    group: SQS,
    ownToRoute: true,
    kind: 'string',
    pattern: QUEUE_PREFIX_PATTERN,
    mismatch: "must be 1 to 80 letters, digits, hyphens or underscores (a queue name's characters)",
    describe: 'Find the queues instead of listing them: every queue whose name starts with this (re-read every --queues-refresh)',
    doc: 'the queues whose names start with this, found with ListQueues and re-read every `--queues-refresh`; instead of `--queues`; see [Queues found, not listed](#queues-found-not-listed)',
    valuesText: '`tenant-`',
  },
  {
    flag: 'queues-tag',
    group: SQS,
    ownToRoute: true,
    kind: 'string',
    pattern: QUEUE_TAG_PATTERN,
    mismatch:
      'must be key=value: a key of 1 to 128 and a value of up to 256 letters, digits, spaces or _ . : / + - @ (= in the value too), the key not starting with aws:',
    describe:
      'Find the queues instead of listing them: every queue with this tag (with --queues-prefix: among its queues); weight and limits from workerless:* tags',
    doc: 'the queues carrying this tag, with their weight and limits from their `workerless:weight`, `workerless:max-concurrency`, `workerless:min-concurrency` and `workerless:rate` tags; instead of `--queues`, with `--queues-prefix` among its queues; see [Queues found, not listed](#queues-found-not-listed)',
    valuesText: '`workerless=payments`',
  },
  {
    flag: 'queues-refresh',
    group: SQS,
    kind: 'duration',
    minMs: 1_000,
    maxMs: 3_600_000,
    default: 60_000,
    describe: 'How often --queues-prefix and --queues-tag are re-read (ListQueues); the tags of queues already found every 10 refreshes',
    doc: "how often the queues of `--queues-prefix` and `--queues-tag` are listed again (one ListQueues a page of 1,000); a new queue's tags are read when it appears, every queue's every 10 refreshes; see [Queues found, not listed](#queues-found-not-listed)",
  },
  {
    flag: 'concurrency',
    group: SQS,
    kind: 'integer',
    min: 1,
    max: 10_000,
    default: 10,
    describe: 'Worker loops = most concurrent invocations',
  },
  { flag: 'poll-for', group: SQS, kind: 'integer', min: 0, max: 20, default: 20, describe: 'Long-poll seconds when every queue is empty' },
  { flag: 'sleep', group: SQS, kind: 'number', min: 0, max: 3600, default: 0, describe: 'Seconds to sleep after an empty long poll' },
  {
    flag: 'batch-size',
    group: SQS,
    kind: 'integer',
    min: 1,
    max: 10_000,
    default: 1,
    describe: 'Messages per invocation (above 10 with --batch-window; at most 10 on FIFO)',
    doc: 'messages per invocation; above 10 needs `--batch-window` of at least 1s, FIFO queues take at most 10; see [Batching window](#batching-window)',
  },
  {
    flag: 'batch-window',
    group: SQS,
    kind: 'duration',
    minMs: 0,
    maxMs: 300_000,
    default: 0,
    describe:
      'How long a batch may gather from its first message before it is invoked (it is invoked sooner when full or at 6 MB); not on FIFO queues; a duration such as 500ms, 5s or 2m, a bare number means seconds',
    doc: "Lambda's MaximumBatchingWindowInSeconds: receive until the batch is full, this long after its first message, or 6 MB; not on FIFO queues; see [Batching window](#batching-window)",
  },
  {
    flag: 'visibility-timeout',
    group: SQS,
    kind: 'integer',
    min: 1,
    max: 43_200,
    describe: 'Visibility timeout on receive, seconds',
    doc: 'visibility timeout passed on receive, seconds',
    defaultText: "the queue's own",
  },
  {
    flag: 'visibility-refresh',
    group: SQS,
    kind: 'duration',
    minMs: 1_000,
    maxMs: 3_600_000,
    default: 60_000,
    describe:
      "How often the queues' attributes are re-read: their own visibility timeout (without --visibility-timeout) and the backlog gauges",
    doc: "how often each queue's attributes are re-read (one call per queue): its own visibility timeout, so a change is picked up without a restart (see [Visibility and leases](#visibility-and-leases)), and the [backlog gauges](operations.md#backlog-gauges)",
  },
  {
    flag: 'backlog-gauges',
    group: SQS,
    kind: 'boolean',
    default: true,
    describe: "Read each queue's visible, in-flight and delayed counts every --visibility-refresh, for /metrics and CloudWatch",
    doc: "each queue's visible, in-flight and delayed counts, read every `--visibility-refresh`; see [Backlog gauges](operations.md#backlog-gauges)",
  },
  {
    flag: 'delete',
    group: SQS,
    kind: 'enum',
    values: ['on-success', 'never'],
    default: 'on-success',
    describe: 'on-success: delete what the function processed (batchItemFailures stay); never: the function deletes',
    doc: 'see [Delete modes](#delete-modes)',
  },
  {
    flag: 'durable',
    group: SQS,
    kind: 'enum',
    values: ['off', 'sync', 'async'],
    default: 'off',
    describe:
      'Durable function: one message per invocation under an execution name from its queue and message id; sync waits for the execution, async deletes the message once Lambda accepted the start',
    doc: 'a [durable function](targets.md#durable-functions): each message starts one named execution (its name derived from the queue and the message id, so a redelivery never starts a second); `sync` waits for the execution (15 minutes at most), `async` deletes the message once Lambda has accepted the start (executions of up to a year). Needs `--batch-size 1`, no `--batch-window` and `--delete on-success`',
  },
  {
    flag: 'tenant-id-from',
    group: SQS,
    kind: 'string',
    pattern: TENANT_SOURCE_PATTERN,
    mismatch: 'must be group or attribute:NAME (a message attribute name: 1-256 of A-Z a-z 0-9 _ - .)',
    describe:
      'The function is in tenant isolation mode: each invocation carries one tenant id, from the MessageGroupId (group) or a String message attribute (attribute:NAME)',
    doc: "for a function in tenant isolation mode: where each message's tenant id comes from; a batch is split into one invocation per tenant; see [Tenant-isolated functions](targets.md#tenant-isolated-functions)",
    defaultText: 'none (not tenant-isolated)',
    valuesText: '`group`, `attribute:NAME`',
  },
  {
    flag: 'retry-backoff',
    group: DELIVERY,
    kind: 'duration',
    minMs: 1_000,
    maxMs: 43_200_000,
    describe: 'Back off failed messages: first delay (e.g. 5s), doubled per receive',
    doc: 'first back-off delay after a failed invocation, doubled per receive; see [Retry back-off](#retry-back-off)',
    defaultText: 'off (visibility timeout)',
  },
  {
    flag: 'retry-backoff-max',
    group: DELIVERY,
    kind: 'duration',
    minMs: 1_000,
    maxMs: 43_200_000,
    default: 900_000,
    describe: 'Longest back-off delay',
  },
  {
    flag: 'retry-backoff-jitter',
    group: DELIVERY,
    kind: 'number',
    min: 0,
    max: 1,
    default: 0.5,
    describe: 'Share of each delay drawn at random',
    doc: 'share of each delay drawn at random (0 = the exact curve)',
  },
  {
    flag: 'failure-destination',
    group: DELIVERY,
    kind: 'string',
    describe:
      'Where a message that failed on its last allowed receive is sent, with its reason, before it is deleted: an SQS queue URL or an SNS topic ARN',
    doc: 'an SQS queue URL or SNS topic ARN that gets a record of each message failing on its last allowed receive (then deleted); see [Failure destination](#failure-destination)',
    defaultText: 'none (the DLQ)',
    valuesText: 'SQS queue URL, SNS topic ARN',
  },
  {
    flag: 'max-attempts',
    group: DELIVERY,
    kind: 'integer',
    min: 1,
    max: 1000,
    describe: 'Receives a message is allowed before it goes to --failure-destination, on queues without a redrive policy',
    doc: "receives allowed before `--failure-destination`, on a queue without a redrive policy (a queue's `maxReceiveCount` comes first)",
    defaultText: "the queue's maxReceiveCount",
  },
  {
    flag: 'queue-max-concurrency',
    group: DELIVERY,
    ownToRoute: true,
    perQueue: 'max-concurrency',
    kind: 'string',
    describe: 'Most loops per queue, "name=N,..."',
    doc: 'most loops per queue; see [Per-queue limits](#per-queue-limits)',
    defaultText: 'none',
    valuesText: NAME_EQUALS_N,
  },
  {
    flag: 'queue-min-concurrency',
    group: DELIVERY,
    ownToRoute: true,
    perQueue: 'min-concurrency',
    kind: 'string',
    describe: 'Loops reserved per queue while it has messages, "name=N,..."',
    doc: 'loops reserved per queue while it has messages',
    defaultText: 'none',
    valuesText: NAME_EQUALS_N,
  },
  {
    flag: 'queue-rate',
    group: DELIVERY,
    ownToRoute: true,
    perQueue: 'rate',
    kind: 'string',
    describe: 'Most invocations per second per queue, "name=N,..." (token bucket, burst 1)',
    doc: 'most invocations per second per queue (token bucket, burst 1)',
    defaultText: 'none',
    valuesText: NAME_EQUALS_N,
  },
  {
    flag: 'queue-options',
    group: DELIVERY,
    ownToRoute: true,
    kind: 'structured',
    describe: 'Per-queue limits, filters, retry back-off and failure destination (config file mapping, or JSON); see docs/delivery.md',
    doc: 'per-queue limits, [filters](#filters), [retry back-off](#retry-back-off) and [failure destination](#failure-destination)',
    defaultText: 'none',
    valuesText: 'a mapping in the `--config` file, or JSON',
  },
  {
    flag: 'adaptive-concurrency',
    group: DELIVERY,
    kind: 'boolean',
    default: false,
    describe: 'Fewer loops receive while Lambda throttles, more again while invocations succeed (replicas share a reserved concurrency)',
    doc: 'fewer loops receive while Lambda throttles, more again while invocations succeed; see [Adaptive concurrency](#adaptive-concurrency)',
  },
  {
    flag: 'min-concurrency',
    group: DELIVERY,
    kind: 'integer',
    min: 1,
    max: 10_000,
    default: 1,
    describe: 'Fewest loops --adaptive-concurrency lowers to',
    doc: 'fewest loops `--adaptive-concurrency` lowers to (at most `--concurrency`)',
  },
  {
    flag: 'concurrency-growth',
    group: DELIVERY,
    kind: 'string',
    pattern: /^(off|\d+(\.\d+)?x\/\d+(\.\d+)?(ms|s|m)?)$/,
    mismatch: 'must be off or FACTORx/WINDOW (e.g. 2x/5m)',
    default: 'off',
    describe:
      'Invocations in flight grow at most FACTOR times within WINDOW (Lambda Managed Instances: 2x/5m); with --adaptive-concurrency',
    doc: 'invocations in flight grow at most this factor within the window, starting from `--min-concurrency`; see [Managed Instances](targets.md#managed-instances)',
    valuesText: '`off`, `FACTORx/WINDOW`: factor above 1 up to 10, window 1s to 1h',
  },
] as const satisfies readonly OptionDef[];
