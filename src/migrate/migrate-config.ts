/**
 * The core of `workerless migrate`, no I/O: a function's event source mappings and their queues' attributes to the
 * workerless config that does the same, and the list of what has no equivalent or behaves differently, each with
 * its reason. The semantics are the trigger's as AWS documents them (EventSourceMappingConfiguration in the Lambda
 * API reference; "Using Lambda with Amazon SQS" in the Lambda developer guide) and docs/delivery.md has them.
 */
import { isFunction, parseFunctionArn, parseQueueArn, type FunctionArn } from './arns.ts';
import type { QueueFacts, SqsMapping } from './migrate-ports.ts';

export interface Migration {
  /** The config file's content, keys in the order printed. */
  readonly config: Record<string, unknown>;
  /** What has no equivalent or behaves differently, each with its reason. */
  readonly differences: readonly string[];
  /** What SQS keeps doing whatever reads the queue (redrive policies), per queue. */
  readonly notes: readonly string[];
}

export type MigrationResult = { readonly ok: true; readonly migration: Migration } | { readonly ok: false; readonly problem: string };

/** The trigger's limits that differ from a workerless route's: FIFO batches of at most 10, no window on FIFO. */
const FIFO_BATCH_MAX = 10;
/** --concurrency's ceiling (src/config/options.ts). */
const CONCURRENCY_MAX = 10_000;

/** The mappings whose event source is an SQS queue: the only ones workerless can take over. */
export function sqsMappings(mappings: readonly SqsMapping[]): SqsMapping[] {
  return mappings.filter((m) => parseQueueArn(m.eventSourceArn) !== undefined);
}

/** The mappings of the function the caller named, whatever else the server listed (see isFunction). */
export function mappingsOf(functionName: string, mappings: readonly SqsMapping[]): SqsMapping[] {
  return mappings.filter((m) => isFunction(functionName, m.functionArn));
}

/**
 * `functionName`: as the caller named it, for the messages. `queues`: the facts of every SQS mapping's queue, by
 * queue ARN. One route per function the mappings invoke (a function and its alias are two), so the common case, one
 * function, is the top-level keys of the file.
 */
export function migrateMappings(
  functionName: string,
  mappings: readonly SqsMapping[],
  queues: ReadonlyMap<string, QueueFacts>,
): MigrationResult {
  const differences: string[] = [];
  for (const m of mappings.filter((m) => parseQueueArn(m.eventSourceArn) === undefined)) {
    differences.push(`mapping ${m.uuid} reads ${m.eventSourceArn}, not an SQS queue: left out (workerless reads SQS queues only)`);
  }
  const sqs = sqsMappings(mappings);
  if (sqs.length === 0) return { ok: false, problem: `function ${functionName} has no SQS event source mapping: nothing to migrate` };
  const unreadable = sqs.find((m) => m.filterError !== undefined);
  if (unreadable) {
    return {
      ok: false,
      problem: `mapping ${unreadable.uuid}: Lambda could not give its filter criteria (${unreadable.filterError}); the caller needs kms:Decrypt on ${unreadable.filterKmsKeyArn ?? 'its KMS key'}`,
    };
  }
  const groups = new Map<string, SqsMapping[]>();
  for (const m of sqs) groups.set(m.functionArn, [...(groups.get(m.functionArn) ?? []), m]);
  const routes: Record<string, unknown>[] = [];
  const notes: string[] = [];
  let region: string | undefined;
  for (const [arn, group] of groups) {
    const fn = parseFunctionArn(arn);
    if (fn === undefined)
      return { ok: false, problem: `mapping ${group[0]!.uuid}: its FunctionArn ${JSON.stringify(arn)} is not a Lambda function ARN` };
    region ??= fn.region;
    routes.push(routeOf(fn, group, queues, differences, notes));
  }
  const metrics = sqs.some((m) => m.eventCountMetrics);
  differences.push(
    metrics
      ? `metrics: the mappings' EventCount metrics (AWS/Lambda, by EventSourceMappingUUID) are sent by workerless as PolledEventCount, InvokedEventCount, FilteredOutEventCount, FailedInvokeEventCount, DeletedEventCount and DroppedEventCount in the namespace Workerless-${nameOf(sqs)}, by Function and Queue (docs/operations.md#metrics)`
      : 'metrics: off, as on the mappings (no MetricsConfig); "metrics: on" sends the same EventCount metrics to CloudWatch under Workerless-<name>, one PutMetricData a minute',
  );
  const config: Record<string, unknown> = {
    ...(region !== undefined ? { region } : {}),
    ...(metrics ? { name: nameOf(sqs), metrics: true } : { metrics: false }),
    ...(routes.length === 1 ? routes[0] : { routes }),
  };
  return { ok: true, migration: { config, differences, notes } };
}

