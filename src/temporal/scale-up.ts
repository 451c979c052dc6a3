// Starts the workers one task queue's scaling decisions call for, within its share of the worker limits, and
// holds scale-ups back after refused or failed invocations. Kept apart from task-queue-loop.ts, which reads
// the task queue and decides.
import { backoffMs } from '../util/backoff.ts';
import { capText } from '../util/cap-text.ts';
import {
  initialCeilingState,
  observeCeiling,
  recordScaleUp,
  type CeilingOptions,
  type CeilingReading,
  type CeilingState,
} from './dispatch-ceiling.ts';
import type { TemporalConfig } from './options.ts';
import { initialScalingState, recordInvocations, type ScalingDecision, type ScalingState } from './scaling.ts';
import type { TaskQueueLoop } from './task-queue-context.ts';
import type { ScalingTarget, TaskQueueStats } from './task-queue-stats.ts';
import { invokeWorkers } from './worker-burst.ts';

/** Retry caps: failed worker invocations are retried within a minute; refused ones within five. */
const MAX_TRANSIENT_INVOKE_BACKOFF_MS = 60_000;
const MAX_REFUSED_INVOKE_BACKOFF_MS = 300_000;
/** Dispatch rates within 20 % of each other are "flat" (dispatch-ceiling.ts): the server's rates are averages that wobble. */
const CEILING_BAND = 0.2;
/** How long the server may serve cached task-queue statistics (matching.TaskQueueInfoByBuildIdTTL default). */
const STATS_CACHE_MS = 5_000;

/**
 * When a scale-up's effect on the dispatch rate is judged: after the horizon (the cool-off, or the poll interval)
 * and two readings, plus the 5 s the server may cache its statistics.
 */
export function ceilingOptions(config: TemporalConfig): CeilingOptions {
  return {
    bandFraction: CEILING_BAND,
    settleMs: Math.max(config.coolOffMs, 2 * config.pollIntervalMs) + STATS_CACHE_MS,
  };
}

/** A target of the task queue and what scaling decided for it in this reading. */
export interface TargetDecision {
  readonly target: ScalingTarget;
  readonly decision: ScalingDecision;
}

type Burst = Awaited<ReturnType<typeof invokeWorkers>>;
type Facts = ReturnType<typeof factsOf>;

/**
 * The function to invoke for a target: --temporal-function for an unversioned queue, and for every version
 * when --temporal-versions is empty; otherwise the version's mapped function, or undefined (no spillover:
 * invoking other code for a Build ID would run its workflows on the wrong version).
 */
export function functionFor(config: TemporalConfig, target: ScalingTarget): string | undefined {
  const buildId = target.version?.buildId;
  if (buildId === undefined || Object.keys(config.versionFunctions).length === 0) return config.functionName;
  return Object.hasOwn(config.versionFunctions, buildId) ? config.versionFunctions[buildId] : undefined;
}

/** One task queue's scale-ups, and what they remember from one reading to the next. */
export class ScaleUp {
  readonly #loop: TaskQueueLoop;
  readonly #unmappedWarned = new Set<string>();
  /** Each target's rate cap last logged while it bound, so the cap is logged once per change. */
  readonly #capLogged = new Map<string, number>();
  /** Each target's dispatch ceiling (dispatch-ceiling.ts). */
  readonly #ceilings = new Map<string, CeilingState>();
  readonly #ceilingOptions: CeilingOptions;
  #invokeFailures = 0;
  #invokeBlockedUntil = 0;

  constructor(loop: TaskQueueLoop) {
    this.#loop = loop;
    this.#ceilingOptions = ceilingOptions(loop.config);
  }

