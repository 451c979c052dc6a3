// One task queue's control loop: read the backlog, ask scaling.ts how many workers should be alive, and start
// the difference (scale-up.ts) within the queue's share of the worker limits.
import { backoffMs } from '../util/backoff.ts';
import { TEMPORAL_METRICS, type MetricDef } from '../core/telemetry/metric-names.ts';
import { MAX_READ_BACKOFF_MS } from './connection.ts';
import type { TemporalConfig } from './options.ts';
import { reportsPriorityBacklog } from './priority-backlog.ts';
import { ScaleUp, type TargetDecision } from './scale-up.ts';
import {
  aliveWorkers,
  decideScaling,
  initialScalingState,
  type ScalingLimits,
  type ScalingState,
  type TaskQueueObservation,
} from './scaling.ts';
import type { TaskQueueLoop } from './task-queue-context.ts';
import { toTargets, type ScalingTarget, type TaskQueueStats } from './task-queue-stats.ts';
import { WorkerSetControl } from './worker-set.ts';

/** Workers re-poll at least every minute (server long-poll expiry is 60 s); 75 s means nobody is listening. */
const POLLER_RECENT_MS = 75_000;
/** How long the server may serve cached task-queue statistics (matching.TaskQueueInfoByBuildIdTTL default). */
const STATS_CACHE_MS = 5_000;

/**
 * While tasks wait, how old a worker's latest poll may be before it counts as stopped. A worker with a free
 * slot re-polls as soon as a poll is answered, so this only has to cover the gap between two readings and the
 * server's caching of task-queue statistics (5 s by default, matching.TaskQueueInfoByBuildIdTTL).
 */
export function pollerStaleMs(pollIntervalMs: number): number {
  return 2 * pollIntervalMs + STATS_CACHE_MS;
}

export function scalingLimits(config: TemporalConfig): ScalingLimits {
  return {
    maxWorkers: config.maxWorkers,
    workerLifetimeMs: config.workerLifetimeMs,
    backlogThreshold: config.backlogThreshold,
    maxBacklogAgeMs: config.maxBacklogAgeMs,
    urgency: config.fairness ? 'age' : 'count',
    coolOffMs: config.coolOffMs,
    tasksPerWorker: config.tasksPerWorker,
    horizonMs: Math.max(config.pollIntervalMs, config.coolOffMs),
    pollerRecentMs: POLLER_RECENT_MS,
    workerStartTimeoutMs: config.workerStartTimeoutMs,
    pollerStaleMs: pollerStaleMs(config.pollIntervalMs),
  };
}

export async function runTaskQueue(loop: TaskQueueLoop, signal: AbortSignal): Promise<void> {
  const control = new TaskQueueControl(loop);
  let handledHere = true;
  while (!signal.aborted) {
    const handles = loop.serves?.() ?? true;
    if (handles !== handledHere) control.handedOver((handledHere = handles));
    if (handles) {
      const stats = await control.read(signal);
      if (stats === undefined) continue;
      await control.act(stats, signal);
    }
    await loop.clock.sleep(loop.config.pollIntervalMs, signal);
  }
}

/** The backlog of a reading, over workflow and activity tasks. */
interface Backlog {
  readonly backlog: number;
  readonly backlogAgeMs: number;
  /** Whether the server sent every statistic of the reading. */
  readonly known: boolean;
}

/** One task queue's control loop and what it remembers from one reading to the next. */
class TaskQueueControl {
  readonly #loop: TaskQueueLoop;
  readonly #limits: ScalingLimits;
  readonly #dimensions: { readonly TaskQueue: string };
  /** One scaling state per target: '' for the unversioned queue, else a Build ID. */
  readonly #states = new Map<string, ScalingState>();
  readonly #scaleUp: ScaleUp;
  /** --temporal-worker-set-max: the long-lived worker set's size, beside the Lambda workers. */
  readonly #workerSet: WorkerSetControl | undefined;
  /** Whether the server has shown a backlog per priority (priority-backlog.ts); once seen, trusted from then on. */
  #perPriority = false;
  #priorityFallbackLogged = false;
  #statsUnknown = false;
  #readFailures = 0;

