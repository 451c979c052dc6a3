// Reads a task queue's backlog and pollers from Temporal (DescribeTaskQueue with reportStats, server >= 1.28).
// Thin on purpose: the controller sees only TaskQueueStatsReader, so it is tested with fakes.
import type { Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { TaskQueueObservation } from './scaling.ts';

type DescribeTaskQueueRequest = temporal.api.workflowservice.v1.DescribeTaskQueueRequest.$Properties;
type DescribeTaskQueueResponse = temporal.api.workflowservice.v1.DescribeTaskQueueResponse.$Properties;

// Wire values of temporal.api.enums.v1 (stable protobuf numbers). Spelled out so that src/ needs only
// @temporalio/client at run time; @temporalio/proto is a CommonJS module without named ESM exports.
const TASK_QUEUE_KIND_NORMAL = 1 as temporal.api.enums.v1.TaskQueueKind;
const TASK_QUEUE_TYPE_WORKFLOW = 1 as temporal.api.enums.v1.TaskQueueType;
const TASK_QUEUE_TYPE_ACTIVITY = 2 as temporal.api.enums.v1.TaskQueueType;

/** Statistics of one task type (workflow or activity) of a task queue. */
export interface TaskTypeStats {
  readonly backlog: number;
  readonly backlogAgeMs: number;
  readonly addRatePerSec: number;
  readonly dispatchRatePerSec: number;
  /** Workers that polled in the last few minutes. */
  readonly pollers: number;
  /** Latest poll by any of them, ms since epoch. */
  readonly lastPollAt: number | undefined;
}

export interface TaskQueueStats {
  readonly workflow: TaskTypeStats;
  readonly activity: TaskTypeStats;
}

export interface TaskQueueStatsReader {
  /** Rejects on any failure (unreachable server, permission, deadline); the caller backs off. */
  read(taskQueue: string, signal: AbortSignal): Promise<TaskQueueStats>;
}

/** The one RPC the reader needs; a Connection's workflowService provides it. */
export type DescribeTaskQueue = (request: DescribeTaskQueueRequest, signal: AbortSignal) => Promise<DescribeTaskQueueResponse>;

/** Each RPC gets this long at most, so a hung server cannot stall the controller loop. */
const RPC_TIMEOUT_MS = 10_000;

export function describeTaskQueueVia(connection: Connection): DescribeTaskQueue {
  return (request, signal) =>
    connection.withAbortSignal(AbortSignal.any([signal, AbortSignal.timeout(RPC_TIMEOUT_MS)]), () =>
      connection.workflowService.describeTaskQueue(request),
    );
}

export function createTaskQueueStatsReader(describe: DescribeTaskQueue, namespace: string): TaskQueueStatsReader {
  const readType = async (name: string, taskQueueType: temporal.api.enums.v1.TaskQueueType, signal: AbortSignal) =>
    toTaskTypeStats(
      await describe(
        { namespace, taskQueue: { name, kind: TASK_QUEUE_KIND_NORMAL }, taskQueueType, reportStats: true },
        signal,
      ),
    );
  return {
    async read(taskQueue, signal) {
      const [workflow, activity] = await Promise.all([
        readType(taskQueue, TASK_QUEUE_TYPE_WORKFLOW, signal),
        readType(taskQueue, TASK_QUEUE_TYPE_ACTIVITY, signal),
      ]);
      return { workflow, activity };
    },
  };
}

export function toTaskTypeStats(response: DescribeTaskQueueResponse): TaskTypeStats {
  const stats = response.stats ?? {};
  let lastPollAt: number | undefined;
  for (const poller of response.pollers ?? []) {
    const at = timestampMs(poller.lastAccessTime);
    if (at !== undefined && (lastPollAt === undefined || at > lastPollAt)) lastPollAt = at;
  }
  return {
    backlog: toNumber(stats.approximateBacklogCount),
    backlogAgeMs: durationMs(stats.approximateBacklogAge),
    addRatePerSec: finite(stats.tasksAddRate),
    dispatchRatePerSec: finite(stats.tasksDispatchRate),
    pollers: response.pollers?.length ?? 0,
    lastPollAt,
  };
}

/** Workflow and activity tasks together: one Lambda worker serves both. */
export function toObservation(stats: TaskQueueStats): TaskQueueObservation {
  const { workflow, activity } = stats;
  const polls = [workflow.lastPollAt, activity.lastPollAt].filter((at): at is number => at !== undefined);
  return {
    backlog: workflow.backlog + activity.backlog,
    addRatePerSec: workflow.addRatePerSec + activity.addRatePerSec,
    dispatchRatePerSec: workflow.dispatchRatePerSec + activity.dispatchRatePerSec,
    lastPollAt: polls.length > 0 ? Math.max(...polls) : undefined,
  };
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
