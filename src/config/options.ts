import { TENANT_SOURCE_PATTERN } from '../invoke/tenant-split.ts';

/**
 * Every option the daemon accepts, each defined once: its flag (also its config-file key; the WORKERLESS_* env var
 * is derived from it), kind, range or allowed values, typed default, --help text and docs row, and the nested
 * settings: which route options each route gives itself, and the keys of `queue-options`. Every stage of the
 * configuration reads these (see config.ts): with-defaults.ts reads values by flag through them, --help is
 * generated from them (cli.ts) and so are the option tables of docs/configuration.md (`npm run docs:options`;
 * test/unit/config/options-docs.test.ts fails when the page differs).
 */

interface Common {
  /** kebab-case flag name without dashes; also WORKERLESS_<UPPER_SNAKE>, the config-file key and the raw options' key. */
  readonly flag: string;
  /** --help heading the option is listed under; also picks the docs table. */
  readonly group: string;
  /** The --help line; the range or allowed values and the default are added from the definition. */
  readonly describe: string;
  /** The docs table's "meaning" cell (markdown), when it says more than `describe`. */
  readonly doc?: string;
  /** When the option is required, in words ("with queues"); shown in the docs table's default column. */
  readonly required?: string;
  /** The default in words, when there is no fixed `default` or it depends on other values. */
  readonly defaultText?: string;
  /** The docs table's "values" cell for a string option (markdown); numeric and enum options derive theirs. */
  readonly valuesText?: string;
  /** A credential: error messages show "***" instead of its value. */
  readonly secret?: boolean;
  /**
   * A route option (ROUTE_GROUPS) that names queues: each route of the `routes` list gives its own, and one given
   * outside `routes` is an error with them. The other route options given outside `routes` are every route's default.
   */
  readonly ownToRoute?: true;
  /** A `name=N,...` list that sets this `queue-options` key per queue, read with the key's range. */
  readonly perQueue?: string;
}

/** A whole number (`integer`) or any number (`number`) from `min` to `max`. */
interface NumberDef extends Common {
  readonly kind: 'integer' | 'number';
  readonly min: number;
  readonly max: number;
  readonly default?: number;
}

/** "500ms", "5s", "10m" or a bare number of seconds; read in milliseconds. */
interface DurationDef extends Common {
  readonly kind: 'duration';
  readonly minMs: number;
  readonly maxMs: number;
  /** In milliseconds. */
  readonly default?: number;
}

/** A switch: given alone (`--temporal-tls`) it means true; on/off, true/false, yes/no, 1/0. */
interface BooleanDef extends Common {
  readonly kind: 'boolean';
  readonly default?: boolean;
}

interface EnumDef extends Common {
  readonly kind: 'enum';
  readonly values: readonly string[];
  readonly default?: string;
}

/** Text; when `pattern` is set a value must match it, and `mismatch` is the error ("must be ..."). */
interface StringDef extends Common {
  readonly kind: 'string';
  readonly pattern?: RegExp;
  readonly mismatch?: string;
  readonly default?: string;
}

/** An http(s) URL. */
interface UrlDef extends Common {
  readonly kind: 'url';
}

/** A file that must be readable at start-up (a missing certificate is a start-up error, not a retry loop). */
interface PathDef extends Common {
  readonly kind: 'path';
}

/** A mapping or list in the config file, or JSON in the flag or env var. */
interface StructuredDef extends Common {
  readonly kind: 'structured';
}

export type OptionDef = NumberDef | DurationDef | BooleanDef | EnumDef | StringDef | UrlDef | PathDef | StructuredDef;

const SQS = 'SQS dispatch:';
const DELIVERY = 'Delivery control (off by default):';
const RUN = 'Runtime:';
const AWS = 'AWS:';
export const TEMPORAL_GROUP = 'Temporal spillover (optional):';
/** The groups whose options a route of the `routes` list takes (src/config/routes.ts); the rest are daemon-wide. */
export const ROUTE_GROUPS: readonly string[] = [SQS, DELIVERY];

/** name, name:alias/version, full ARN, or partial ARN (account:function:name), as Lambda's Invoke accepts. */
const FUNCTION_PATTERN =
  /^(arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:|\d{12}:function:)?[a-zA-Z0-9_-]{1,64}(:(\$LATEST|[a-zA-Z0-9_-]{1,128}))?$/;
