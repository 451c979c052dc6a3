/**
 * What an invocation's result means for each message of the batch, following the rules of AWS's own
 * SQS event source mapping with ReportBatchItemFailures:
 * - FunctionError set (the handler threw or timed out): the whole batch failed, nothing is deleted.
 * - No batchItemFailures / null / empty list: every message succeeded.
 * - A valid list: the listed messages stay on the queue, the others are deleted.
 * - An invalid list (unparseable, an entry without itemIdentifier, an id not in the batch): the whole batch failed.
 * - FIFO: processing stops at the first failure, so that message and every later one in the batch stay.
 * A workerless extension: an entry may also carry `retryDelaySeconds`, the delay the handler chooses before that
 * message is retried. Its value is passed on as given, unchecked; src/settle/handler-delay.ts reads it.
 */
import type { InvocationResponse } from '../core/function-invoker.ts';
import { idsToKeep } from './fifo-rule.ts';

export type BatchVerdict =
  | { kind: 'success'; deleteIds: string[]; keepIds: string[] }
  | {
      kind: 'partial';
      deleteIds: string[];
      keepIds: string[];
      /** The listed ids: on FIFO, keepIds also holds the later messages the function did not process. */
      failedIds: string[];
      /** `retryDelaySeconds` as the entries gave it, by id, for the entries that have the key. */
      retryDelays: ReadonlyMap<string, unknown>;
    }
  | { kind: 'function-error'; deleteIds: []; keepIds: string[]; errorType: string; errorMessage: string }
  | { kind: 'invalid-response'; deleteIds: []; keepIds: string[]; reason: string };

export function interpretResult(response: InvocationResponse, messageIds: readonly string[], fifo: boolean): BatchVerdict {
  const all = [...messageIds];
  if (response.functionError) {
    const { errorType, errorMessage } = parseFunctionError(response.payload, response.functionError);
    return { kind: 'function-error', deleteIds: [], keepIds: all, errorType, errorMessage };
  }
  const failures = parseBatchItemFailures(response.payload);
  if (failures === undefined) return { kind: 'success', deleteIds: all, keepIds: [] };
  if (typeof failures === 'string') return { kind: 'invalid-response', deleteIds: [], keepIds: all, reason: failures };
  // An empty list (what Powertools' batch utility returns when every record succeeded) is a plain success, without
  // the Sets and filters below: this runs for every invocation.
  if (failures.ids.length === 0) return { kind: 'success', deleteIds: all, keepIds: [] };
  const known = new Set(all);
  const failed = new Set<string>();
  for (const id of failures.ids) {
    if (!known.has(id)) {
      // Its length, never its text: a function that echoes the body as its id would carry payload into the logs and the status page.
      return {
        kind: 'invalid-response',
        deleteIds: [],
        keepIds: all,
        reason: `an itemIdentifier of ${id.length} characters is not in the batch`,
      };
    }
    failed.add(id);
  }
  const keep = new Set(idsToKeep(all, failed, fifo));
  const keepIds = all.filter((id) => keep.has(id));
  const deleteIds = all.filter((id) => !keep.has(id));
  if (keepIds.length === 0) return { kind: 'success', deleteIds, keepIds };
  return { kind: 'partial', deleteIds, keepIds, failedIds: [...failed], retryDelays: failures.delays };
}

/**
 * undefined when the response does not report item failures (a JSON result that is not an object with a
 * batchItemFailures key is a plain success, so functions written for one record per invocation keep working),
 * the failed ids, or a reason string when the response is invalid.
 */
function parseBatchItemFailures(payload: string | undefined): ItemFailures | string | undefined {
  if (payload === undefined || payload.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload);
  } catch {
    // Lambda always serialises results as JSON, so this only happens with a broken response; AWS fails the batch.
    return 'the response is not valid JSON';
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  if (!('batchItemFailures' in parsed)) return undefined;
  const list = parsed.batchItemFailures;
  if (list === null || list === undefined) return undefined;
  if (!Array.isArray(list)) return 'batchItemFailures is not a list';
  const ids: string[] = [];
  // Made at the first delay: most lists have none.
  let delays: Map<string, unknown> | undefined;
  for (const item of list) {
    const entry = item !== null && typeof item === 'object' ? (item as { itemIdentifier?: unknown; retryDelaySeconds?: unknown }) : {};
    const id = entry.itemIdentifier;
    if (typeof id !== 'string' || id === '') return 'a batchItemFailures entry has no itemIdentifier';
    ids.push(id);
    if ('retryDelaySeconds' in entry) (delays ??= new Map()).set(id, entry.retryDelaySeconds);
  }
  return { ids, delays: delays ?? NO_DELAYS };
}

const NO_DELAYS: ReadonlyMap<string, unknown> = new Map();

interface ItemFailures {
  readonly ids: string[];
  readonly delays: ReadonlyMap<string, unknown>;
}

function parseFunctionError(payload: string | undefined, functionError: string): { errorType: string; errorMessage: string } {
  try {
    const parsed = JSON.parse(payload ?? '') as { errorType?: unknown; errorMessage?: unknown };
    return {
      errorType: typeof parsed.errorType === 'string' ? parsed.errorType : functionError,
      errorMessage: typeof parsed.errorMessage === 'string' ? parsed.errorMessage : '',
    };
  } catch {
    return { errorType: functionError, errorMessage: '' };
  }
}
