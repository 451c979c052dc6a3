// `workerless check` for a route whose queues are found, not listed: what its prefix or tag matches now.
import { callErrorOf, firstLine } from '../core/errors.ts';
import type { CheckResult } from './check-ports.ts';

/** Names a check line lists; the count is always whole. */
const NAMES_LISTED = 20;

/** What the selector found: a pass listing the queues, or a failure when it matches nothing. */
export function discoveryLine(described: string, found: readonly string[], unreadable: readonly string[]): CheckResult {
  const name = `queues by ${described}`;
  const skipped = unreadable.length > 0 ? `; tags unreadable on ${unreadable.length} (skipped): ${listed(unreadable)}` : '';
  if (found.length === 0) {
    return {
      name,
      ok: false,
      detail: `matches no queue${skipped}: a run starts with a warning and receives nothing until a matching queue appears`,
    };
  }
  return { name, ok: true, detail: `${found.length} found: ${listed(found)}${skipped}` };
}

/** A failed ListQueues, in the words of a check line and of the start-up's error. */
export function discoveryFailure(described: string, err: unknown): string {
  const e = callErrorOf(err);
  const needs =
    e.code === 'AccessDenied' || e.code === 'AccessDeniedException' ? ' (needs sqs:ListQueues and, for a tag, sqs:ListQueueTags)' : '';
  return `queues by ${described}: ListQueues failed: ${e.code}: ${firstLine(e.message)}${needs}`;
}

function listed(names: readonly string[]): string {
  return names.length > NAMES_LISTED
    ? `${names.slice(0, NAMES_LISTED).join(', ')} and ${names.length - NAMES_LISTED} more`
    : names.join(', ');
}
