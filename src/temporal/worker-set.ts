// One task queue's worker set: at each known reading, worker-set-sizing.ts decides the set's size; it is published as
// the desired-workers gauge (which a KEDA ScaledObject follows) and logged when it changes.
import { TEMPORAL_METRICS } from '../core/telemetry/metric-names.ts';
import type { TaskQueueLoop } from './task-queue-context.ts';
import type { TaskQueueStats } from './task-queue-stats.ts';
import type { WorkerSetConfig } from './options.ts';
import { decideWorkerSet, initialWorkerSetState, type WorkerSetLimits, type WorkerSetState } from './worker-set-sizing.ts';

/** How soon a backlog should drain when --temporal-max-backlog-age is not set. */
export const DEFAULT_DRAIN_MS = 60_000;

export function workerSetLimits(set: WorkerSetConfig, maxBacklogAgeMs: number | undefined): WorkerSetLimits {
  return { ...set, drainMs: maxBacklogAgeMs ?? DEFAULT_DRAIN_MS };
}

export class WorkerSetControl {
  readonly #loop: TaskQueueLoop;
  readonly #limits: WorkerSetLimits;
  #state: WorkerSetState;
  #published: number | undefined;
  /** The size the actuator last accepted, and the failure last logged (logged once per distinct reason). */
  #applied: number | undefined;
  #failureLogged: string | undefined;

  constructor(loop: TaskQueueLoop, set: WorkerSetConfig) {
    this.#loop = loop;
    this.#limits = workerSetLimits(set, loop.config.maxBacklogAgeMs);
    this.#state = initialWorkerSetState(this.#limits);
  }

  /** Decides the set's size from a reading; unknown statistics keep the size (unknown is not zero). Returns it. */
  observe(stats: TaskQueueStats, now: number): number {
    const types = [stats.workflow, stats.activity];
    if (types.every((t) => t.known)) {
      const decision = decideWorkerSet(
        this.#state,
        {
          now,
          addRatePerSec: types.reduce((sum, t) => sum + t.addRatePerSec, 0),
          dispatchRatePerSec: types.reduce((sum, t) => sum + t.dispatchRatePerSec, 0),
          backlog: types.reduce((sum, t) => sum + t.backlog, 0),
          backlogAgeMs: Math.max(...types.map((t) => t.backlogAgeMs)),
        },
        this.#limits,
      );
      this.#state = decision.state;
      if (decision.desired !== this.#published) {
        this.#loop.logger.info(
          {
            desiredWorkers: decision.desired,
            previousWorkers: this.#published,
            targetWorkers: decision.target,
            reason: decision.reason,
            arrivalPerSec: decision.state.arrivalPerSec,
            workerCapacityPerSec: decision.state.capacityPerSec ?? this.#limits.capacityPerSec,
          },
          'worker set resized',
        );
        this.#published = decision.desired;
      }
    }
    const desired = this.#state.desired;
    this.#loop.metrics.record({
      name: TEMPORAL_METRICS.desiredWorkers.cloudwatch,
      unit: TEMPORAL_METRICS.desiredWorkers.unit,
      value: desired,
      dimensions: { TaskQueue: this.#loop.taskQueue },
    });
    return desired;
  }

  /** Applies the size to the ECS service when it differs from what it last accepted; a failure is retried next reading. */
  async apply(desired: number, signal: AbortSignal): Promise<void> {
    const actuator = this.#loop.workerSetActuator;
    if (actuator === undefined || desired === this.#applied || signal.aborted) return;
    const outcome = await actuator.apply(desired, signal);
    const { logger } = this.#loop;
    if (outcome.ok) {
      if (this.#failureLogged !== undefined) logger.info({ desiredWorkers: desired }, 'worker set size applied again');
      this.#applied = desired;
      this.#failureLogged = undefined;
    } else if (outcome.reason !== 'interrupted' && outcome.reason !== this.#failureLogged) {
      this.#failureLogged = outcome.reason;
      logger.error({ desiredWorkers: desired, reason: outcome.reason }, 'could not set the worker set size; retrying at each reading');
    }
  }
}