/** CloudWatch namespaces allow these characters; "Workerless-" takes 11 of the 255. */
const NAME_PATTERN = /^[A-Za-z0-9._\-/#:]{1,244}$/;
/** An IPv4/IPv6 address or a host name: what server.listen() accepts. */
const HOST_PATTERN = /^([A-Za-z0-9.-]{1,253}|[0-9A-Fa-f:.]{2,45})$/;
/** Comma-separated host names, each optionally with a leading dot (a domain and every name under it), or `*`. */
const ALLOWED_HOSTS_PATTERN = /^\s*(\*|\.?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?)(\s*,\s*(\*|\.?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?))*\s*$/;
const NAME_EQUALS_N = '`name=N,...`';
/** A queue name's characters (CreateQueue: alphanumerics, hyphens and underscores, up to 80), for a name prefix. */
const QUEUE_PREFIX_PATTERN = /^[A-Za-z0-9_-]{1,80}$/;
/**
 * `key=value` under SQS's tag rules (Amazon SQS cost allocation tags): keys up to 128 and values up to 256
 * characters of Unicode letters, digits, white space and _ . : / = + - @, and no key starting with `aws:`. The
 * key ends at the first `=`.
 */
const QUEUE_TAG_PATTERN = /^(?!aws:)[\p{L}\p{N}\s_.:/+\-@]{1,128}=[\p{L}\p{N}\s_.:/=+\-@]{0,256}$/u;

export const CORE_OPTIONS = [
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
  {
    flag: 'name',
    group: RUN,
    kind: 'string',
    pattern: NAME_PATTERN,
    mismatch: 'must be 1-244 characters of A-Z a-z 0-9 . _ - / # :',
    default: 'default',
    describe: 'Name for metrics: CloudWatch namespace Workerless-<name>',
    doc: 'CloudWatch namespace `Workerless-<name>`',
    valuesText: '1-244 of `A-Za-z0-9._-/#:`',
  },
  { flag: 'metrics', group: RUN, kind: 'boolean', default: true, describe: 'Send CloudWatch metrics' },
  {
    flag: 'metrics-interval',
    group: RUN,
    kind: 'integer',
    min: 1,
    max: 3600,
    default: 60,
    describe: 'Seconds between PutMetricData calls',
  },
  {
    flag: 'metrics-per-queue',
    group: RUN,
    kind: 'enum',
    values: ['auto', 'on', 'off'],
    default: 'auto',
    describe:
      'Metrics per queue (the queue label and Queue dimension): auto = per queue up to 200 queues, then one aggregated series per function; on; off',
    doc: '`auto`: each queue its own series in `/metrics` and CloudWatch while the routes hold at most 200 queues, then one series per function under the queue `_aggregated`; `on`: always per queue; `off`: always aggregated. See [Many queues](operations.md#many-queues)',
  },
  {
    flag: 'shutdown-timeout',
    group: RUN,
    kind: 'integer',
    min: 1,
    max: 3600,
    default: 30,
    describe: 'Seconds to finish in-flight work after SIGTERM',
  },
  {
    flag: 'log-level',
    group: RUN,
    kind: 'enum',
    values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    default: 'info',
    describe: 'Log level',
  },
  {
    flag: 'replicas',
    group: RUN,
    kind: 'integer',
    min: 1,
    max: 10_000,
    default: 1,
    describe:
      "How many copies of this daemon run with this configuration (workerless check compares --concurrency x replicas with the function's reserved concurrency)",
    doc: "how many copies of this daemon run with this configuration: `workerless check` compares each function's `--concurrency` (all its routes) times this with the function's reserved concurrency; a run does not read it. See [Checking a deployment](#checking-a-deployment)",
  },
  {
    flag: 'http-port',
    group: RUN,
    kind: 'integer',
    min: 1,
    max: 65_535,
    describe: 'Serve /healthz, /readyz, /metrics (Prometheus) and a status page on this port',
    doc: 'serve `/healthz`, `/readyz`, `/metrics` and the status page (see [Operating workerless](#operating-workerless))',
    defaultText: 'off',
  },
  {
    flag: 'http-host',
    group: RUN,
    kind: 'string',
    pattern: HOST_PATTERN,
    mismatch: 'must be an IP address or host name such as 0.0.0.0 or ::',
    default: '127.0.0.1',
    describe: 'Address the HTTP server listens on (the image sets 0.0.0.0)',
    valuesText: 'IP address or host name',
  },
  {
    flag: 'http-allowed-hosts',
    group: RUN,
    kind: 'string',
    pattern: ALLOWED_HOSTS_PATTERN,
    mismatch: 'must be host names separated by commas (".example.com" for a domain and the names under it, "*" for any)',
    describe:
      'Host names the HTTP server answers besides IP addresses, localhost and --http-host; any other Host gets 421 (a guard against DNS rebinding)',
    doc: 'host names the HTTP server answers besides IP addresses, `localhost` and `--http-host`: a request with any other `Host` gets 421, which stops DNS rebinding. `.example.com` allows example.com and every name under it; `*` allows any name. Needed only when the endpoints are reached by name, e.g. through a Service DNS name or an ingress (see [HTTP endpoints and security](#http-endpoints-and-security))',
    defaultText: 'none',
    valuesText: 'host names, comma-separated',
  },
  {
    flag: 'region',
    group: AWS,
    kind: 'string',
    describe: 'AWS region (default: AWS_REGION, the shared config profile, AWS_DEFAULT_REGION, instance metadata)',
    defaultText: "the SDK's chain",
    doc: 'AWS region, checked as the SDK checks it (a valid host name label); without it, as the AWS SDK finds it: `AWS_REGION`, then `region` in the shared config profile (`AWS_PROFILE`, else `default`), then `AWS_DEFAULT_REGION`, then the EC2 instance metadata. See [AWS environments](#aws-environments)',
    valuesText: 'e.g. `us-east-1`',
  },
  {
    flag: 'endpoint-url',
    group: AWS,
    kind: 'url',
    describe: 'Endpoint for SQS, Lambda and CloudWatch (LocalStack); AWS_ENDPOINT_URL[_SQS|_LAMBDA|_CLOUDWATCH] also work',
    doc: "one endpoint for SQS, Lambda and CloudWatch (LocalStack); the SDK's `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_SQS`, `AWS_ENDPOINT_URL_LAMBDA`, `AWS_ENDPOINT_URL_CLOUDWATCH` and the shared config profile's `endpoint_url` settings also work (see [AWS environments](#aws-environments))",
    defaultText: 'AWS',
  },
  {
    flag: 'aws-client',
    group: AWS,
    kind: 'enum',
    values: ['lean', 'sdk'],
    default: 'lean',
    describe: 'Client for the per-message calls: lean (signed HTTP, less CPU and memory) or sdk (the AWS SDK clients)',
    doc: "`lean`: ReceiveMessage, DeleteMessageBatch, ChangeMessageVisibilityBatch and Invoke are signed with SigV4 (src/aws/sigv4.ts, held header for header to the SDK's signer; the SDK's credential chain) and sent over keep-alive HTTP without the SDK's middleware, for about half the CPU and memory (see [Performance](#performance)); `sdk`: the AWS SDK clients, as before. The same client resolves the queues, dry-runs the function at start-up and sends CloudWatch's PutMetricData; Temporal spillover uses the SDK's Lambda client, loaded only when it is on",
  },
  {
    flag: 'routes',
    group: RUN,
    kind: 'structured',
    describe:
      'Several functions in one daemon: a list of routes, each with its function, queues and pool options; see docs/delivery.md#routes',
    doc: 'several functions in one daemon, each with its own pool; see [Routes](#routes)',
    defaultText: 'one route, from the flags',
    valuesText: 'a list in the `--config` file, or JSON',
  },
  {
    flag: 'config',
    group: RUN,
    kind: 'path',
    describe: 'YAML or JSON file with any of these options (keys as flag names)',
    defaultText: 'none',
  },
] as const satisfies readonly OptionDef[];

/** Most loops, or invocations per second, one queue may be given: the pool's own ceiling (--concurrency's). */
const QUEUE_LIMIT_MAX = 10_000;

/**
 * The keys of one queue's mapping under `queue-options` (src/config/delivery-options.ts reads them), in the order
 * an error lists them. `max-concurrency`, `min-concurrency` and `rate` are also set by the `name=N,...` flags
 * (`perQueue` above), which read them with these ranges; the retry-backoff keys are read through the flags of the
 * same name (their definitions above). Every key left out is off; `filter-action`'s default is `delete`.
 */
export const QUEUE_SETTINGS = [
  { key: 'max-concurrency', field: 'maxConcurrency', kind: 'integer', min: 1, max: QUEUE_LIMIT_MAX },
  { key: 'min-concurrency', field: 'minConcurrency', kind: 'integer', min: 0, max: QUEUE_LIMIT_MAX },
  /** Invocations per second: any number above 0 (a token bucket). */
  { key: 'rate', field: 'ratePerSec', kind: 'rate', max: QUEUE_LIMIT_MAX },
  { key: 'rate-burst', field: 'burst', kind: 'integer', min: 1, max: QUEUE_LIMIT_MAX },
  /** A list of EventBridge-style patterns, or the trigger's FilterCriteria as is. */
  { key: 'filters', kind: 'filters' },
  { key: 'filter-action', kind: 'enum', values: ['delete', 'leave'], default: 'delete' },
  { key: 'retry-backoff', kind: 'flag' },
  { key: 'retry-backoff-max', kind: 'flag' },
  { key: 'retry-backoff-jitter', kind: 'flag' },
  /** An SQS queue URL or SNS topic ARN, as --failure-destination takes. */
  { key: 'failure-destination', kind: 'destination' },
  { key: 'max-attempts', field: 'maxAttempts', kind: 'integer', min: 1, max: 1000 },
] as const satisfies readonly QueueSettingDef[];

/** A numeric `queue-options` key; `field` is its name in the compiled QueueOptions. */
export type NumericQueueSettingDef =
  | { readonly key: string; readonly field: string; readonly kind: 'integer'; readonly min: number; readonly max: number }
  | { readonly key: string; readonly field: string; readonly kind: 'rate'; readonly max: number };

export type QueueSettingDef =
  | NumericQueueSettingDef
  | { readonly key: string; readonly kind: 'enum'; readonly values: readonly string[]; readonly default: string }
  | { readonly key: string; readonly kind: 'filters' }
  | { readonly key: string; readonly kind: 'destination' }
  /** Read through the flag of the same name. */
  | { readonly key: string; readonly kind: 'flag' };

type FilterActionDef = Extract<(typeof QUEUE_SETTINGS)[number], { key: 'filter-action' }>;
/** delete: a message no filter matches is deleted unseen (the trigger's semantics); leave: it stays on the queue. */
export type FilterAction = FilterActionDef['values'][number];
/** `filter-action` when a queue with filters leaves it out. */
export const FILTER_ACTION_DEFAULT: FilterAction = (queueSettingDef('filter-action') as FilterActionDef).default;

/** What a numeric `queue-options` key must be, as an error says it ("an integer from 1 to 10000"). */
export function queueSettingRange(def: NumericQueueSettingDef): string {
  return def.kind === 'rate'
    ? `a number of invocations per second above 0, at most ${def.max}`
    : `an integer from ${def.min} to ${def.max}`;
}

/** The definition of a `queue-options` key; undefined for a key that is not one. */
export function queueSettingDef(key: string): QueueSettingDef | undefined {
  return (QUEUE_SETTINGS as readonly QueueSettingDef[]).find((s) => s.key === key);
}

const DURATION_HELP = 'a duration such as 500ms, 5s or 10m; a bare number means seconds';

export const TEMPORAL_OPTIONS = [
  {
    flag: 'temporal-address',
    group: TEMPORAL_GROUP,
    kind: 'string',
    default: 'localhost:7233',
    describe: 'Temporal frontend host:port',
    valuesText: 'host:port',
  },
  { flag: 'temporal-namespace', group: TEMPORAL_GROUP, kind: 'string', default: 'default', describe: 'Temporal namespace' },
  {
    flag: 'temporal-task-queues',
    group: TEMPORAL_GROUP,
    kind: 'string',
    describe: 'Task queues to give spillover capacity to (comma-separated); setting it turns spillover on',
    doc: 'comma-separated; enables spillover: any other Temporal option without it is an error',
    required: 'with spillover',
  },
  {
    flag: 'temporal-function',
    group: TEMPORAL_GROUP,
    kind: 'string',
    describe: 'Lambda function (name, ARN or name:alias) that hosts the Temporal worker; required with spillover',
    doc: 'the worker function: name, ARN, `name:alias`',
    required: 'with spillover',
  },
  {
    flag: 'temporal-max-workers',
    group: TEMPORAL_GROUP,
    kind: 'integer',
    min: 1,
    max: 1000,
    default: 10,
    describe: 'Maximum workers alive at once per task queue',
  },
  {
    flag: 'temporal-max-workers-total',
    group: TEMPORAL_GROUP,
    kind: 'integer',
    min: 1,
    max: 100_000,
    describe: 'Maximum workers alive at once across all task queues together',
    doc: 'workers alive at once, all task queues together, shared evenly between queues that want more',
    defaultText: 'no total limit',
  },
  {
    flag: 'temporal-worker-lifetime',
    group: TEMPORAL_GROUP,
    kind: 'duration',
    minMs: 1_000,
    maxMs: 900_000,
    default: 600_000,
    describe: `How long one worker invocation runs: the function's timeout; ${DURATION_HELP}`,
    doc: 'set to the function timeout',
  },
  {
    flag: 'temporal-worker-start-timeout',
    group: TEMPORAL_GROUP,
    kind: 'duration',
    minMs: 1_000,
    maxMs: 900_000,
    default: 30_000,
    describe: `How long an invoked worker may take to start polling; one that has not by then counts as lost and is told not to start later; ${DURATION_HELP}`,
    doc: "an invoked worker not polling by then counts as lost; the payload's `startBy` tells it not to start later",
    defaultText: '30s (at most the lifetime)',
  },
  {
    flag: 'temporal-poll-interval',
    group: TEMPORAL_GROUP,
    kind: 'duration',
    minMs: 100,
    maxMs: 300_000,
    default: 5_000,
    describe: `How often to read each task queue's backlog; ${DURATION_HELP}`,
    doc: "how often to read each task queue's backlog; the server caches stats for 5 s",
  },
  {
    flag: 'temporal-backlog-threshold',
    group: TEMPORAL_GROUP,
    kind: 'integer',
    min: 0,
    max: 1_000_000,
    default: 0,
    describe: 'Spill over only when more tasks than this are waiting',
    doc: 'tasks tolerated before spilling over',
  },
  {
    flag: 'temporal-max-backlog-age',
    group: TEMPORAL_GROUP,
    kind: 'duration',
    minMs: 100,
    maxMs: 3_600_000,
    describe: `Spill over as soon as the oldest waiting task is older than this, even below the backlog threshold; ${DURATION_HELP}`,
    doc: 'spill over when the oldest task waited longer, whatever the count',
    defaultText: 'off',
  },
  {
    flag: 'temporal-cool-off',
    group: TEMPORAL_GROUP,
    kind: 'duration',
    minMs: 0,
    maxMs: 600_000,
    default: 10_000,
    describe: `Minimum time between scale-ups, and how long a backlog must last while other workers poll before spillover joins in; ${DURATION_HELP}`,
    doc: 'backlog must last this long; min time between scale-ups',
  },
  {
    flag: 'temporal-tasks-per-worker',
    group: TEMPORAL_GROUP,
    kind: 'integer',
    min: 1,
    max: 100_000,
    default: 10,
    describe: 'Backlog one worker is expected to absorb (desired workers = backlog / this)',
    doc: 'backlog one worker absorbs',
  },
  {
    flag: 'temporal-worker-set-max',
    group: TEMPORAL_GROUP,
    kind: 'integer',
    min: 1,
    max: 10_000,
    describe:
      'Size a set of long-lived workers per task queue, at most this many (the desired-workers gauge; an ECS service with --temporal-ecs-service)',
    doc: 'turns on worker-set sizing: the most long-lived workers per task queue; see [Worker sets](temporal.md#worker-sets)',
    defaultText: 'off',
  },
  {
    flag: 'temporal-worker-set-min',
    group: TEMPORAL_GROUP,
    kind: 'integer',
    min: 0,
    max: 10_000,
    default: 0,
    describe: 'Fewest long-lived workers per task queue (0: the set may scale to zero)',
    doc: 'fewest long-lived workers per task queue (0 lets the set scale to zero)',
  },
  {
    flag: 'temporal-worker-capacity',
    group: TEMPORAL_GROUP,
    kind: 'number',
    min: 0.001,
    max: 100_000,
    default: 1,
    describe: 'Tasks per second one long-lived worker dispatches, until measured while tasks wait',
    doc: 'tasks/s one long-lived worker dispatches, until measured',
  },
  {
    flag: 'temporal-worker-set-max-step',
    group: TEMPORAL_GROUP,
    kind: 'integer',
    min: 1,
    max: 10_000,
    default: 4,
    describe: 'Most long-lived workers added or removed at once',
    doc: 'most workers added or removed at once',
  },
  {
    flag: 'temporal-scale-up-cooldown',
    group: TEMPORAL_GROUP,
    kind: 'duration',
    minMs: 0,
    maxMs: 3_600_000,
    default: 30_000,
    describe: `Worker sets: at least this long between two scale-ups; ${DURATION_HELP}`,
    doc: 'worker sets: minimum time between two scale-ups',
  },
  {
    flag: 'temporal-scale-down-cooldown',
    group: TEMPORAL_GROUP,
    kind: 'duration',
    minMs: 0,
    maxMs: 86_400_000,
    default: 300_000,
    describe: `Worker sets: no scale-down until this long after the last change; ${DURATION_HELP}`,
    doc: 'worker sets: no scale-down until this long after the last change',
  },
  {
    flag: 'temporal-ecs-service',
    group: TEMPORAL_GROUP,
    kind: 'string',
    describe: 'Worker sets: keep this ECS service\'s desired count at the set\'s size, "CLUSTER/SERVICE" (one task queue only)',
    doc: 'worker sets: the ECS service (`CLUSTER/SERVICE`) whose desired count workerless sets (UpdateService); one task queue only',
    defaultText: 'the gauge only',
    valuesText: '`CLUSTER/SERVICE`',
  },
  {
    flag: 'temporal-spill-priority',
    group: TEMPORAL_GROUP,
    kind: 'integer',
    min: 1,
    max: 100,
    describe:
      "Spill over only for the backlog at priority keys 1 to this (1 is the highest, 3 the default; Temporal's keys run 1-5 unless the server raises them); read from stats_by_priority_key",
    doc: 'spill over only for tasks at priority 1 to this (1 highest, 3 the default); where the server reports no backlog per priority, the whole backlog counts (logged once)',
    defaultText: 'every priority',
  },
  {
    flag: 'temporal-fairness',
    group: TEMPORAL_GROUP,
    kind: 'boolean',
    default: false,
    describe:
      "The task queue uses fairness keys: decide urgency from the oldest task's age (--temporal-max-backlog-age, required) instead of tasks per worker",
    doc: "fairness keys in use: spill over on the oldest task's age (needs `--temporal-max-backlog-age`), not on the count; see [Temporal spillover](temporal.md#priority-fairness-and-rate-limits)",
  },
  {
    flag: 'temporal-versions',
    group: TEMPORAL_GROUP,
    kind: 'string',
    describe:
      'Worker Versioning: the function to invoke for each Build ID, "BUILD_ID=FUNCTION,..." (FUNCTION: name:alias, name:version or a qualified ARN); a list in the config file',
    doc: 'the alias, version or qualified ARN to invoke for each Build ID (a YAML list in the config file); versions not listed get no spillover',
    defaultText: '--temporal-function for every version',
    valuesText: '`BUILD_ID=FUNCTION,...`',
  },
  {
    flag: 'temporal-tls',
    group: TEMPORAL_GROUP,
    kind: 'boolean',
    describe: 'Connect with TLS',
    // The code turns TLS on for a server name too; the old help text left it out.
    defaultText: 'on when an API key, client certificate, CA or server name is given, else off',
  },
  {
    flag: 'temporal-tls-cert',
    group: TEMPORAL_GROUP,
    kind: 'path',
    describe: 'PEM client certificate for mTLS (path; needs --temporal-tls-key)',
    doc: 'PEM client certificate for mTLS (needs `--temporal-tls-key`)',
  },
  {
    flag: 'temporal-tls-key',
    group: TEMPORAL_GROUP,
    kind: 'path',
    describe: 'PEM client private key for mTLS (path; needs --temporal-tls-cert)',
    doc: 'PEM client private key for mTLS (needs `--temporal-tls-cert`)',
  },
  {
    flag: 'temporal-tls-ca',
    group: TEMPORAL_GROUP,
    kind: 'path',
    describe: 'PEM CA certificates to trust instead of the system roots (path)',
    doc: 'PEM CA certificates to trust instead of the system roots',
  },
  {
    flag: 'temporal-tls-server-name',
    group: TEMPORAL_GROUP,
    kind: 'string',
    describe: 'TLS server name to verify, when it differs from the address host',
  },
  {
    flag: 'temporal-api-key',
    group: TEMPORAL_GROUP,
    kind: 'string',
    secret: true,
    describe: 'Temporal Cloud API key (implies TLS); prefer the env var over the flag',
    doc: 'Temporal Cloud API key (implies TLS; use the env var)',
  },
] as const satisfies readonly OptionDef[];

/** Every option, in --help and docs table order. */
export const OPTIONS = [...CORE_OPTIONS, ...TEMPORAL_OPTIONS] as const satisfies readonly OptionDef[];

type Defined = (typeof OPTIONS)[number];
/** A flag the daemon accepts. */
export type Flag = Defined['flag'];
type DefOf<F extends Flag> = Extract<Defined, { flag: F }>;
type KindValue<D> = D extends { kind: 'integer' | 'number' | 'duration' }
  ? number
  : D extends { kind: 'boolean' }
    ? boolean
    : D extends { kind: 'enum'; values: readonly (infer V)[] }
      ? V
      : string;
/** The value read for a flag: undefined only when the option has no fixed default. */
export type OptionValue<F extends Flag> = DefOf<F> extends { default: unknown } ? KindValue<DefOf<F>> : KindValue<DefOf<F>> | undefined;

const BY_FLAG: ReadonlyMap<string, OptionDef> = new Map(OPTIONS.map((d) => [d.flag, d]));

/** The definition of a flag. */
export function optionDef(flag: Flag): OptionDef {
  return BY_FLAG.get(flag)!;
}

/** The option's fixed default (undefined when it has none). */
export function defaultOf<F extends Flag>(flag: F): OptionValue<F> {
  const d = optionDef(flag);
  return ('default' in d ? d.default : undefined) as OptionValue<F>;
}

export function envName(flag: string): string {
  return `WORKERLESS_${flag.replace(/-/g, '_').toUpperCase()}`;
}

export function camel(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** batchSize -> batch-size: the kebab-case form of a name, in which flags, env names and raw options are keyed. */
export function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/**
 * The flag a config-file or route key names: flags are kebab-case (`batch-size`); the file also takes the
 * camelCase spelling (`batchSize`), as it always has.
 */
export function flagOf(key: string): string {
  return kebab(camel(key));
}

/** 0, 500ms, 5s, 10m: the largest unit the value is a whole number of (no hours: the parser takes ms, s and m). */
export function formatMs(ms: number): string {
  if (ms === 0) return '0';
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** The default as --help and docs/configuration.md show it, or undefined when there is none to show. */
export function defaultText(d: OptionDef): string | undefined {
  if (d.defaultText !== undefined) return d.defaultText;
  if (!('default' in d) || d.default === undefined) return undefined;
  if (d.kind === 'duration') return formatMs(d.default);
  if (d.kind === 'boolean') return d.default ? 'on' : 'off';
  return String(d.default);
}

/** The allowed range or values in plain text ("1-10000", "1s-12h", "on-success, never", "on/off"). */
export function rangeText(d: OptionDef): string | undefined {
  switch (d.kind) {
    case 'integer':
    case 'number':
      return `${d.min}-${d.max}`;
    case 'duration':
      return `${formatMs(d.minMs)}-${formatMs(d.maxMs)}`;
    case 'enum':
      return d.values.join(', ');
    case 'boolean':
      return 'on/off';
    default:
      return undefined;
  }
}