  /**
   * Logs each target's decision and invokes the workers it lacks, recording them in `states`; returns how many
   * were invoked and how many invocations were refused. `alive`: the queue's live workers, `now`: the reading's time.
   */
  async run(
    stats: TaskQueueStats,
    decided: readonly TargetDecision[],
    alive: number,
    states: Map<string, ScalingState>,
    now: number,
    signal: AbortSignal,
  ): Promise<{ invoked: number; refused: number }> {
    const { config, logger } = this.#loop;
    let invoked = 0;
    let refused = 0;
    let room = config.maxWorkers - alive;
    for (const { target, decision } of decided) {
      const facts = factsOf(target, decision);
      logger.debug(facts, 'task queue observed');
      this.#logRateCap(stats, target, decision, facts);
      const reading = ceilingReading(target, decision, now);
      const held = this.#atCeiling(target, reading, facts);
      if (decision.invoke <= 0 || signal.aborted) continue;
      if (held) {
        logger.debug({ ...facts, wanted: decision.invoke }, 'scale-up held: the dispatch rate is flat at a ceiling');
        continue;
      }
      const functionName = this.#functionToInvoke(target, facts);
      if (functionName === undefined) continue;
      if (now < this.#invokeBlockedUntil) {
        logger.debug({ ...facts, retryInMs: this.#invokeBlockedUntil - now }, 'scale-up postponed after refused invocations');
        continue;
      }
      const granted = this.#claim(decision, room, decided.length, facts);
      if (granted <= 0) continue;
      const started = await this.#start(target, functionName, granted, facts, states, signal);
      if (started.count > 0) this.#ceilings.set(target.key, recordScaleUp(this.#ceilings.get(target.key) ?? initialCeilingState, reading));
      invoked += started.count;
      refused += started.refused;
      room -= started.count;
    }
    return { invoked, refused };
  }

  #logRateCap(stats: TaskQueueStats, target: ScalingTarget, decision: ScalingDecision, facts: Facts): void {
    const cap = decision.rateCap;
    if (cap?.binds && this.#capLogged.get(target.key) !== cap.workers) {
      this.#capLogged.set(target.key, cap.workers);
      this.#loop.logger.info(
        {
          ...facts,
          rateCapWorkers: cap.workers,
          workflowRateLimitPerSec: stats.workflow.rateLimitPerSec,
          activityRateLimitPerSec: stats.activity.rateLimitPerSec,
        },
        'workers capped by what the task queue rate limit can keep busy',
      );
    } else if (cap?.binds !== true && target.observation.statsKnown) {
      this.#capLogged.delete(target.key);
    }
  }

  /**
   * Whether scale-ups of this target are held because the last workers added did not raise its dispatch rate while
   * the backlog grew; logs once when that is found and once when the rate moves off it. Unknown statistics change nothing.
   */
  #atCeiling(target: ScalingTarget, reading: CeilingReading, facts: Facts): boolean {
    const previous = this.#ceilings.get(target.key) ?? initialCeilingState;
    if (!target.observation.statsKnown) return previous.ceiling !== undefined;
    const verdict = observeCeiling(previous, reading, this.#ceilingOptions);
    this.#ceilings.set(target.key, verdict.state);
    const { logger } = this.#loop;
    if (verdict.change === 'held') {
      logger.info(
        {
          ...facts,

          // The rate of the waiting task types, which the ceiling is about (ceilingReading).
          dispatchRatePerSec: reading.dispatchRatePerSec,
          dispatchRateBefore: verdict.evidence?.rateBefore,
          workersBefore: verdict.evidence?.workersBefore,
          backlogBefore: verdict.evidence?.backlogBefore,
          bandFraction: this.#ceilingOptions.bandFraction,
        },
        'dispatch rate flat at a ceiling: the workers added last did not raise it while the backlog grew; adding no workers until it moves',
      );
    } else if (verdict.change === 'resumed') {
      logger.info(
        { ...facts, dispatchRatePerSec: reading.dispatchRatePerSec, ceilingPerSec: previous.ceiling?.ratePerSec },
        'dispatch rate moved off the ceiling; scaling up again',
      );
    }
    return verdict.hold;
  }

