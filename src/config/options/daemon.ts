import type { OptionDef } from './option-def.ts';

/**
 * The daemon-wide options: the Runtime and AWS groups, which the whole daemon takes once (metrics, shutdown,
 * logging, the HTTP server, the AWS client, the `routes` list and the config file), in --help and docs table
 * order; CORE_OPTIONS in options.ts lists them after route.ts's.
 */

const RUN = 'Runtime:';
const AWS = 'AWS:';

/** CloudWatch namespaces allow these characters; "Workerless-" takes 11 of the 255. */
const NAME_PATTERN = /^[A-Za-z0-9._\-/#:]{1,244}$/;
/** An IPv4/IPv6 address or a host name: what server.listen() accepts. */
const HOST_PATTERN = /^([A-Za-z0-9.-]{1,253}|[0-9A-Fa-f:.]{2,45})$/;
/** Comma-separated host names, each optionally with a leading dot (a domain and every name under it), or `*`. */
const ALLOWED_HOSTS_PATTERN = /^\s*(\*|\.?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?)(\s*,\s*(\*|\.?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?))*\s*$/;

export const DAEMON_OPTIONS = [
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
