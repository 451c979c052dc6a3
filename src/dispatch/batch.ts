import type { Message } from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import type { MessageSource, ResolvedQueue } from '../core/queue.ts';
import type { DeleteMode } from '../settle/settle-chunk.ts';
import type { QueueOptions } from './queue-options.ts';
import { durableInvocations, type DurableMode } from '../invoke/durable-event.ts';
import type { InvokeParams } from '../core/function-invoker.ts';
import { buildSqsEvents, type EventSourceQueue } from '../invoke/sqs-event.ts';
import { splitByTenant, type TenantSource } from '../invoke/tenant-split.ts';
import type { DispatchMetrics } from '../core/telemetry/dispatch-metrics.ts';
import type { DispatchTracer } from '../core/telemetry/tracer.ts';
import { filterBatch } from './batch-filter.ts';
import { gathers, type BatchWindow } from '../receive/batch-window.ts';
import { gather } from './gather.ts';
import type { Random } from '../receive/queue-order.ts';
import type { Receiver } from '../receive/receiver.ts';
import { stopsAfterChunk } from '../settle/fifo-rule.ts';
import { ids } from '../settle/receipts.ts';
import { releaseUnsettled } from '../settle/release.ts';
import { retryBackoffFor, type RetryBackoff } from '../settle/retry-backoff.ts';
import { setRetryBackoff } from '../settle/set-retry-backoff.ts';
import { settleChunk } from '../settle/settle-chunk.ts';
import { deliverFailures, type DestinationSender, type FailureRoute } from '../settle/deliver-failures.ts';
import type { FailureReasons } from '../settle/failure-reasons.ts';
import { settleExhausted } from '../settle/settle-exhausted.ts';
import type { DeleteBatcher } from '../settle/delete-batcher.ts';
import type { VisibilityLease } from '../settle/visibility-lease.ts';
import type { InvokeOutcome, RetryContext } from '../invoke/retry.ts';
import type { LoopCapacity } from './loop-capacity.ts';
import type { DispatchEvents } from './dispatch-events.ts';
import type { LoopActivities } from './loop-activity.ts';
import { messageIdOf } from '../core/message.ts';

export interface Batch {
  /** The worker loop holding it. */
  readonly loop: number;
  readonly queue: ResolvedQueue;
  readonly messages: Message[];
  readonly receivedAt: number;
  readonly lease: VisibilityLease;
}

/** How one chunk ended: settled (with the ids that stay on the queue), or released for shutdown. */
type ChunkEnd = { kind: 'settled'; keptIds: string[] } | { kind: 'released' };

/** One invocation of a batch: its payload, its messages, and what the Invoke carries besides. */
interface Chunk {
  readonly payload: string;
  readonly messages: Message[];
  readonly params?: InvokeParams;
  /** Set when the payload is over the invocation type's limit: it is not sent. */
  readonly oversized?: { readonly bytes: number; readonly limitBytes: number };
}

/** What a batch's sequence uses, built once by its Dispatcher. */
export interface BatchDeps {
  readonly window: BatchWindow;
  readonly receiver: Receiver<VisibilityLease>;
  readonly source: MessageSource;
  readonly deleter: DeleteBatcher;
  readonly log: Logger;
  readonly metrics: DispatchMetrics;
  readonly tracer: DispatchTracer;
  readonly now: () => number;
  readonly random: Random;
  readonly functionName: string;
  readonly deleteMode: DeleteMode;
  /** --durable: off, or one named execution per message (src/invoke/durable-event.ts). */
  readonly durable: DurableMode;
  readonly queueOptions: ReadonlyMap<string, QueueOptions> | undefined;
  readonly retryBackoff: RetryBackoff | undefined;
  /** --tenant-id-from; undefined: the function is not tenant-isolated, and a batch is invoked as one. */
  readonly tenantIdFrom: TenantSource | undefined;
  /** The longest one receive pass can take. */
  readonly receiveDeadlineMs: number;
  readonly activities: LoopActivities;
  /** Where the sequence's own logs go (its steps log their own). */
  readonly events: DispatchEvents;
  readonly capacity: LoopCapacity;
  readonly traceReceived: (queue: ResolvedQueue, messages: readonly Message[], startedAt: number) => void;
  /** Invokes one chunk, with its retries, permit, lease check, span and deadline (src/invoke/compose.ts). */
  readonly invoke: (payload: string, ctx: RetryContext) => Promise<InvokeOutcome>;
  /** The queue's failure destination and allowed receives now; undefined: none. */
  readonly failureRoute: (queue: ResolvedQueue) => FailureRoute | undefined;
  /** Sends failure records; undefined: no failure destination is used. */
  readonly sendFailure: DestinationSender | undefined;
  /** Why the messages whose record was refused failed, for their next record. */
  readonly failureReasons?: FailureReasons | undefined;
  /** Wall-clock time, for the failure records. */
  readonly wallNow: () => number;
}

