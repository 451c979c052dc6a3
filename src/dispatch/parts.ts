import type { Logger } from 'pino';
import type { ConcurrencyGate } from '../invoke/concurrency-gate.ts';
import { composeInvoke } from '../invoke/compose.ts';
import { FunctionGate } from '../invoke/function-gate.ts';
import { MAX_SYNC_PAYLOAD_BYTES } from '../invoke/sqs-event.ts';
import { DispatchMetrics } from '../core/telemetry/dispatch-metrics.ts';
import { noopTracer, type DispatchTracer } from '../core/telemetry/tracer.ts';
import type { Random } from '../receive/queue-order.ts';
import { Receiver } from '../receive/receiver.ts';
import { FailureReasons } from '../settle/failure-reasons.ts';
import { DeleteBatcher } from '../settle/delete-batcher.ts';
import { QueueVisibility } from './queue-visibility.ts';
import { VisibilityLease, type LeaseDeps } from '../settle/visibility-lease.ts';
import { holdWaiting } from '../settle/waiting-batch.ts';
import { monotonicNow } from '../util/clock.ts';
import type { BatchDeps } from './batch.ts';
import { DispatchEvents } from './dispatch-events.ts';
import { failureRoutes } from './failure-routes.ts';
import type { DispatcherDeps, DispatcherOptions } from './dispatcher-options.ts';
import { LoopActivities, receiveDeadlineMs } from './loop-activity.ts';
import { LoopCapacity } from './loop-capacity.ts';
import { concurrencyBudget } from './budget.ts';

/** What one Dispatcher's loops share: each step's part, built once from its route's options and its ports. */
export interface DispatcherParts {
  readonly now: () => number;
  /** The visibility timeout each receive states, and its lease assumes. */
  readonly visibility: QueueVisibility;
  readonly receiver: Receiver<VisibilityLease>;
  /** Pauses every loop while the function cannot run. */
  readonly gate: FunctionGate;
  /** The concurrency budget: the lowest of its ceilings (src/dispatch/budget.ts). */
  readonly budget: ConcurrencyGate;
  /** Each loop's place in the budget and queue slot, given up while its batch waits (src/dispatch/loop-capacity.ts). */
  readonly capacity: LoopCapacity;
  /** Where the loop's logs, metrics and spans go (src/dispatch/dispatch-events.ts). */
  readonly events: DispatchEvents;
  /** Each loop's current activity, for liveness. */
  readonly activities: LoopActivities;
  /** One for every lease. */
  readonly leaseDeps: LeaseDeps;
  /** What each batch's sequence uses (src/dispatch/batch.ts). */
  readonly batchDeps: BatchDeps;
}

/** What every part of a route is built from: its options and ports, and the clocks, logger and metrics all share. */
interface Assembly {
  readonly options: DispatcherOptions;
  readonly deps: DispatcherDeps;
  readonly now: () => number;
  readonly random: Random;
  readonly log: Logger;
  readonly metrics: DispatchMetrics;
  readonly tracer: DispatchTracer;
  readonly failureRoute: ReturnType<typeof failureRoutes>;
}

/** The receive side's parts. */
type ReceiveSide = Pick<DispatcherParts, 'visibility' | 'gate' | 'receiver'>;

/** The invoke side's parts, and the Invoke composed from them. */
type InvokeSide = Pick<DispatcherParts, 'events' | 'budget' | 'activities' | 'capacity'> & Pick<BatchDeps, 'invoke'>;

/** What the receiver reads of the parts built after it: read lazily, never while assembling. */
interface BuiltLater {
  readonly budget: () => ConcurrencyGate;
  readonly leaseDeps: () => LeaseDeps;
}

/** The receive side: the timeout each receive states, the function's pause, and the receiver. */
function receiveSide(a: Assembly, later: BuiltLater): ReceiveSide {
  const { options, deps, now, random, log, metrics } = a;
  const visibility = new QueueVisibility(options.queues, options.visibilityTimeoutSec, {
    lookup: deps.lookup,
    logger: log,
    redrive: a.failureRoute.any && deps.sendFailure !== undefined,
    // Read once the receiver exists: the refresh runs after assembly.
    quiet: (queue): boolean => receiver.quietQueue(queue),
    ...(options.backlogGauges === true ? { onBacklog: (queue, counts) => metrics.backlog(queue.name, counts) } : {}),
  });
  const gate = new FunctionGate({ logger: log, random, now });
  const limits = options.queues.map((q) => options.queueOptions?.get(q.name));
  const receiver = new Receiver<VisibilityLease>(
    { ...options, limits, visibilityOf: (queue) => visibility.timeoutSec(queue), pollShare: options.pollShare },
    {
      source: deps.source,
      logger: log,
      random,
      now,
      paused: () => gate.paused,
      // The budget, built on the invoke side below, is read at the receiver's passes.
      placeWanted: () => later.budget().counts.rejoinLine > 0,
      // What an idle poll returns is leased at once: it may wait in the ready set for a loop (the leases' deps,
      // built on the settle side below, are read at the first hold).
      hold: holdWaiting({ leaseDeps: later.leaseDeps, metrics }),
      // In a fleet, the queues another replica polls are neither read nor polled here.
      serves: deps.fleet ? (queue) => deps.fleet!.serves(queue) : undefined,
    },
  );
  return { visibility, gate, receiver };
}

