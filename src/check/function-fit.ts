// What `workerless check` compares between a route and its function, as Lambda's SQS trigger compares them when
// an event source mapping is created, and what it reports of the function itself (a Managed Instances function
// and the version it runs). Pure: the facts come in (check-adapters.ts reads them with GetFunctionConfiguration
// and GetFunctionConcurrency), one finding per comparison goes out, and check.ts turns each into a line.

/** How a finding is reported: `ok`, `warn` (printed, exit code unchanged) or `fail` (exit 1). */
export type Verdict = 'ok' | 'warn' | 'fail';

export interface Finding {
  readonly verdict: Verdict;
  readonly detail: string;
}

/** What GetFunctionConfiguration says of one version of a function. */
export interface FunctionConfiguration {
  /** `$LATEST`, `$LATEST.PUBLISHED` or a version number: what this configuration is of. */
  readonly version: string;
  /** The function timeout, in seconds. */
  readonly timeoutSec: number;
  readonly codeSha256: string | undefined;
  /** Set for a Lambda Managed Instances function (its CapacityProviderConfig). */
  readonly managedInstances: ManagedInstances | undefined;
  /** TenancyConfig.TenantIsolationMode (PER_TENANT), when set. */
  readonly tenantIsolationMode: string | undefined;
  /** Set for a durable function (its DurableConfig): ExecutionTimeout in seconds, when the answer has it. */
  readonly durable: { readonly executionTimeoutSec: number | undefined } | undefined;
}

export interface ManagedInstances {
  readonly capacityProviderArn: string;
  /** PerExecutionEnvironmentMaxConcurrency, when set. */
  readonly perEnvironmentMaxConcurrency: number | undefined;
}

/**
 * AWS: "set the source queue's visibility timeout to at least six times the configuration timeout on your
 * function. The extra time allows Lambda to retry if your function is throttled while processing a previous
 * batch." ("Configuring a queue to use with Lambda",
 * https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html)
 */
export const VISIBILITY_ADVICE_FACTOR = 6;

/** The version an unqualified invoke of a Managed Instances function runs (lambda-managed-instances-version-publishing). */
export const LATEST_PUBLISHED = '$LATEST.PUBLISHED';

/**
 * The visibility timeout a queue's messages get (`fromFlag`: --visibility-timeout, else the queue's own) against
 * the timeout of the function that processes them.
 * - Below the function timeout fails. The trigger refuses it ("Your function's timeout must be less than or equal
 *   to the queue's visibility timeout", same page), and it breaks a promise of ours: after an Invoke whose outcome
 *   is unknown (a reset after the request was sent) workerless holds the messages one visibility timeout before
 *   invoking them again (src/invoke/invoke-retry.ts), which is only sure to outlast the first invocation when the
 *   visibility timeout covers the function timeout; and a message given up on returns to other consumers after it.
 * - Below 6x warns: the lease extends the visibility while an invocation runs, so a throttle no longer needs the
 *   extra time, but the margin is what is left when SQS errors keep the lease from extending
 *   (docs/failure-modes.md, Visibility and leases), and AWS advises it.
 */
export function visibilityFit(visibilitySec: number, fromFlag: boolean, functionName: string, timeoutSec: number): Finding {
  const visibility = `${visibilitySec} s${fromFlag ? ' (--visibility-timeout)' : ''}`;
  const advised = VISIBILITY_ADVICE_FACTOR * timeoutSec;
  const theirs = `function ${functionName}'s timeout of ${timeoutSec} s`;
  if (visibilitySec < timeoutSec) {
    return {
      verdict: 'fail',
      detail: `${visibility} is shorter than ${theirs}: a message could be received or invoked again while its invocation still runs (Lambda's SQS trigger refuses this); set it to at least ${advised} s, ${VISIBILITY_ADVICE_FACTOR}x, as AWS advises`,
    };
  }
  if (visibilitySec < advised) {
    return {
      verdict: 'warn',
      detail: `${visibility} covers ${theirs} but is less than the ${VISIBILITY_ADVICE_FACTOR}x (${advised} s) AWS advises for a queue that feeds Lambda ("Configuring a queue to use with Lambda"): less margin when SQS errors keep the lease from extending it`,
    };
  }
  return { verdict: 'ok', detail: `${visibility} is at least ${VISIBILITY_ADVICE_FACTOR}x ${theirs}` };
}

/** The routes that invoke one function, as the concurrency comparison needs them. */
export interface FunctionLoad {
  /** --concurrency of each route that invokes the function. */
  readonly concurrency: readonly number[];
  /** Every one of those routes has --adaptive-concurrency. */
  readonly adaptive: boolean;
  /** --fleet-concurrency: all the replicas of a fleet together, each route, run at most this many at once. */
  readonly fleetConcurrency?: number | undefined;
}

/**
 * --concurrency (summed over the routes that invoke the function) times --replicas against the function's
 * reserved concurrency, which caps its concurrent invocations in the whole account
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html). Over it warns: Lambda throttles
 * the rest, which workerless retries (no message fails for it), but the loops beyond the cap only wait. A
 * reserved concurrency of 0 fails: Lambda throttles every invocation. In a fleet with --fleet-concurrency, each route
 * of the replicas together runs at most that many (docs/fleet.md), whatever --replicas says.
 */
