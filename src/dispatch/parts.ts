import type { ConcurrencyGate } from '../invoke/concurrency-gate.ts';
import { composeInvoke } from '../invoke/compose.ts';
import { FunctionGate } from '../invoke/function-gate.ts';
import { MAX_SYNC_PAYLOAD_BYTES } from '../invoke/sqs-event.ts';
import { DispatchMetrics } from '../core/telemetry/dispatch-metrics.ts';
import { noopTracer } from '../core/telemetry/tracer.ts';
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

/**
 * Builds a Dispatcher's parts. `drainOver` aborts drainRetryMs after the stop: waits between Invoke attempts
 * end there.
 */
export function assembleParts(options: DispatcherOptions, deps: DispatcherDeps, drainOver: AbortSignal): DispatcherParts {
  const random = deps.random ?? Math.random;
  const now = deps.now ?? monotonicNow;
  const log = deps.logger;
  const limits = options.queues.map((q) => options.queueOptions?.get(q.name));
  const metrics = new DispatchMetrics(deps.metrics, options.functionName, options.concurrency);
  const failureRoute = failureRoutes(options);
  const visibility = new QueueVisibility(options.queues, options.visibilityTimeoutSec, {
    lookup: deps.lookup,
    logger: log,
    redrive: failureRoute.any && deps.sendFailure !== undefined,
    // Read once the receiver exists: the refresh runs after assembly.
    quiet: (queue): boolean => receiver.quietQueue(queue),
    ...(options.backlogGauges === true ? { onBacklog: (queue, counts) => metrics.backlog(queue.name, counts) } : {}),
  });
  const gate = new FunctionGate({ logger: log, random, now });
  const receiver = new Receiver<VisibilityLease>(
    { ...options, limits, visibilityOf: (queue) => visibility.timeoutSec(queue), pollShare: options.pollShare },
    {
      source: deps.source,
      logger: log,
      random,
      now,
      paused: () => gate.paused,
      placeWanted: () => budget.counts.rejoinLine > 0,
      // What an idle poll returns is leased at once: it may wait in the ready set for a loop (the leases' deps,
      // built below, are read at the first hold).
      hold: holdWaiting({ leaseDeps: () => leaseDeps, metrics }),
    },
  );
  const tracer = deps.tracer ?? noopTracer;
  const events = new DispatchEvents({ log, metrics, tracer, now, functionName: options.functionName });
  const budget = concurrencyBudget(options, {
    now,
    onChange: (change) => events.limitChanged(change),
    onRejoinWait: () => receiver.yieldIdle(),
  });
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
  const leaseDeps: LeaseDeps = {
    source: deps.source,
    logger: log,
    now,
    random,
    onLapse: (queue, messages) => metrics.lapsed(queue.name, messages.length),
    clock: VisibilityLease.clock(now),
  };
  const batchDeps: BatchDeps = {
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
    failureRoute: (queue) => failureRoute.of(queue, visibility.maxReceiveCount(queue)),
    sendFailure: deps.sendFailure,
    failureReasons: new FailureReasons(),
    // The failure record's timestamps are wall-clock time; durations and deadlines stay on the monotonic clock.
    wallNow: Date.now,
  };
  return { now, visibility, receiver, gate, budget, capacity, events, activities, leaseDeps, batchDeps };
}
