import type { Logger } from 'pino';
import type { AwsAdapters } from '../aws/adapters.ts';
import type { AwsEndpoints } from '../aws/endpoints.ts';
import type { ServiceEndpoint } from '../aws/endpoints.ts';
import { resolveQueue } from '../aws/resolve-queues.ts';
import { QueueDiscovery, type Discovered } from '../aws/queue-discovery.ts';
import { monotonicNow } from '../util/clock.ts';
import { discoveryFailure } from '../check/discovery-check.ts';
import { mustPass } from '../check/check-line.ts';
import { queueResolveVerdict } from '../check/queue-resolve.ts';
import { QUEUE_RESOLVES_AT_ONCE, type QueueLookup } from '../core/queue.ts';
import type { QueueSpec } from '../receive/queue-order.ts';
import { StartupError } from '../core/errors.ts';
import { type ResolvedQueue } from '../core/queue.ts';
import type { Config } from '../config/config.ts';
import { spilloverFunctions } from '../temporal/options.ts';
import type { RouteConfig } from '../dispatch/route.ts';
import type { FunctionInvoker } from '../core/function-invoker.ts';
import { checkFunction } from './function-check.ts';
import { dryRunParams } from '../check/dry-run.ts';
import { MISSING_LAST_RECEIVE, missingLastReceive, type DestinationSettings } from '../settle/failure-destination.ts';
import { mapBounded } from '../util/each-bounded.ts';

/** A route whose queues and function passed the start-up checks. */
export interface CheckedRoute {
  readonly route: RouteConfig;
  readonly queues: ResolvedQueue[];
  readonly invoker: FunctionInvoker;
  /** With --queues-prefix or --queues-tag: what the start-up found, and what re-reads it while the route runs. */
  readonly discovery?: { readonly finder: QueueDiscovery; readonly found: Discovered } | undefined;
}

/**
 * One deadline for all the start-up checks together. Each call has its own deadline and retries, but a start
 * must not wait without end on an endpoint that accepts connections and never answers, nor on a credential
 * chain that keeps retrying: the daemon would say "starting" for ever. A healthy start-up takes a few seconds
 * at most; a minute leaves room for slow credential providers and throttled calls.
 */
const STARTUP_TIMEOUT_MS = 60_000;

/** The start-up checks of a run; throws a StartupError with one line when one fails. */
export async function runStartupChecks(
  config: Config,
  endpoints: AwsEndpoints,
  aws: AwsAdapters,
  lambdaEndpoint: string,
  stop: AbortController,
  logger: Logger,
): Promise<CheckedRoute[]> {
  const startup = AbortSignal.any([stop.signal, AbortSignal.timeout(STARTUP_TIMEOUT_MS)]);
  // Each route's queues and function, checked before anything is received.
  const routes = await Promise.all(
    config.routes.map(async (route) => {
      const discovery = route.discovery && (await discoverQueues(route, aws, startup, logger));
      const queues =
        discovery?.found.queues.slice() ??
        (await resolveQueues(aws.sqs, route.queues.queues, route.visibilityTimeoutSec, startup, endpoints.sqs));
      const invoker = aws.invoker(route.functionName);
      await checkFunction(invoker, route.functionName, startup, 'function', lambdaEndpoint, dryRunParams(route));
      return { route, queues, invoker, discovery };
    }),
  );
  checkFailureDestinations(routes);
  warnZeroVisibility(
    routes.flatMap((r) => r.queues),
    logger,
  );
  // Spillover only invokes its functions once a backlog builds, and then logs refusals and retries: a typo in
  // --temporal-function or in a --temporal-versions target would go unnoticed until the day it is needed. So each
  // gets one validation invoke (a DryRun) now, and one that cannot be invoked stops the start (docs/temporal.md).
  for (const spillFn of config.temporal ? spilloverFunctions(config.temporal) : [])
    await checkFunction(await aws.sdkInvoker(spillFn), spillFn, startup, 'Temporal worker function', lambdaEndpoint);
  return routes;
}

/**
 * A route's queues found by prefix or tag, once. A failed ListQueues stops the start (as a queue that cannot be
 * resolved does); a selector that matches nothing is a warning, and the route waits for a queue to appear.
 */
