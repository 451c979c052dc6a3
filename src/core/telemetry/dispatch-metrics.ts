import type { MetricDef } from './metric-names.ts';
import { FUNCTION_METRICS, SQS_METRICS } from './metric-names.ts';
import type { Message } from '@aws-sdk/client-sqs';
import { noopMetrics, type MetricsSink } from './metrics-sink.ts';
import { agesAtReceive, type BacklogCounts } from '../backlog.ts';

/**
 * The dispatcher's metrics, typed: each event of the data path is one call here, recorded under the names of
 * names.ts with dimensions Function and Queue. Also keeps the in-flight and concurrency gauges, which it
 * re-records on every change so every sink sees the current value.
 *
 * With no sink (--metrics off and no HTTP server: the sink is noopMetrics) it records nothing and keeps nothing:
 * a datum and its dimensions per count, ten or so per message, and the ages of every receive, were made for nobody.
 */
export class DispatchMetrics {
  readonly #sink: MetricsSink;
  /** Someone reads what is recorded. */
  readonly #on: boolean;
  readonly #fn: string;
  readonly #inFlight = new Map<string, number>();
  /** Queues that left the route while messages of theirs were in flight: forgotten once the last one settles. */
  readonly #left = new Set<string>();
  #busyLoops = 0;

  constructor(sink: MetricsSink, functionName: string, concurrency: number) {
    this.#sink = sink;
    this.#on = sink !== noopMetrics;
    this.#fn = functionName;
    this.#fnGauge(FUNCTION_METRICS.concurrencyLimit, concurrency);
    this.#fnGauge(FUNCTION_METRICS.concurrencyInUse, 0);
    this.#fnGauge(FUNCTION_METRICS.paused, 0);
  }

