/**
 * What an invocation's result means for each message of the batch, following the rules of AWS's own
 * SQS event source mapping with ReportBatchItemFailures:
 * - FunctionError set (the handler threw or timed out): the whole batch failed, nothing is deleted.
 * - No batchItemFailures / null / empty list: every message succeeded.
 * - A valid list: the listed messages stay on the queue, the others are deleted.
 * - An invalid list (unparseable, an entry without itemIdentifier, an id not in the batch): the whole batch failed.
 * - FIFO: processing stops at the first failure, so that message and every later one in the batch stay.
 */
import { idsToKeep } from '../settle/fifo-rule.ts';

export interface InvocationResponse {
  /** The raw response payload (the handler's JSON result), if any. */
  readonly payload: string | undefined;
  /** Lambda's X-Amz-Function-Error (e.g. "Unhandled"). */
  readonly functionError: string | undefined;
}

export type BatchVerdict =
  | { kind: 'success'; deleteIds: string[]; keepIds: string[] }
  | { kind: 'partial'; deleteIds: string[]; keepIds: string[] }
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
  const known = new Set(all);
  const failed = new Set<string>();
  for (const id of failures) {
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
  return { kind: keepIds.length === 0 ? 'success' : 'partial', deleteIds, keepIds };
}

/**
 * undefined when the response does not report item failures (a JSON result that is not an object with a
 * batchItemFailures key is a plain success, so functions written for one record per invocation keep working),
 * the failed ids, or a reason string when the response is invalid.
 */
function parseBatchItemFailures(payload: string | undefined): string[] | string | undefined {
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
  for (const item of list) {
    const id = item !== null && typeof item === 'object' ? (item as { itemIdentifier?: unknown }).itemIdentifier : undefined;
    if (typeof id !== 'string' || id === '') return 'a batchItemFailures entry has no itemIdentifier';
    ids.push(id);
  }
  return ids;
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