/** The invoke side: where the loop's events go, the budget, each loop's activity and capacity, the composed Invoke. */
function invokeSide(a: Assembly, { gate, receiver }: ReceiveSide, drainOver: AbortSignal): InvokeSide {
  const { options, deps, now, random, log, metrics, tracer } = a;
  const events = new DispatchEvents({ log, metrics, tracer, now, functionName: options.functionName });
  const fleetShare = deps.fleet?.share;
  const budget = concurrencyBudget(
    options,
    {
      now,
      onChange: (change) => events.limitChanged(change),
      onRejoinWait: () => receiver.yieldIdle(),
    },
    fleetShare ? () => fleetShare(options.concurrency) : undefined,
  );
  const activities = new LoopActivities(options.concurrency, now);
  const capacity = new LoopCapacity(options.concurrency, budget, receiver);
  const invoke = composeInvoke({
    invoker: deps.invoker,
    tracer,
    budget,
    logger: log,
    functionName: options.functionName,
    now,
    random,
    gate,
    capacity,
    drainOver,
    events: {
      activity: (loop, activity, deadlineMs) => activities.mark(loop, activity, deadlineMs),
      throttled: (queue, reason) => metrics.throttled(queue, reason),
      paused: (paused) => metrics.paused(paused),
    },
  });
  return { events, budget, activities, capacity, invoke };
}

/** The settle side, for every lease: its calls, its clock, and the count of what lapsed. */
function leaseDepsOf({ deps, now, random, log, metrics }: Assembly): LeaseDeps {
  return {
    source: deps.source,
    logger: log,
    now,
    random,
    onLapse: (queue, messages) => metrics.lapsed(queue.name, messages.length),
    clock: VisibilityLease.clock(now),
  };
}

/** The settle side, for every batch: its window, the parts it goes through, its deletes and its failure records. */
function batchDepsOf(a: Assembly, { visibility, receiver }: ReceiveSide, invoking: InvokeSide): BatchDeps {
  const { options, deps, now, random, log, metrics, tracer } = a;
  const { activities, capacity, events, invoke } = invoking;
  return {
    window: {
      batchSize: options.batchSize,
      windowMs: options.batchWindowMs,
      maxBytes: MAX_SYNC_PAYLOAD_BYTES,
      // ReceiveMessage waits 20 s at most.
      maxWaitSec: Math.max(1, Math.min(20, options.pollForSec)),
    },
    receiver,
    source: deps.source,
    deleter: new DeleteBatcher(deps.source, log, undefined, now),
    log,
    metrics,
    tracer,
    now,
    random,
    functionName: options.functionName,
    deleteMode: options.deleteMode,
    durable: options.durable ?? 'off',
    queueOptions: options.queueOptions,
    retryBackoff: options.retryBackoff,
    tenantIdFrom: options.tenantIdFrom,
    receiveDeadlineMs: receiveDeadlineMs(options),
    activities,
    capacity,
    events,
    traceReceived: (queue, messages, startedAt) => events.received(queue, messages, startedAt),
    invoke,
    failureRoute: (queue) => a.failureRoute.of(queue, visibility.maxReceiveCount(queue)),
    sendFailure: deps.sendFailure,
    failureReasons: new FailureReasons(),
    // The failure record's timestamps are wall-clock time; durations and deadlines stay on the monotonic clock.
    wallNow: Date.now,
  };
}

/**
 * Builds a Dispatcher's parts, side by side in a message's order. `drainOver` aborts drainRetryMs after the stop:
 * waits between Invoke attempts end there.
 */
export function assembleParts(options: DispatcherOptions, deps: DispatcherDeps, drainOver: AbortSignal): DispatcherParts {
  const now = deps.now ?? monotonicNow;
  const a: Assembly = {
    options,
    deps,
    now,
    random: deps.random ?? Math.random,
    log: deps.logger,
    metrics: new DispatchMetrics(deps.metrics, options.functionName, options.concurrency),
    tracer: deps.tracer ?? noopTracer,
    failureRoute: failureRoutes(options),
  };
  // The receiver reads the budget and the leases' deps, built after it, only once assembly is over.
  const receive = receiveSide(a, { budget: () => invoking.budget, leaseDeps: () => leaseDeps });
  const invoking = invokeSide(a, receive, drainOver);
  const leaseDeps = leaseDepsOf(a);
  const batchDeps = batchDepsOf(a, receive, invoking);
  const { visibility, receiver, gate } = receive;
  const { budget, capacity, events, activities } = invoking;
  return { now, visibility, receiver, gate, budget, capacity, events, activities, leaseDeps, batchDeps };
}