/**
 * One received batch, from gathering to settling: gather (the batching window), filter, split by tenant (for a
 * tenant-isolated function), then each chunk of the payload limit is invoked and settled, in order. Never throws:
 * failures are logged and the messages kept (they return after their visibility timeout). The lease ends here;
 * the Dispatcher does the rest.
 */
export async function processBatch(batch: Batch, halt: AbortSignal, deps: BatchDeps): Promise<void> {
  const { queue } = batch;
  const mark = (activity: string, deadlineMs: number) => deps.activities.mark(batch.loop, activity, deadlineMs);
  // The messages of the step under way, for the log should it fail: their ids are listed only then (this runs
  // per batch). Gathering adds to batch.messages itself.
  let current: readonly Message[] = batch.messages;
  try {
    if (gathers(deps.window, queue.fifo)) await gather(batch, halt, { ...deps, mark });
    const { log, metrics, tracer, deleter } = deps;
    const options = deps.queueOptions?.get(queue.name);
    // A queue without a filter has no filter step (an async call per batch); named fields, not a spread of every
    // dependency.
    const filtered = options?.filter ? await filterBatch(batch, { options, log, metrics, tracer, deleter, mark }) : batch.messages;
    const messages = await leaveExhausted(batch, filtered, deps, mark);
    current = messages;
    // Without tenants, one run and no step of its own (it runs per batch).
    const runs = deps.tenantIdFrom === undefined ? [{ messages }] : await splitTenants(batch, messages, deps.tenantIdFrom, deps);
    // The messages in the order they are invoked (the batch's own, unless split by tenant).
    const invoked = runs.length === 1 ? runs[0]!.messages : runs.flatMap((run) => run.messages);
    let invokedIds: string[] | undefined;
    let offset = 0;
    // Only the payloads are kept: the event objects they were serialised from (a copy of every message's
    // fields) would otherwise stay reachable until the last invocation of the batch is over.
    const chunks = runs.flatMap((run) => (run.messages.length > 0 ? chunksOf(run.messages, queue, deps.durable, run.tenantId) : []));
    for (const chunk of chunks) {
      // Later chunks wait their turn under the same lease (and are released with this one on shutdown).
      const unsettled = offset === 0 ? invoked : invoked.slice(offset);
      offset += chunk.messages.length;
      const end = chunk.oversized
        ? await leaveOversized(batch, chunk.messages, chunk.oversized, deps)
        : await invokeAndSettle(batch, chunk, unsettled, halt, deps, mark);
      if (end.kind === 'released') break;
      // Nothing kept, nothing to stop behind: the Set and the ids are made only when something was.
      if (end.keptIds.length === 0) continue;
      invokedIds ??= ids(invoked);
      if (stopsAfterChunk(invokedIds, new Set(end.keptIds), queue.fifo, offset, invoked.length)) {
        deps.events.fifoStopped(queue, invokedIds.slice(offset));
        break;
      }
    }
  } catch (err) {
    deps.events.batchFailed(queue, ids(current), err);
  } finally {
    await batch.lease.end();
  }
}

/**
 * The messages to invoke: on a queue with a failure destination, those received more often than allowed are not
 * invoked again but sent there (src/settle/settle-exhausted.ts).
 */
async function leaveExhausted(
  batch: Batch,
  messages: Message[],
  deps: BatchDeps,
  mark: (activity: string, deadlineMs: number) => void,
): Promise<Message[]> {
  const route = deps.sendFailure && deps.failureRoute(batch.queue);
  if (!route || !deps.sendFailure) return messages;
  const send = deps.sendFailure;
  const policy = retryBackoffFor(deps.queueOptions?.get(batch.queue.name)?.retryBackoff, deps.retryBackoff);
  return settleExhausted(batch, messages, route, {
    ...deps,
    send,
    mark,
    backOff: (left) => setRetryBackoff(batch, left, { ...deps, policy, mark }),
  });
}

