import type { MetricDatum } from '../../core/telemetry/metrics-sink.ts';
import { TEMPORAL_METRICS } from '../../core/telemetry/metric-names.ts';
import type { TaskQueueStatus } from './snapshot.ts';

/**
 * The Temporal task queues' part of the status page, kept from spillover's metrics (dimension TaskQueue): the
 * latest backlog, whether the server reported statistics at all, and the workers counted alive. A reading
 * without statistics (an unloaded task queue) shows as "unknown", never as a backlog of 0.
 */
export class TaskQueueStatusRecorder {
  readonly #queues = new Map<string, { backlog: number | undefined; known: boolean; workersAlive: number }>();

  /** Takes the datum if it is one of spillover's gauges; returns whether it did. */
  record(datum: MetricDatum): boolean {
    const name = datum.dimensions['TaskQueue'];
    if (name === undefined) return false;
    let queue = this.#queues.get(name);
    if (queue === undefined) {
      queue = { backlog: undefined, known: false, workersAlive: 0 };
      this.#queues.set(name, queue);
    }
    if (datum.name === TEMPORAL_METRICS.backlogKnown.cloudwatch) queue.known = datum.value === 1;
    else if (datum.name === TEMPORAL_METRICS.backlog.cloudwatch) queue.backlog = Number.isFinite(datum.value) ? datum.value : undefined;
    else if (datum.name === TEMPORAL_METRICS.workersAlive.cloudwatch && Number.isFinite(datum.value)) queue.workersAlive = datum.value;
    return true;
  }

  /** Every task queue seen, in the order first seen. */
  list(): TaskQueueStatus[] {
    return [...this.#queues].map(([name, q]) => ({
      name,
      stats: q.known && q.backlog !== undefined ? 'known' : 'unknown',
      ...(q.known && q.backlog !== undefined ? { backlog: q.backlog } : {}),
      workersAlive: q.workersAlive,
    }));
  }
}
