// One task queue's control loop: read the backlog, ask scaling.ts how many workers should be alive, and start
// the difference (worker-burst.ts) within the queue's share of the worker limits.
import { backoffMs } from '../util/backoff.ts';
import { capText } from '../util/cap-text.ts';
import { TEMPORAL_METRICS } from '../core/telemetry/metric-names.ts';
import { MAX_READ_BACKOFF_MS } from './connection.ts';
import type { TemporalConfig } from './options.ts';
import { reportsPriorityBacklog } from './priority-backlog.ts';
import {
  aliveWorkers,
  decideScaling,
  initialScalingState,
  recordInvocations,
  type ScalingDecision,
  type ScalingLimits,
  type ScalingState,
  type TaskQueueObservation,
} from './scaling.ts';
import type { TaskQueueLoop } from './task-queue-context.ts';
import { toTargets, type ScalingTarget, type TaskQueueStats } from './task-queue-stats.ts';
import { invokeWorkers } from './worker-burst.ts';

/** Retry caps: failed worker invocations are retried within a minute; refused ones within five. */
const MAX_TRANSIENT_INVOKE_BACKOFF_MS = 60_000;
const MAX_REFUSED_INVOKE_BACKOFF_MS = 300_000;
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

export async function runTaskQueue(loop: TaskQueueLoop, signal: AbortSignal): Promise<void> {
  const { taskQueue, config, reader, budget, metrics, logger, clock, random } = loop;
  const limits = scalingLimits(config);
  const dimensions = { TaskQueue: taskQueue };
  /** One scaling state per target: '' for the unversioned queue, else a Build ID. */
  const states = new Map<string, ScalingState>();
  const unmappedWarned = new Set<string>();
  /** Each target's rate cap last logged while it bound, so the cap is logged once per change. */
  const capLogged = new Map<string, number>();
  /** Whether the server has shown a backlog per priority (priority-backlog.ts); once seen, trusted from then on. */
  let perPriority = false;
  let priorityFallbackLogged = false;
  let statsUnknown = false;
  let readFailures = 0;
  let invokeFailures = 0;
  let invokeBlockedUntil = 0;

  while (!signal.aborted) {
    let stats: TaskQueueStats;
    try {
      stats = await reader.read(taskQueue, signal);
    } catch (err) {
      if (signal.aborted) break;
      readFailures++;
      const retryInMs = backoffMs(readFailures, config.pollIntervalMs, MAX_READ_BACKOFF_MS, random) + config.pollIntervalMs / 2;
      logger.warn({ err, attempt: readFailures, retryInMs }, 'could not read task queue statistics; retrying');
      await clock.sleep(retryInMs, signal);
      continue;
    }
    if (readFailures > 0) logger.info({ attempts: readFailures }, 'reading task queue statistics again');
    readFailures = 0;

    const now = clock.now();
    const backlog = stats.workflow.backlog + stats.activity.backlog;
    const backlogAgeMs = Math.max(stats.workflow.backlogAgeMs, stats.activity.backlogAgeMs);
    const known = stats.workflow.known && stats.activity.known && stats.versions.every((v) => v.workflow.known && v.activity.known);
    metrics.record({
      name: TEMPORAL_METRICS.backlogKnown.cloudwatch,
      unit: TEMPORAL_METRICS.backlogKnown.unit,
      value: known ? 1 : 0,
      dimensions,
    });
    // Unknown is not zero: NaN takes the backlog gauge away (Prometheus drops the series, CloudWatch gets no datum).
    metrics.record({
      name: TEMPORAL_METRICS.backlog.cloudwatch,
      unit: TEMPORAL_METRICS.backlog.unit,
      value: known ? backlog : NaN,
      dimensions,
    });
    if (known) {
      metrics.record({
        name: TEMPORAL_METRICS.backlogAge.cloudwatch,
        unit: TEMPORAL_METRICS.backlogAge.unit,
        value: backlogAgeMs,
        dimensions,
      });
    }
    if (known === statsUnknown) {
      statsUnknown = !known;
      if (statsUnknown) {
        logger.warn(
          { workflowStats: stats.workflow.known, activityStats: stats.activity.known },
          'task queue statistics unknown (the server sent none; Temporal Cloud unloads a task queue without pollers for 5 minutes); no workers invoked on them',
        );
      } else {
        logger.info({ backlog }, 'task queue statistics known again');
      }
    }

    if (config.spillPriority !== undefined && !perPriority) {
      const types = [stats.workflow, stats.activity, ...stats.versions.flatMap((v) => [v.workflow, v.activity])];
      perPriority = types.some((t) => reportsPriorityBacklog(t.byPriority));
      if (perPriority) {
        logger.info(
          { spillPriority: config.spillPriority },
          'the server reports the backlog per priority; spilling over for priorities 1 to spillPriority only',
        );
      } else if (known && backlog > 0 && !priorityFallbackLogged) {
        priorityFallbackLogged = true;
        logger.warn(
          { spillPriority: config.spillPriority, backlog },
          'no backlog reported outside the default priority yet (the classic matcher files every task there); spilling over for the whole backlog',
        );
      }
    }
    const targets = toTargets(stats, perPriority ? config.spillPriority : undefined);
    const decided: Array<{ target: ScalingTarget; decision: ScalingDecision }> = [];
    for (const target of targets) {
      const decision = decideScaling(states.get(target.key) ?? initialScalingState, target.observation, limits, now);
      states.set(target.key, decision.state);
      decided.push({ target, decision });
    }
    // Versions no longer current or ramping get no new workers, but the ones they have still count until they go.
    const allPollers = [...stats.workflow.pollerInfos, ...stats.activity.pollerInfos];
    let alive = 0;
    let lost = decided.reduce((sum, d) => sum + d.decision.lostWorkers, 0);
    for (const [key, state] of states) {
      if (targets.some((t) => t.key === key)) continue;
      const retired = decideScaling(state, { ...IDLE, pollers: allPollers }, limits, now);
      lost += retired.lostWorkers;
      if (retired.state.workers.length === 0) states.delete(key);
      else states.set(key, retired.state);
    }
    for (const state of states.values()) alive += aliveWorkers(state);
    const wanted = decided.reduce((sum, d) => sum + d.decision.desiredWorkers, 0);
    budget.report(taskQueue, alive, wanted);
    metrics.record({ name: TEMPORAL_METRICS.workersAlive.cloudwatch, unit: TEMPORAL_METRICS.workersAlive.unit, value: alive, dimensions });
    metrics.record({ name: TEMPORAL_METRICS.workersLost.cloudwatch, unit: TEMPORAL_METRICS.workersLost.unit, value: lost, dimensions });
    if (lost > 0) logger.info({ workersLost: lost, liveWorkers: alive, backlog }, 'workers stopped polling before their lifetime ended');

    let invoked = 0;
    let refused = 0;
    let room = config.maxWorkers - alive;
    for (const { target, decision } of decided) {
      const facts = {
        backlog: target.observation.backlog,
        backlogAgeMs: target.observation.backlogAgeMs,
        ...(target.version !== undefined ? { buildId: target.version.buildId } : {}),
        liveWorkers: decision.liveWorkers,
        desiredWorkers: decision.desiredWorkers,
        reason: decision.reason,
      };
      logger.debug(facts, 'task queue observed');
      const cap = decision.rateCap;
      if (cap?.binds && capLogged.get(target.key) !== cap.workers) {
        capLogged.set(target.key, cap.workers);
        logger.info(
          {
            ...facts,
            rateCapWorkers: cap.workers,
            workflowRateLimitPerSec: stats.workflow.rateLimitPerSec,
            activityRateLimitPerSec: stats.activity.rateLimitPerSec,
          },
          'workers capped by what the task queue rate limit can keep busy',
        );
      } else if (cap?.binds !== true && target.observation.statsKnown) {
        capLogged.delete(target.key);
      }
      if (decision.invoke <= 0 || signal.aborted) continue;
      const functionName = functionFor(config, target);
      if (functionName === undefined) {
        const buildId = target.version?.buildId ?? '';
        if (!unmappedWarned.has(buildId)) {
          unmappedWarned.add(buildId);
          logger.warn(
            { ...facts, deploymentName: target.version?.deploymentName },
            '--temporal-versions maps no function to this Build ID; no spillover for it',
          );
        }
        continue;
      }
      if (now < invokeBlockedUntil) {
        logger.debug({ ...facts, retryInMs: invokeBlockedUntil - now }, 'scale-up postponed after refused invocations');
        continue;
      }
      // Versions of one queue share its maximum evenly, so a current version cannot starve a ramping one.
      const share = Math.ceil(config.maxWorkers / decided.length) - decision.liveWorkers;
      const request = Math.min(decision.invoke, room, decided.length > 1 ? share : room);
      const granted = budget.claim(taskQueue, request);
      if (granted < decision.invoke) {
        logger.debug(
          { ...facts, requested: decision.invoke, granted, maxWorkersTotal: config.maxWorkersTotal, totalAlive: budget.totalAlive() },
          'scale-up held back by the worker limits',
        );
      }
      if (granted <= 0) continue;
      const result = await invokeWorkers(loop, functionName, target, granted, signal);
      budget.release(taskQueue, granted - result.requestIds.length);
      const count = result.requestIds.length;
      invoked += count;
      refused += result.refused;
      room -= count;
      states.set(target.key, recordInvocations(states.get(target.key) ?? initialScalingState, clock.now(), result.requestIds));
      if (count > 0)
        logger.info({ ...facts, function: functionName, workersInvoked: count, requestIds: result.requestIds }, 'workers invoked');
      if (result.failure !== undefined) {
        invokeFailures++;
        const permanent = result.failure.kind === 'refused';
        const retryInMs =
          backoffMs(
            invokeFailures,
            Math.max(1_000, config.pollIntervalMs),
            permanent ? MAX_REFUSED_INVOKE_BACKOFF_MS : MAX_TRANSIENT_INVOKE_BACKOFF_MS,
            random,
          ) + config.pollIntervalMs;
        invokeBlockedUntil = clock.now() + retryInMs;
        const context = {
          ...facts,
          function: functionName,
          invocationsRefused: result.refused,
          outcome: result.failure.kind,
          code: result.failure.code,
          // Lambda's refusal can quote the request or the function: capped as all such text (src/util/cap-text.ts).
          errorMessage: capText(result.failure.message),
          attempt: invokeFailures,
          retryInMs,
        };
        if (permanent) logger.error(context, 'the worker function refused the invocation; retrying later');
        else logger.warn(context, 'worker invocations failed; retrying later');
      } else if (count > 0) {
        invokeFailures = 0;
      }
    }
    metrics.record({
      name: TEMPORAL_METRICS.workersInvoked.cloudwatch,
      unit: TEMPORAL_METRICS.workersInvoked.unit,
      value: invoked,
      dimensions,
    });
    metrics.record({
      name: TEMPORAL_METRICS.invocationsRefused.cloudwatch,
      unit: TEMPORAL_METRICS.invocationsRefused.unit,
      value: refused,
      dimensions,
    });

    await clock.sleep(config.pollIntervalMs, signal);
  }
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