/**
 * The invocations of a batch (or of one tenant's run of it): the trigger's events, split at 6 MB; on a durable
 * route, one per message under its execution name, each held to its invocation type's limit (1 MB for an async
 * start). Each carries the run's tenant, if any.
 */
function chunksOf(messages: Message[], queue: EventSourceQueue, durable: DurableMode, tenantId: string | undefined): Chunk[] {
  const tenant = tenantId !== undefined ? { tenantId } : {};
  if (durable === 'off') {
    return buildSqsEvents(messages, queue).map((c) =>
      tenantId !== undefined ? { payload: c.payload, messages: c.messages, params: tenant } : { payload: c.payload, messages: c.messages },
    );
  }
  return durableInvocations(messages, queue, durable).map((i) => ({
    payload: i.payload,
    messages: [i.message],
    params: { ...i.params, ...tenant },
    ...(i.bytes > i.limitBytes ? { oversized: { bytes: i.bytes, limitBytes: i.limitBytes } } : {}),
  }));
}

/**
 * A message whose event Lambda would refuse as too large is not sent: counted, logged with its id and size, and
 * left to the queue (its lease ends, so it returns after its visibility timeout, and its redrive policy moves it to
 * the dead-letter queue after maxReceiveCount receives), never retried at once.
 */
async function leaveOversized(
  batch: Batch,
  messages: Message[],
  size: NonNullable<Chunk['oversized']>,
  deps: BatchDeps,
): Promise<ChunkEnd> {
  for (const m of messages) deps.events.oversized(batch.queue, messageIdOf(m), size.bytes, size.limitBytes);
  await batch.lease.stop(messages);
  return { kind: 'settled', keptIds: ids(messages) };
}

/**
 * The batch as runs of one tenant each, for a tenant-isolated function (src/invoke/tenant-split.ts); else one run
 * of the whole batch, without a tenant. Messages without a tenant id (and on FIFO the later messages of their
 * groups) leave the lease here: counted, logged, and back on the queue after their visibility timeout.
 */
async function splitTenants(
  batch: Batch,
  messages: Message[],
  from: TenantSource,
  deps: BatchDeps,
): Promise<{ tenantId?: string; messages: Message[] }[]> {
  const split = splitByTenant(messages, from, batch.queue.fifo);
  const left = [...split.untenanted.map((u) => u.message), ...split.heldBehind];
  if (left.length > 0) {
    deps.events.untenanted(batch.queue, split, from);
    await batch.lease.stop(left);
  }
  return split.runs;
}

/**
 * Invokes one chunk (with its tenant, if any) and settles it. `unsettled` is this chunk and every later one of
 * the batch: the messages to release on shutdown.
 */
async function invokeAndSettle(
  batch: Batch,
  chunk: Chunk,
  unsettled: Message[],
  halt: AbortSignal,
  deps: BatchDeps,
  mark: (activity: string, deadlineMs: number) => void,
): Promise<ChunkEnd> {
  const started = deps.now();
  const { loop, queue, lease } = batch;
  const { messages, payload, params } = chunk;
  // `unsettledIds`: the chunk and every later one, what a stop releases.
  const outcome = await deps.invoke(payload, { loop, queue, lease, messages, unsettledIds: ids(unsettled), halt, params });
  // Later chunks of a batch over the payload limit (rare) invoke without a place in the budget rather than wait behind it.
  deps.capacity.free(batch.loop);
  if (outcome.kind === 'released') {
    await releaseUnsettled(batch, messages, unsettled, outcome.atOnce, { ...deps, mark });
    return { kind: 'released' };
  }
  const policy = retryBackoffFor(deps.queueOptions?.get(batch.queue.name)?.retryBackoff, deps.retryBackoff);
  const route = deps.failureRoute(batch.queue);
  const send = deps.sendFailure;
  const { deleteMode, functionName, log, metrics, tracer, deleter, now } = deps;
  // Named fields, not a spread of every dependency: this runs per chunk.
  const keptIds = await settleChunk(batch, messages, outcome, started, {
    deleteMode,
    functionName,
    log,
    metrics,
    tracer,
    deleter,
    now,
    mark,
    backOff: (kept, delays) => setRetryBackoff(batch, kept, { ...deps, policy, mark }, delays),
    toDestination:
      route && send ? (kept, failed, reason) => deliverFailures(batch, kept, failed, reason, route, { ...deps, send, mark }) : undefined,
  });
  return { kind: 'settled', keptIds };
}