/** One route: the function's mappings as its queues, with their settings. */
function routeOf(
  fn: FunctionArn,
  group: readonly SqsMapping[],
  queues: ReadonlyMap<string, QueueFacts>,
  differences: string[],
  notes: string[],
): Record<string, unknown> {
  const functionRef = fn.qualifier !== undefined ? `${fn.name}:${fn.qualifier}` : fn.name;
  const refs = group.map((m) => queueRef(fn, m, queues));
  for (const m of group) {
    const ref = queueRef(fn, m, queues);
    if (m.state !== 'Enabled') differences.push(`queue ${ref}: its mapping ${m.uuid} is ${m.state} now; workerless will read it`);
    const redrive = queues.get(m.eventSourceArn)?.redrive;
    notes.push(
      redrive
        ? `queue ${ref}: SQS moves a message to ${parseQueueArn(redrive.deadLetterTargetArn)?.name ?? redrive.deadLetterTargetArn} after ${redrive.maxReceiveCount} receives (its RedrivePolicy)`
        : `queue ${ref}: no redrive policy; a message that keeps failing returns until the queue's retention period ends, as with the trigger`,
    );
    if (m.provisionedPollers) {
      differences.push(
        `queue ${ref}: provisioned mode (ProvisionedPollerConfig ${m.provisionedPollers.min ?? '-'}-${m.provisionedPollers.max ?? '-'} pollers) has no equivalent: workerless's pollers are its worker loops (concurrency), which it holds whatever the traffic`,
      );
    }
    if (m.filterKmsKeyArn !== undefined && m.filterPatterns.length > 0) {
      differences.push(
        `queue ${ref}: the mapping's filter criteria are encrypted with ${m.filterKmsKeyArn}; in this file they are plain text`,
      );
    }
    if (!m.reportBatchItemFailures) {
      differences.push(
        `queue ${ref}: the mapping has no ReportBatchItemFailures, so the trigger deletes the whole batch when the function returns; workerless always reads a batchItemFailures list in the function's answer and keeps the messages it names (a function that returns none is unaffected)`,
      );
    }
  }
  const fifo = refs.some((r) => r.endsWith('.fifo'));
  let batchSize = Math.min(...group.map((m) => m.batchSize));
  let windowSec = Math.min(...group.map((m) => m.windowSec));
  const sizes = new Set(group.map((m) => m.batchSize));
  const windows = new Set(group.map((m) => m.windowSec));
  if (sizes.size > 1 || windows.size > 1) {
    differences.push(
      `batch size and window: one per route in workerless, the mappings differ (${group.map((m) => `${queueRef(fn, m, queues)} ${m.batchSize}/${m.windowSec}s`).join(', ')}); the smallest are taken (${batchSize}/${windowSec}s), so no invocation carries more or waits longer than on the trigger`,
    );
  }
  if (fifo && (batchSize > FIFO_BATCH_MAX || windowSec > 0)) {
    differences.push(
      `batch size and window: the route has a FIFO queue, which takes at most ${FIFO_BATCH_MAX} messages and no window in workerless (as on the trigger), so ${FIFO_BATCH_MAX < batchSize ? `batch-size ${FIFO_BATCH_MAX}` : `batch-size ${batchSize}`} without a window for every queue of the route`,
    );
    batchSize = Math.min(batchSize, FIFO_BATCH_MAX);
    windowSec = 0;
  }
  if (group.some((m) => m.filterPatterns.length > 0) && batchSize > 1) {
    differences.push(
      'filters apply to the received batch in workerless, so messages they drop count towards batch-size (the trigger filters before batching): a batch may hold fewer messages than on the trigger',
    );
  }
  const caps = group.map((m) => m.maxConcurrency);
  const capped = caps.every((c) => c !== undefined);
  if (!capped) {
    differences.push(
      `concurrency: ${caps.some((c) => c !== undefined) ? 'not every mapping has' : 'the mappings have no'} MaximumConcurrency, so the trigger scales up to 1,250 concurrent invocations (or the function's reserved concurrency); workerless runs "concurrency" worker loops per process (default 10): set it to what the function may take`,
    );
  }
  if (refs.length > 1) {
    differences.push(
      `queue order: the trigger reads each queue on its own; the queues get equal weights (${refs.map((r) => `${r}:1`).join(',')}: random order), so none waits behind another while every loop is busy; give weights or strict order to prefer one`,
    );
  }
  const queueOptions: Record<string, Record<string, unknown>> = {};
  group.forEach((m, i) => {
    const options: Record<string, unknown> = {};
    if (refs.length > 1 && m.maxConcurrency !== undefined) options['max-concurrency'] = m.maxConcurrency;
    if (m.filterPatterns.length > 0) options['filters'] = m.filterPatterns.map(patternOf);
    if (Object.keys(options).length > 0) queueOptions[refs[i]!] = options;
  });
  return {
    function: functionRef,
    queues: refs.length === 1 ? refs[0] : refs.map((r) => `${r}:1`).join(','),
    ...(capped
      ? {
          concurrency: Math.min(
            CONCURRENCY_MAX,
            caps.reduce<number>((sum, c) => sum + (c ?? 0), 0),
          ),
        }
      : {}),
    'batch-size': batchSize,
    ...(windowSec > 0 ? { 'batch-window': `${windowSec}s` } : {}),
    ...(Object.keys(queueOptions).length > 0 ? { 'queue-options': queueOptions } : {}),
  };
}

/** The queue as the config names it: by name in the function's account and region, else by URL. */
function queueRef(fn: FunctionArn, m: SqsMapping, queues: ReadonlyMap<string, QueueFacts>): string {
  const q = parseQueueArn(m.eventSourceArn)!;
  if (q.account === fn.account && q.region === fn.region) return q.name;
  return queues.get(m.eventSourceArn)?.url ?? q.name;
}

/** A filter pattern as YAML shows it best: the parsed object; a pattern that is not JSON stays text for the daemon to report. */
function patternOf(pattern: string): unknown {
  try {
    return JSON.parse(pattern) as unknown;
  } catch {
    return pattern;
  }
}

/** The metrics name (namespace Workerless-<name>): the function's name. */
function nameOf(mappings: readonly SqsMapping[]): string {
  return parseFunctionArn(mappings[0]!.functionArn)?.name ?? 'default';
}