async function discoverQueues(
  route: RouteConfig,
  aws: AwsAdapters,
  signal: AbortSignal,
  logger: Logger,
): Promise<{ finder: QueueDiscovery; found: Discovered }> {
  const finder = new QueueDiscovery(route.discovery!, route.queuesRefreshMs, {
    directory: aws.sqs,
    lookup: aws.sqs,
    logger: logger.child({ component: 'discovery', function: route.functionName }),
    functionName: route.functionName,
    visibilityTimeoutSec: route.visibilityTimeoutSec,
    now: monotonicNow,
  });
  let found: Discovered;
  try {
    found = await finder.refresh(signal);
  } catch (err) {
    if (signal.aborted) throw err;
    throw new StartupError(discoveryFailure(finder.described, err));
  }
  if (found.queues.length === 0) {
    logger.warn(
      { function: route.functionName, selector: finder.described, refreshMs: route.queuesRefreshMs },
      'no queue matches; the route receives nothing until one appears (re-read every --queues-refresh)',
    );
  }
  return { finder, found };
}

/**
 * The route's queues, resolved (aws/resolve-queues.ts) with its --visibility-timeout, QUEUE_RESOLVES_AT_ONCE at a time,
 * in order. A queue that cannot be is `workerless check`'s queue line that must pass: throws a StartupError with that
 * line (check/queue-resolve.ts), and no further queue is resolved.
 */
export async function resolveQueues(
  lookup: QueueLookup,
  specs: readonly QueueSpec[],
  visibilityTimeoutOverrideSec: number | undefined,
  signal?: AbortSignal,
  endpoint?: ServiceEndpoint,
): Promise<ResolvedQueue[]> {
  return mapBounded(specs, QUEUE_RESOLVES_AT_ONCE, (spec) =>
    resolveQueue(lookup, spec, visibilityTimeoutOverrideSec, signal, endpoint).catch((err: unknown) => {
      mustPass(queueResolveVerdict(spec.ref, err));
      throw err;
    }),
  );
}

/** What is wrong with one of a route's queues, in the words of the start-up check. */
export interface QueueProblem {
  readonly queue: string;
  readonly problem: string;
}

/**
 * A queue with a failure destination must say which receive is a message's last: its redrive policy's
 * maxReceiveCount, or max-attempts. Without either, failed messages would be retried for ever and never reach
 * the destination, which is surely not what was meant. The start-up refuses such a queue (checkFailureDestinations);
 * a queue found once the route runs is logged instead (checkFoundQueues).
 */
export function failureDestinationProblems(route: DestinationSettings, queues: readonly ResolvedQueue[]): QueueProblem[] {
  return queues.filter((q) => missingLastReceive(route, q)).map((q) => ({ queue: q.name, problem: MISSING_LAST_RECEIVE }));
}

/** Refuses to start, naming every queue that fails failureDestinationProblems. */
function checkFailureDestinations(routes: readonly CheckedRoute[]): void {
  const problems = routes.flatMap(({ route, queues }) => failureDestinationProblems(route, queues));
  if (problems.length > 0) {
    throw new StartupError(problems.map((p) => `queue "${p.queue}" ${p.problem}`).join('; '));
  }
}

/**
 * The start-up's queue checks for the queues a refresh found once the route runs (QueueTarget.joined,
 * src/aws/queue-discovery.ts): a warning per queue, never fatal, and the queue is received from all the same. Its
 * failed messages then stay on the queue (retried as without a destination) until it has a redrive policy, which
 * the --visibility-refresh re-read picks up.
 */
export function checkFoundQueues(route: DestinationSettings, queues: readonly ResolvedQueue[], logger: Logger): void {
  for (const { queue, problem } of failureDestinationProblems(route, queues)) {
    logger.warn({ queue, problem }, 'a found queue fails the start-up check; its failed messages stay on the queue until it is fixed');
  }
  warnZeroVisibility(queues, logger);
}

/** A queue whose own VisibilityTimeout is 0 (and no --visibility-timeout): a warning, at start-up and when found. */
function warnZeroVisibility(queues: readonly ResolvedQueue[], logger: Logger): void {
  for (const q of queues.filter((q) => q.visibilityTimeoutSec === 0)) {
    logger.warn(
      { queue: q.name },
      'queue has VisibilityTimeout 0: a message can be received again while it is processed; set --visibility-timeout',
    );
  }
}
