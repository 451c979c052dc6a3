// Reads a task queue's backlog, backlog age and pollers from Temporal (DescribeTaskQueue with reportStats,
// server >= 1.28), its backlog per priority key (stats_by_priority_key) and its effective rate limit, and for a
// versioned queue the backlog of its current and ramping Worker Deployment Versions
// (DescribeWorkerDeploymentVersion with reportTaskQueueStats). Thin on purpose: the controller sees only
// TaskQueueStatsReader, so it is tested with fakes; toTargets() turns a reading into what scaling.ts decides on.
import type { Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { backlogUpTo, type PriorityBacklog } from './priority-backlog.ts';
import type { PollerSighting, TaskQueueObservation } from './scaling.ts';
import type { BacklogStats } from './priority-backlog.ts';

type DescribeTaskQueueRequest = temporal.api.workflowservice.v1.DescribeTaskQueueRequest.$Properties;
type DescribeTaskQueueResponse = temporal.api.workflowservice.v1.DescribeTaskQueueResponse.$Properties;
type DescribeVersionRequest = temporal.api.workflowservice.v1.DescribeWorkerDeploymentVersionRequest.$Properties;
type DescribeVersionResponse = temporal.api.workflowservice.v1.DescribeWorkerDeploymentVersionResponse.$Properties;
type TaskQueueStatsMessage = temporal.api.taskqueue.v1.TaskQueueStats.$Properties;
type PriorityStatsMessage = { [key: string]: TaskQueueStatsMessage } | null | undefined;

// Wire values of temporal.api.enums.v1 (stable protobuf numbers). Spelled out so that src/ needs only
// @temporalio/client at run time; @temporalio/proto is a CommonJS module without named ESM exports.
const TASK_QUEUE_KIND_NORMAL = 1 as temporal.api.enums.v1.TaskQueueKind;
const TASK_QUEUE_TYPE_WORKFLOW = 1 as temporal.api.enums.v1.TaskQueueType;
const TASK_QUEUE_TYPE_ACTIVITY = 2 as temporal.api.enums.v1.TaskQueueType;

/** A Worker Deployment Version: what @temporalio/lambda-worker's runWorker takes. */
export interface DeploymentVersion {
  readonly deploymentName: string;
  readonly buildId: string;
}

/** One task type's statistics as the server reported them. */
export interface TypeBacklog extends BacklogStats {
  /**
   * False when the response carried no `stats` although they were asked for (Temporal Cloud unloads a task
   * queue that had no pollers for more than 5 minutes): the numbers are then zeros that mean "unknown".
   */
  readonly known: boolean;
  /** stats_by_priority_key: the backlog per priority key in use (server >= 1.29); empty when not reported. */
  readonly byPriority: PriorityBacklog;
}

/** A poller as listed, with the Build ID it polls for (undefined: an unversioned worker). */
export interface PollerInfo extends PollerSighting {
  readonly buildId: string | undefined;
}

/** Statistics of one task type of a task queue, all versions together. */
export interface TaskTypeStats extends TypeBacklog {
  /** effective_rate_limit: tasks/s the server dispatches at most (set by the API, by workers, or its default); undefined if not reported. */
  readonly rateLimitPerSec: number | undefined;
  /** Workers that polled in the last few minutes. */
  readonly pollers: number;
  /** Latest poll by any of them, ms since epoch. */
  readonly lastPollAt: number | undefined;
  /** Each of them (identity, latest poll, Build ID). */
  readonly pollerInfos: readonly PollerInfo[];
}

export interface VersionStats {
  readonly version: DeploymentVersion;
  readonly role: 'current' | 'ramping';
  readonly workflow: TypeBacklog;
  readonly activity: TypeBacklog;
}

export interface TaskQueueStats {
  readonly workflow: TaskTypeStats;
  readonly activity: TaskTypeStats;
  /** Worker Versioning: the current and ramping versions with their own backlogs; empty for an unversioned queue. */
  readonly versions: readonly VersionStats[];
}

export interface TaskQueueStatsReader {
  /** Rejects on any failure (unreachable server, permission, deadline); the caller backs off. */
  read(taskQueue: string, signal: AbortSignal): Promise<TaskQueueStats>;
}

/** The two RPCs the reader needs; a Connection's workflowService provides them. */
export interface StatsRpc {
  describeTaskQueue(request: DescribeTaskQueueRequest, signal: AbortSignal): Promise<DescribeTaskQueueResponse>;
  describeVersion(request: DescribeVersionRequest, signal: AbortSignal): Promise<DescribeVersionResponse>;
}

/** Each RPC gets this long at most, so a hung server cannot stall the controller loop. */
const RPC_TIMEOUT_MS = 10_000;

export function statsRpcVia(connection: Connection): StatsRpc {
  const within = <T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T> =>
    connection.withAbortSignal(AbortSignal.any([signal, AbortSignal.timeout(RPC_TIMEOUT_MS)]), fn);
  return {
    describeTaskQueue: (request, signal) => within(signal, () => connection.workflowService.describeTaskQueue(request)),
    describeVersion: (request, signal) => within(signal, () => connection.workflowService.describeWorkerDeploymentVersion(request)),
  };
}

export function createTaskQueueStatsReader(rpc: StatsRpc, namespace: string): TaskQueueStatsReader {
  const describeType = (name: string, taskQueueType: temporal.api.enums.v1.TaskQueueType, signal: AbortSignal) =>
    rpc.describeTaskQueue({ namespace, taskQueue: { name, kind: TASK_QUEUE_KIND_NORMAL }, taskQueueType, reportStats: true }, signal);
  return {
    async read(taskQueue, signal) {
      const [workflow, activity] = await Promise.all([
        describeType(taskQueue, TASK_QUEUE_TYPE_WORKFLOW, signal),
        describeType(taskQueue, TASK_QUEUE_TYPE_ACTIVITY, signal),
      ]);
      const roles = versionRoles(workflow.versioningInfo);
      const versions = await Promise.all(
        roles.map(async ({ version, role }): Promise<VersionStats> => {
          const described = await rpc.describeVersion({ namespace, deploymentVersion: version, reportTaskQueueStats: true }, signal);
          const of = (type: temporal.api.enums.v1.TaskQueueType): TypeBacklog => {
            const found = described.versionTaskQueues?.find((q) => q.name === taskQueue && q.type === type);
            return toTypeBacklog(found?.stats, found?.statsByPriorityKey);
          };
          return { version, role, workflow: of(TASK_QUEUE_TYPE_WORKFLOW), activity: of(TASK_QUEUE_TYPE_ACTIVITY) };
        }),
      );
      return { workflow: toTaskTypeStats(workflow), activity: toTaskTypeStats(activity), versions };
    },
  };
}

/** The versions that receive new tasks: the current one and, while a ramp is under way, the ramping one. */
function versionRoles(
  info: DescribeTaskQueueResponse['versioningInfo'],
): Array<{ version: DeploymentVersion; role: 'current' | 'ramping' }> {
  const roles: Array<{ version: DeploymentVersion; role: 'current' | 'ramping' }> = [];
  const current = toVersion(info?.currentDeploymentVersion);
  const ramping = toVersion(info?.rampingDeploymentVersion);
  if (current !== undefined) roles.push({ version: current, role: 'current' });
  // A ramp at 0 % sends it nothing; it still counts while tasks pinned to it wait (they are in its backlog).
  if (ramping !== undefined) roles.push({ version: ramping, role: 'ramping' });
  return roles;
}

function toVersion(v: { deploymentName?: string | null; buildId?: string | null } | null | undefined): DeploymentVersion | undefined {
  return v?.deploymentName && v.buildId ? { deploymentName: v.deploymentName, buildId: v.buildId } : undefined;
}

export function toTaskTypeStats(response: DescribeTaskQueueResponse): TaskTypeStats {
  const pollerInfos: PollerInfo[] = [];
  let lastPollAt: number | undefined;
  for (const poller of response.pollers ?? []) {
    const at = timestampMs(poller.lastAccessTime);
    if (at === undefined) continue;
    if (lastPollAt === undefined || at > lastPollAt) lastPollAt = at;
    pollerInfos.push({ identity: poller.identity ?? '', lastAccessAt: at, buildId: poller.deploymentOptions?.buildId || undefined });
  }
  const limit = response.effectiveRateLimit?.requestsPerSecond;
  return {
    ...toTypeBacklog(response.stats, response.statsByPriorityKey),
    // proto3 cannot tell a rate of 0 from an unset field: only a positive rate is a limit (else no cap, as before).
    rateLimitPerSec: typeof limit === 'number' && Number.isFinite(limit) && limit > 0 ? limit : undefined,
    pollers: response.pollers?.length ?? 0,
    lastPollAt,
    pollerInfos,
  };
}

function toTypeBacklog(stats: TaskQueueStatsMessage | null | undefined, byKey: PriorityStatsMessage): TypeBacklog {
  const byPriority = new Map<number, BacklogStats>();
  for (const [key, value] of Object.entries(byKey ?? {})) {
    const priority = Number(key);
    if (Number.isInteger(priority) && priority > 0) byPriority.set(priority, toBacklogStats(value));
  }
  return { ...toBacklogStats(stats), known: stats !== null && stats !== undefined, byPriority };
}

function toBacklogStats(stats: TaskQueueStatsMessage | null | undefined): BacklogStats {
  return {
    backlog: toNumber(stats?.approximateBacklogCount),
    backlogAgeMs: durationMs(stats?.approximateBacklogAge),
    addRatePerSec: finite(stats?.tasksAddRate),
    dispatchRatePerSec: finite(stats?.tasksDispatchRate),
  };
}

/** What spillover scales one set of workers on: the unversioned queue, or one version of it. */
export interface ScalingTarget {
  /** '' for the unversioned queue, else the Build ID. */
  readonly key: string;
  readonly version: DeploymentVersion | undefined;
  readonly observation: TaskQueueObservation;
}

/**
 * One target for an unversioned queue; for a versioned one, one per current/ramping version, each with its
 * own backlog and its own pollers (those polling with its Build ID), plus the unversioned remainder when the
 * current "version" is the unversioned workers. Workflow and activity tasks together: one worker serves both.
 * `maxPriority`: count only the backlog at priority keys 1 to this (priority-backlog.ts); undefined: all of it.
 * Each type keeps the queue's rate limit (versions share it: each version's cap is an upper bound).
 */
export function toTargets(stats: TaskQueueStats, maxPriority?: number): ScalingTarget[] {
  const { workflow, activity } = stats;
  const pollers = [...workflow.pollerInfos, ...activity.pollerInfos];
  const spilled = (t: TypeBacklog): BacklogStats =>
    maxPriority === undefined
      ? { backlog: t.backlog, backlogAgeMs: t.backlogAgeMs, addRatePerSec: t.addRatePerSec, dispatchRatePerSec: t.dispatchRatePerSec }
      : backlogUpTo(t.byPriority, maxPriority);
  const target = (key: string, version: DeploymentVersion | undefined, wf: TypeBacklog, act: TypeBacklog): ScalingTarget => {
    const own = pollers.filter((p) => p.buildId === version?.buildId);
    const polls = own.map((p) => p.lastAccessAt);
    const b = spilled(wf);
    const c = spilled(act);
    return {
      key,
      version,
      observation: {
        statsKnown: wf.known && act.known,
        backlog: b.backlog + c.backlog,
        backlogAgeMs: Math.max(b.backlogAgeMs, c.backlogAgeMs),
        addRatePerSec: b.addRatePerSec + c.addRatePerSec,
        dispatchRatePerSec: b.dispatchRatePerSec + c.dispatchRatePerSec,
        lastPollAt: polls.length > 0 ? Math.max(...polls) : undefined,
        pollers: own.map(({ identity, lastAccessAt }) => ({ identity, lastAccessAt })),
        byType: [
          { ...b, rateLimitPerSec: workflow.rateLimitPerSec },
          { ...c, rateLimitPerSec: activity.rateLimitPerSec },
        ],
      },
    };
  };
  if (stats.versions.length === 0) return [target('', undefined, workflow, activity)];
  const targets = stats.versions.map((v) => target(v.version.buildId, v.version, v.workflow, v.activity));
  if (!stats.versions.some((v) => v.role === 'current')) {
    // Ramping from unversioned workers: what the versions do not hold waits for unversioned ones.
    const rest = (all: TypeBacklog, type: 'workflow' | 'activity'): TypeBacklog => ({
      ...all,
      backlog: Math.max(0, all.backlog - stats.versions.reduce((sum, v) => sum + v[type].backlog, 0)),
      byPriority: new Map(
        [...all.byPriority].map(([key, b]) => [
          key,
          {
            ...b,
            backlog: Math.max(0, b.backlog - stats.versions.reduce((sum, v) => sum + (v[type].byPriority.get(key)?.backlog ?? 0), 0)),
          },
        ]),
      ),
    });
    targets.unshift(target('', undefined, rest(workflow, 'workflow'), rest(activity, 'activity')));
  }
  return targets;
}

interface LongLike {
  toNumber(): number;
}
type IntLike = number | LongLike | string | null | undefined;

function toNumber(value: IntLike): number {
  if (value === null || value === undefined) return 0;
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : value.toNumber();
  return Number.isFinite(n) ? n : 0;
}

function finite(value: number | null | undefined): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function durationMs(value: { seconds?: IntLike; nanos?: number | null } | null | undefined): number {
  if (!value) return 0;
  return toNumber(value.seconds) * 1000 + Math.floor((value.nanos ?? 0) / 1e6);
}

function timestampMs(value: { seconds?: IntLike; nanos?: number | null } | null | undefined): number | undefined {
  if (!value) return undefined;
  return durationMs(value);
}