  polled(queue: string, count: number): void {
    if (!this.#on) return;
    this.gathered(queue, count);
    this.#fnGauge(FUNCTION_METRICS.concurrencyInUse, ++this.#busyLoops);
  }

  /** More messages joined a batch being gathered over a batching window; its loop was counted busy by polled(). */
  gathered(queue: string, count: number): void {
    if (!this.#on) return;
    this.#count(SQS_METRICS.polled, queue, count);
    this.#moveInFlight(queue, count);
  }

  /** The function answered an invocation of `count` messages after `durationMs`. */
  invoked(queue: string, count: number, durationMs: number): void {
    this.#count(SQS_METRICS.invoked, queue, count);
    this.#record(SQS_METRICS.invocationDuration, queue, durationMs);
  }

  failedInvoke(queue: string, count: number): void {
    this.#count(SQS_METRICS.failedInvoke, queue, count);
  }

  /** Messages not invoked because their event is over the invocation type's payload limit. */
  oversized(queue: string, count: number): void {
    this.#count(SQS_METRICS.oversized, queue, count);
  }

  /** Messages without a tenant id for a tenant-isolated function (src/invoke/tenant-split.ts): not invoked, left on the queue. */
  untenanted(queue: string, count: number): void {
    this.#count(SQS_METRICS.untenanted, queue, count);
  }

  /** `reason`: a bounded label (src/invoke/throttle-reason.ts), never Lambda's free text. */
  throttled(queue: string, reason: string): void {
    if (!this.#on) return;
    this.#sink.record({
      name: SQS_METRICS.throttled.cloudwatch,
      unit: SQS_METRICS.throttled.unit,
      value: 1,
      dimensions: { Function: this.#fn, Queue: queue, Reason: reason },
    });
  }

  deleted(queue: string, count: number): void {
    this.#count(SQS_METRICS.deleted, queue, count);
  }

  /** Messages that matched none of the queue's filter patterns (deleted or left, not invoked). */
  filtered(queue: string, count: number): void {
    this.#count(SQS_METRICS.filtered, queue, count);
  }

  /** Messages released at shutdown (made visible at once, not invoked); the metric keeps its name, dropped. */
  released(queue: string, count: number): void {
    this.#count(SQS_METRICS.dropped, queue, count);
  }

  /** Messages whose visibility lease lapsed (src/settle/visibility-lease.ts): SQS delivers them again. */
  lapsed(queue: string, count: number): void {
    this.#count(SQS_METRICS.lapsed, queue, count);
  }

  /** Failed messages the failure destination accepted (they are deleted next). */
  failureDelivered(queue: string, count: number): void {
    this.#count(SQS_METRICS.failureDelivered, queue, count);
  }

  /** Failed messages on their last receive that the failure destination did not accept (they stay on the queue). */
  failureNotDelivered(queue: string, count: number): void {
    this.#count(SQS_METRICS.failureNotDelivered, queue, count);
  }

  /** Retry delays the function chose that were invalid (src/settle/handler-delay.ts); the back-off applied instead. */
  retryDelayInvalid(queue: string, count: number): void {
    this.#count(SQS_METRICS.retryDelayInvalid, queue, count);
  }

  /** Retry delays the function chose beyond SQS's 12-hour limit, clamped to it. */
  retryDelayClamped(queue: string, count: number): void {
    this.#count(SQS_METRICS.retryDelayClamped, queue, count);
  }

  /** The queue's own counts (src/core/backlog.ts), read every --visibility-refresh. */
  backlog(queue: string, counts: BacklogCounts): void {
    this.#record(SQS_METRICS.backlogVisible, queue, counts.visible);
    this.#record(SQS_METRICS.backlogNotVisible, queue, counts.notVisible);
    this.#record(SQS_METRICS.backlogDelayed, queue, counts.delayed);
  }

  /** The ages of messages received at `epochNowMs` (from their SentTimestamp), ms. */
  agesAtReceive(queue: string, messages: readonly Message[], epochNowMs: number): void {
    if (!this.#on) return;
    for (const age of agesAtReceive(messages, epochNowMs)) this.#record(SQS_METRICS.ageAtReceive, queue, age);
  }

  /** The loops allowed to hold a batch changed (adaptive concurrency). */
  limit(loops: number): void {
    this.#fnGauge(FUNCTION_METRICS.concurrencyLimit, loops);
  }

  paused(paused: boolean): void {
    this.#fnGauge(FUNCTION_METRICS.paused, paused ? 1 : 0);
  }

  /** A received batch is settled (deleted, kept or released): it leaves the in-flight count. */
  settled(queue: string, count: number, receiveToSettleMs: number): void {
    if (!this.#on) return;
    for (let i = 0; i < count; i++) this.#record(SQS_METRICS.receiveToSettle, queue, receiveToSettleMs);
    this.#moveInFlight(queue, -count);
    this.#fnGauge(FUNCTION_METRICS.concurrencyInUse, --this.#busyLoops);
  }

  /**
   * The queue left the route: its series go once nothing of it is in flight (now, or when its last batch
   * settles), so a departed queue neither freezes in /metrics nor stays in an aggregated gauge.
   */
  queueLeft(queue: string): void {
    if (!this.#on) return;
    this.#left.add(queue);
    if ((this.#inFlight.get(queue) ?? 0) === 0) this.#forget(queue);
  }

  /** The queue is in the route again (before its series went, they stay). */
  queueJoined(queue: string): void {
    this.#left.delete(queue);
  }

  #moveInFlight(queue: string, delta: number): void {
    const value = (this.#inFlight.get(queue) ?? 0) + delta;
    this.#inFlight.set(queue, value);
    this.#record(SQS_METRICS.inFlight, queue, value);
    if (value === 0 && this.#left.has(queue)) this.#forget(queue);
  }

  #forget(queue: string): void {
    this.#left.delete(queue);
    this.#inFlight.delete(queue);
    this.#sink.forget?.({ Function: this.#fn, Queue: queue });
  }

  #count(def: MetricDef, queue: string, count: number): void {
    if (count > 0) this.#record(def, queue, count);
  }

  #record(def: MetricDef, queue: string, value: number): void {
    if (!this.#on) return;
    this.#sink.record({ name: def.cloudwatch, unit: def.unit, value, dimensions: { Function: this.#fn, Queue: queue } });
  }

  #fnGauge(def: MetricDef, value: number): void {
    if (!this.#on) return;
    this.#sink.record({ name: def.cloudwatch, unit: def.unit, value, dimensions: { Function: this.#fn } });
  }
}
