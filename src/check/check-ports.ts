import type { InvokeParams, InvokeResult } from '../core/function-invoker.ts';
import type { QueueSpec } from '../receive/queue-order.ts';
import type { QueueSelector } from '../receive/queue-set.ts';
import { type ResolvedQueue } from '../core/queue.ts';
import type { EcsServiceRef, TemporalConfig } from '../temporal/options.ts';
import type { FunctionConfiguration } from './function-fit.ts';
import type { RouteConfig } from '../dispatch/route.ts';
import type { FleetStore, FleetItem } from '../core/fleet-store.ts';
import type { FleetConfig } from '../fleet/options.ts';

/** The fleet's table as the check reaches it (src/check/fleet-check.ts). */
export interface FleetTablePorts {
  /** DescribeTable: a one-line problem, or undefined when the key schema is the fleet's. */
  checkTable(): Promise<string | undefined>;
  /** The fleet's member items (Query of its partition); throws a one-line error. */
  members(): Promise<FleetItem[]>;
  /** The same table in the probe's own partition, for its PutItem and DeleteItem. */
  readonly probe: FleetStore;
  destroy(): void;
}

/** One check's outcome: `name` says what was checked ("queue payments"), `detail` what was found or what is wrong. */
export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
  /** Passed, but worth the operator's attention: printed as `warn`; the exit code stays 0. */
  readonly warning?: true;
}

export interface CheckReport {
  readonly results: readonly CheckResult[];
  /** What a run needs but a check cannot prove without side effects. */
  readonly notes: readonly string[];
}

/** What the check reads of a task queue; the run's TaskQueueStats (from DescribeTaskQueue) satisfy it. */
export interface TaskQueueBacklog {
  /** `known: false`: the server sent no statistics (an unloaded task queue); the backlog is then unknown, not 0. */
  readonly workflow: { readonly backlog: number; readonly known?: boolean };
  readonly activity: { readonly backlog: number; readonly known?: boolean };
}

/** A Temporal connection as the check uses it: the run's stats reader, and close. */
export interface TemporalCheckConnection {
  read(taskQueue: string, signal: AbortSignal): Promise<TaskQueueBacklog>;
  close(): Promise<void>;
}

/** The I/O the checks need; each call gets a signal that carries the check's deadline. */
export interface CheckPorts {
  /** Resolves one queue exactly as a run does; throws a QueueResolveError (or StartupError) when it cannot. */
  /** The queue with its own visibility timeout (check.ts applies the route's --visibility-timeout). */
  resolveQueue(spec: QueueSpec, signal: AbortSignal): Promise<ResolvedQueue>;
  /**
   * The queues a --queues-prefix or --queues-tag matches now, by name, and those whose tags could not be read;
   * throws an AwsCallError when ListQueues fails.
   */
  findQueues(selector: QueueSelector, signal: AbortSignal): Promise<{ found: string[]; unreadable: string[] }>;
  /** An InvocationType DryRun Invoke of the function, with what it carries (the tenant of a tenant-isolated function). */
  dryRun(functionName: string, signal: AbortSignal, params?: InvokeParams): Promise<InvokeResult>;
  /**
   * GetFunctionConfiguration of the function as named, or at `qualifier` (then the name is unqualified); throws
   * an AwsCallError when Lambda refuses.
   */
  functionConfiguration(functionName: string, qualifier: string | undefined, signal: AbortSignal): Promise<FunctionConfiguration>;
  /** GetFunctionConcurrency of an unqualified function: its reserved concurrency, undefined when it has none; throws an AwsCallError. */
  reservedConcurrency(functionName: string, signal: AbortSignal): Promise<number | undefined>;
  /** Sends one datum to the namespace; throws an AwsCallError when CloudWatch refuses. */
  putCheckDatum(namespace: string, signal: AbortSignal): Promise<void>;
  /** Connects to Temporal with the run's connection options (TLS, API key); bounded by its own connect timeout. */
  connectTemporal(config: TemporalConfig): Promise<TemporalCheckConnection>;
  /** Why nothing answers on host:port over TCP, or undefined when something does: explains a failed connection. */
  probeTcp(address: string, signal: AbortSignal): Promise<string | undefined>;
  /**
   * --temporal-ecs-service: DescribeServices of the worker set's ECS service, as a line (temporal/ecs-worker-set.ts words it).
   * Optional: fakes that do not model ECS leave it out.
   */
  ecsService?(ref: EcsServiceRef, signal: AbortSignal): Promise<{ ok: boolean; detail: string }>;
  /** --fleet-table: the fleet's table. Optional: fakes that do not model DynamoDB leave it out. */
  fleetTable?(fleet: FleetConfig): FleetTablePorts;
  /** The Lambda and CloudWatch endpoints a run uses, named when they cannot be reached (SQS errors carry their own). */
  readonly endpoints?: { readonly lambda: string; readonly cloudwatch: string } | undefined;
}

/** One queue of a route, as resolved (with its own visibility timeout), and what was read of the route's function. */
export interface QueueFacts {
  readonly route: RouteConfig;
  readonly queue: ResolvedQueue;
  /** GetFunctionConfiguration of the version the route's invocations run; undefined when it could not be read. */
  readonly fn: FunctionConfiguration | undefined;
}

/** One check of a queue: its line, or undefined when it has nothing to say (or cannot tell). */
export type QueueCheck = (facts: QueueFacts) => CheckResult | undefined;