  constructor(loop: TaskQueueLoop) {
    this.#loop = loop;
    this.#limits = scalingLimits(loop.config);
    this.#dimensions = { TaskQueue: loop.taskQueue };
    this.#scaleUp = new ScaleUp(loop);
    this.#workerSet = loop.config.workerSet && new WorkerSetControl(loop, loop.config.workerSet);
  }

  /**
   * Another replica of the fleet handles the task queue from now (`here` false), or this one again: told once
   * each way; while elsewhere, this replica's backlog gauges go away (its statistics are unknown here, not 0).
   */
  handedOver(here: boolean): void {
    if (here) {
      this.#loop.logger.info('task queue handled here again: its backlog is read and its workers bought by this replica');
      return;
    }
    this.#loop.logger.info('task queue handled by another replica of the fleet: no workers bought here while it is');
    this.#recordBacklog({ backlog: 0, backlogAgeMs: 0, known: false });
  }

  /** Reads the task queue's statistics; undefined when the read failed (after the retry's wait) or was aborted. */
  async read(signal: AbortSignal): Promise<TaskQueueStats | undefined> {
    const { taskQueue, config, reader, logger, clock, random } = this.#loop;
    let stats: TaskQueueStats;
    try {
      stats = await reader.read(taskQueue, signal);
    } catch (err) {
      if (signal.aborted) return undefined;
      this.#readFailures++;
      const retryInMs = backoffMs(this.#readFailures, config.pollIntervalMs, MAX_READ_BACKOFF_MS, random) + config.pollIntervalMs / 2;
      logger.warn({ err, attempt: this.#readFailures, retryInMs }, 'could not read task queue statistics; retrying');
      await clock.sleep(retryInMs, signal);
      return undefined;
    }
    if (this.#readFailures > 0) logger.info({ attempts: this.#readFailures }, 'reading task queue statistics again');
    this.#readFailures = 0;
    return stats;
  }

  /** Acts on one reading: records the backlog, decides each target's workers and starts those missing. */
  async act(stats: TaskQueueStats, signal: AbortSignal): Promise<void> {
    const now = this.#loop.clock.now();
    const backlog = backlogOf(stats);
    this.#recordBacklog(backlog);
    this.#noteStatsKnown(stats, backlog);
    this.#notePerPriority(stats, backlog);
    if (this.#workerSet !== undefined) await this.#workerSet.apply(this.#workerSet.observe(stats, now), signal);
    const targets = toTargets(stats, this.#perPriority ? this.#loop.config.spillPriority : undefined);
    const decided = this.#decide(targets, now);
    const lost = decided.reduce((sum, d) => sum + d.decision.lostWorkers, 0) + this.#retireOthers(targets, stats, now);
    let alive = 0;
    for (const state of this.#states.values()) alive += aliveWorkers(state);
    this.#reportWorkers(decided, alive, lost, backlog.backlog);
    const { invoked, refused } = await this.#scaleUp.run(stats, decided, alive, this.#states, now, signal);
    this.#record(TEMPORAL_METRICS.workersInvoked, invoked);
    this.#record(TEMPORAL_METRICS.invocationsRefused, refused);
  }

  #recordBacklog({ backlog, backlogAgeMs, known }: Backlog): void {
    this.#record(TEMPORAL_METRICS.backlogKnown, known ? 1 : 0);
    // Unknown is not zero: NaN takes the backlog gauge away (Prometheus drops the series, CloudWatch gets no datum).
    this.#record(TEMPORAL_METRICS.backlog, known ? backlog : NaN);
    if (known) this.#record(TEMPORAL_METRICS.backlogAge, backlogAgeMs);
  }

  /** Logs when the statistics become unknown, and when they are known again. */
  #noteStatsKnown(stats: TaskQueueStats, { backlog, known }: Backlog): void {
    if (known !== this.#statsUnknown) return;
    this.#statsUnknown = !known;
    if (this.#statsUnknown) {
      this.#loop.logger.warn(
        { workflowStats: stats.workflow.known, activityStats: stats.activity.known },
        'task queue statistics unknown (the server sent none; Temporal Cloud unloads a task queue without pollers for 5 minutes); no workers invoked on them',
      );
    } else {
      this.#loop.logger.info({ backlog }, 'task queue statistics known again');
    }
  }

  /** With --temporal-spill-priority, looks for a backlog per priority until the server shows one. */
  #notePerPriority(stats: TaskQueueStats, { backlog, known }: Backlog): void {
    const { config, logger } = this.#loop;
    if (config.spillPriority === undefined || this.#perPriority) return;
    const types = [stats.workflow, stats.activity, ...stats.versions.flatMap((v) => [v.workflow, v.activity])];
    this.#perPriority = types.some((t) => reportsPriorityBacklog(t.byPriority));
    if (this.#perPriority) {
      logger.info(
        { spillPriority: config.spillPriority },
        'the server reports the backlog per priority; spilling over for priorities 1 to spillPriority only',
      );
    } else if (known && backlog > 0 && !this.#priorityFallbackLogged) {
      this.#priorityFallbackLogged = true;
      logger.warn(
        { spillPriority: config.spillPriority, backlog },
        'no backlog reported outside the default priority yet (the classic matcher files every task there); spilling over for the whole backlog',
      );
    }
  }

  #decide(targets: readonly ScalingTarget[], now: number): TargetDecision[] {
    const decided: TargetDecision[] = [];
    for (const target of targets) {
      const decision = decideScaling(this.#states.get(target.key) ?? initialScalingState, target.observation, this.#limits, now);
      this.#states.set(target.key, decision.state);
      decided.push({ target, decision });
    }
    return decided;
  }

  /**
   * Versions no longer current or ramping get no new workers, but the ones they have still count until they go.
   * Returns how many of those workers were lost.
   */
  #retireOthers(targets: readonly ScalingTarget[], stats: TaskQueueStats, now: number): number {
    const allPollers = [...stats.workflow.pollerInfos, ...stats.activity.pollerInfos];
    let lost = 0;
    for (const [key, state] of this.#states) {
      if (targets.some((t) => t.key === key)) continue;
      const retired = decideScaling(state, { ...IDLE, pollers: allPollers }, this.#limits, now);
      lost += retired.lostWorkers;
      if (retired.state.workers.length === 0) this.#states.delete(key);
      else this.#states.set(key, retired.state);
    }
    return lost;
  }

  #reportWorkers(decided: readonly TargetDecision[], alive: number, lost: number, backlog: number): void {
    const { taskQueue, budget, logger } = this.#loop;
    const wanted = decided.reduce((sum, d) => sum + d.decision.desiredWorkers, 0);
    budget.report(taskQueue, alive, wanted);
    this.#record(TEMPORAL_METRICS.workersAlive, alive);
    this.#record(TEMPORAL_METRICS.workersLost, lost);
    if (lost > 0) logger.info({ workersLost: lost, liveWorkers: alive, backlog }, 'workers stopped polling before their lifetime ended');
  }

  #record(metric: MetricDef, value: number): void {
    this.#loop.metrics.record({ name: metric.cloudwatch, unit: metric.unit, value, dimensions: this.#dimensions });
  }
}

function backlogOf(stats: TaskQueueStats): Backlog {
  return {
    backlog: stats.workflow.backlog + stats.activity.backlog,
    backlogAgeMs: Math.max(stats.workflow.backlogAgeMs, stats.activity.backlogAgeMs),
    known: stats.workflow.known && stats.activity.known && stats.versions.every((v) => v.workflow.known && v.activity.known),
  };
}

/** What a version no longer current or ramping looks like: nothing waits for it. */
const IDLE: TaskQueueObservation = {
  statsKnown: true,
  backlog: 0,
  backlogAgeMs: 0,
  addRatePerSec: 0,
  dispatchRatePerSec: 0,
  lastPollAt: undefined,
  pollers: [],
  byType: [],
};