  /** functionFor(), warning once per Build ID that has none. */
  #functionToInvoke(target: ScalingTarget, facts: Facts): string | undefined {
    const functionName = functionFor(this.#loop.config, target);
    if (functionName !== undefined) return functionName;
    const buildId = target.version?.buildId ?? '';
    if (!this.#unmappedWarned.has(buildId)) {
      this.#unmappedWarned.add(buildId);
      this.#loop.logger.warn(
        { ...facts, deploymentName: target.version?.deploymentName },
        '--temporal-versions maps no function to this Build ID; no spillover for it',
      );
    }
    return undefined;
  }

  /** Claims from the worker budget the workers a target may start; `targets`: how many share the queue. */
  #claim(decision: ScalingDecision, room: number, targets: number, facts: Facts): number {
    const { taskQueue, config, budget, logger } = this.#loop;
    // Versions of one queue share its maximum evenly, so a current version cannot starve a ramping one.
    const share = Math.ceil(config.maxWorkers / targets) - decision.liveWorkers;
    const request = Math.min(decision.invoke, room, targets > 1 ? share : room);
    const granted = budget.claim(taskQueue, request);
    if (granted < decision.invoke) {
      logger.debug(
        { ...facts, requested: decision.invoke, granted, maxWorkersTotal: config.maxWorkersTotal, totalAlive: budget.totalAlive() },
        'scale-up held back by the worker limits',
      );
    }
    return granted;
  }

  /** Invokes the granted workers, hands back the budget of those not started and records the others. */
  async #start(
    target: ScalingTarget,
    functionName: string,
    granted: number,
    facts: Facts,
    states: Map<string, ScalingState>,
    signal: AbortSignal,
  ): Promise<{ count: number; refused: number }> {
    const { taskQueue, budget, logger, clock } = this.#loop;
    const result = await invokeWorkers(this.#loop, functionName, target, granted, signal);
    budget.release(taskQueue, granted - result.requestIds.length);
    const count = result.requestIds.length;
    states.set(target.key, recordInvocations(states.get(target.key) ?? initialScalingState, clock.now(), result.requestIds));
    if (count > 0)
      logger.info({ ...facts, function: functionName, workersInvoked: count, requestIds: result.requestIds }, 'workers invoked');
    if (result.failure !== undefined) this.#backOff(result.failure, result.refused, facts, functionName);
    else if (count > 0) this.#invokeFailures = 0;
    return { count, refused: result.refused };
  }

  /** Holds back the next scale-ups after a failed invocation: longer when Lambda refused it. */
  #backOff(failure: NonNullable<Burst['failure']>, refused: number, facts: Facts, functionName: string): void {
    const { config, logger, clock, random } = this.#loop;
    this.#invokeFailures++;
    const permanent = failure.kind === 'refused';
    const retryInMs =
      backoffMs(
        this.#invokeFailures,
        Math.max(1_000, config.pollIntervalMs),
        permanent ? MAX_REFUSED_INVOKE_BACKOFF_MS : MAX_TRANSIENT_INVOKE_BACKOFF_MS,
        random,
      ) + config.pollIntervalMs;
    this.#invokeBlockedUntil = clock.now() + retryInMs;
    const context = {
      ...facts,
      function: functionName,
      invocationsRefused: refused,
      outcome: failure.kind,
      code: failure.code,
      // Lambda's refusal can quote the request or the function: capped as all such text (src/util/cap-text.ts).
      errorMessage: capText(failure.message),
      attempt: this.#invokeFailures,
      retryInMs,
    };
    if (permanent) logger.error(context, 'the worker function refused the invocation; retrying later');
    else logger.warn(context, 'worker invocations failed; retrying later');
  }
}

/**
 * What dispatch-ceiling.ts reads of a target. The dispatch rate is that of the task types that wait (workflow or
 * activity tasks): a long-lived fleet that keeps up with the workflow tasks dispatches them at their arrival rate,
 * flat whatever spillover adds, and would hide that the activities' rate moved. With nothing waiting, both count.
 */
function ceilingReading(target: ScalingTarget, decision: ScalingDecision, now: number): CeilingReading {
  const waiting = target.observation.byType.filter((t) => t.backlog > 0);
  return {
    now,
    dispatchRatePerSec:
      waiting.length > 0 ? waiting.reduce((sum, t) => sum + t.dispatchRatePerSec, 0) : target.observation.dispatchRatePerSec,
    backlog: target.observation.backlog,
    liveWorkers: decision.liveWorkers,
  };
}

/** What every log line about a target says. */
function factsOf(target: ScalingTarget, decision: ScalingDecision) {
  return {
    backlog: target.observation.backlog,
    backlogAgeMs: target.observation.backlogAgeMs,
    dispatchRatePerSec: target.observation.dispatchRatePerSec,
    ...(target.version !== undefined ? { buildId: target.version.buildId } : {}),
    liveWorkers: decision.liveWorkers,
    desiredWorkers: decision.desiredWorkers,
    reason: decision.reason,
  };
}