export function concurrencyFit(load: FunctionLoad, replicas: number, reserved: number | undefined): Finding {
  const fleet = load.fleetConcurrency;
  const total = load.concurrency.reduce((a, c) => a + Math.min(c * replicas, fleet ?? Infinity), 0);
  const loops =
    load.concurrency.length === 1
      ? `--concurrency ${load.concurrency[0]}`
      : `--concurrency ${load.concurrency.join(' + ')} (${load.concurrency.length} routes)`;
  const capped = fleet !== undefined ? `, at most --fleet-concurrency ${fleet}${load.concurrency.length > 1 ? ' a route' : ''}` : '';
  const wanted = `${loops} x ${replicas} ${replicas === 1 ? 'replica' : 'replicas'}${capped} = ${total}`;
  if (reserved === undefined) {
    return { verdict: 'ok', detail: `${wanted}; no reserved concurrency, so it shares the account's unreserved concurrency` };
  }
  if (reserved === 0) {
    return { verdict: 'fail', detail: `its reserved concurrency is 0: Lambda throttles every invocation of it` };
  }
  if (total > reserved) {
    const hint = load.adaptive
      ? '--adaptive-concurrency backs off while it throttles'
      : fleet !== undefined
        ? 'lower --fleet-concurrency, or set --adaptive-concurrency'
        : 'lower --concurrency or --replicas, or set --adaptive-concurrency';
    return {
      verdict: 'warn',
      detail: `${wanted} exceeds its reserved concurrency of ${reserved}: Lambda throttles invocations beyond ${reserved} (429, retried); ${hint}`,
    };
  }
  return { verdict: 'ok', detail: `${wanted}, within its reserved concurrency of ${reserved}` };
}

/** `$LATEST.PUBLISHED` could not be read for another reason than its absence (the reason, as a line says it). */
export interface Unreadable {
  readonly unreadable: string;
}

/**
 * What the function is and which version an invocation runs: `configured` is GetFunctionConfiguration of the
 * function as configured (an unqualified name reads `$LATEST`); `published` that of `$LATEST.PUBLISHED`, for an
 * unqualified Managed Instances function (undefined: it does not exist). An unqualified invoke of a Managed
 * Instances function runs `$LATEST.PUBLISHED`, not `$LATEST`: its absence fails, and code in `$LATEST` that was
 * not published warns, since it is not what runs.
 */
export function describeFunction(
  functionName: string,
  qualifier: string | undefined,
  configured: FunctionConfiguration,
  published?: FunctionConfiguration | Unreadable,
): Finding {
  const kind = [
    ...(configured.managedInstances ? [managedText(configured.managedInstances)] : []),
    ...(configured.tenantIsolationMode !== undefined ? [`tenant isolation ${configured.tenantIsolationMode}`] : []),
    ...(configured.durable ? [durableText(configured.durable.executionTimeoutSec)] : []),
  ];
  const prefix = kind.length > 0 ? `${kind.join(', ')}; ` : '';
  if (configured.managedInstances && qualifier === undefined) {
    const publish = `aws lambda publish-version --function-name ${functionName} --publish-to LATEST_PUBLISHED`;
    if (published === undefined) {
      return {
        verdict: 'fail',
        detail: `${prefix}an unqualified invoke runs ${LATEST_PUBLISHED}, which does not exist (publish it: ${publish})`,
      };
    }
    if ('unreadable' in published) {
      return {
        verdict: 'warn',
        detail: `${prefix}an unqualified invoke runs ${LATEST_PUBLISHED}, which could not be read (${published.unreadable}): its timeout is not compared`,
      };
    }
    const runs = `an unqualified invoke runs ${LATEST_PUBLISHED} (timeout ${published.timeoutSec} s)`;
    if (configured.codeSha256 !== undefined && published.codeSha256 !== configured.codeSha256) {
      return { verdict: 'warn', detail: `${prefix}${runs}, whose code differs from $LATEST's: $LATEST is not what runs (${publish})` };
    }
    return { verdict: 'ok', detail: `${prefix}${runs}` };
  }
  return { verdict: 'ok', detail: `${prefix}timeout ${configured.timeoutSec} s, runs ${configured.version}` };
}

function managedText(m: ManagedInstances): string {
  const provider = m.capacityProviderArn.slice(m.capacityProviderArn.lastIndexOf(':') + 1);
  const perEnvironment =
    m.perEnvironmentMaxConcurrency !== undefined ? `, up to ${m.perEnvironmentMaxConcurrency} invocations per execution environment` : '';
  return `Lambda Managed Instances (capacity provider ${provider}${perEnvironment})`;
}

function durableText(executionTimeoutSec: number | undefined): string {
  return executionTimeoutSec !== undefined ? `durable (execution timeout ${executionTimeoutSec} s)` : 'durable';
}
