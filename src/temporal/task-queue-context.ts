import type { Logger } from 'pino';
import type { MetricsSink } from '../core/telemetry/metrics-sink.ts';
import type { TemporalConfig } from './options.ts';
import type { TaskQueueStatsReader } from './task-queue-stats.ts';
import type { WorkerBudget } from './worker-budget.ts';
import type { WorkerInvoker } from './worker-invoker.ts';
import type { WorkerSetActuator } from './ecs-worker-set.ts';

/** Wall clock and sleep; sleep must return early, without throwing, when the signal aborts. */
export interface SpilloverClock {
  now(): number;
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export interface TaskQueueLoop {
  taskQueue: string;
  config: TemporalConfig;
  reader: TaskQueueStatsReader;
  invoker: WorkerInvoker;
  budget: WorkerBudget;
  metrics: MetricsSink;
  logger: Logger;
  clock: SpilloverClock;
  random: () => number;
  /** --temporal-ecs-service: where the worker set's size is applied; undefined: the gauge only. */
  workerSetActuator?: WorkerSetActuator | undefined;
  /**
   * In a fleet (docs/fleet.md), whether this replica handles the task queue now: one replica reads it and buys its
   * workers, as one polls an idle SQS queue; the others leave it alone. Undefined: always (no fleet).
   */
  serves?: (() => boolean) | undefined;
}
