// The --queues option's format, read in the compile stage (routes.ts): the queues and their order mode, which
// src/receive/queue-order.ts draws from.
import type { OrderMode, QueueList, QueueSpec } from '../receive/queue-order.ts';

/**
 * Parses the `--queues` value. Returns the list, or the problems found (every one of them).
 * A full queue URL contains ':' (https://...), so a weight is only split off when what follows the last ':'
 * looks like a number and what precedes it is not a bare URL scheme.
 */
export function parseQueueList(value: string, option = '--queues'): { list?: QueueList; problems: string[] } {
  const problems: string[] = [];
  const entries = value.split(',').map((s) => s.trim());
  const specs: QueueSpec[] = [];
  let weighted = 0;
  let unweighted = 0;
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    if (entry === '') {
      problems.push(`${option} has an empty queue name at position ${i + 1}, got "${value}"`);
      return;
    }
    const { ref, weightText } = splitWeight(entry);
    if (ref === '') {
      problems.push(`${option} has an empty queue name in "${entry}"`);
      return;
    }
    let weight = 1;
    if (weightText !== undefined) {
      weighted++;
      if (!/^\d+$/.test(weightText) || Number(weightText) < 1 || Number(weightText) > 1000) {
        problems.push(`${option} weight for "${ref}" must be an integer from 1 to 1000, got "${weightText}"`);
      } else {
        weight = Number(weightText);
      }
    } else {
      unweighted++;
    }
    if (seen.has(ref)) problems.push(`${option} lists "${ref}" more than once`);
    seen.add(ref);
    specs.push({ ref, weight });
  });
  if (weighted > 0 && unweighted > 0) {
    problems.push(`${option} mixes weighted and unweighted queues (give every queue a weight, or none), got "${value}"`);
  }
  if (problems.length > 0) return { problems };
  let mode: OrderMode = 'strict';
  if (weighted > 0) mode = specs.every((s) => s.weight === specs[0]?.weight) ? 'random' : 'weighted';
  return { list: { mode, queues: specs }, problems };
}

function splitWeight(entry: string): { ref: string; weightText?: string } {
  const at = entry.lastIndexOf(':');
  if (at < 0) return { ref: entry };
  const after = entry.slice(at + 1);
  const before = entry.slice(0, at);
  // "https://sqs..." : the only ':' belongs to the scheme, not a weight.
  if (/^[a-z][a-z0-9+.-]*$/i.test(before) && after.startsWith('//')) return { ref: entry };
  // A URL with a port and no weight: "http://localhost:4566/000000000000/q" has ':' before a path.
  if (after.includes('/')) return { ref: entry };
  return { ref: before.trim(), weightText: after.trim() };
}

/** The `--queues-tag` value (its form checked by the option's pattern): the key up to the first `=`, the value after it. */
export function parseQueueTag(text: string): { key: string; value: string } {
  const at = text.indexOf('=');
  return { key: text.slice(0, at), value: text.slice(at + 1) };
}
