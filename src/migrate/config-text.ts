/**
 * The migrated config as the file `workerless migrate` prints: YAML the daemon takes as --config, headed by
 * comments that say what SQS keeps doing and what differs from the trigger, so the file carries its own caveats.
 */
import { Document, isMap, isPair, isScalar, isSeq, visit } from 'yaml';
import type { Migration } from './migrate-config.ts';

/** Comment lines wrap here, so the file reads in a terminal. */
const WIDTH = 116;

export function configText(functionName: string, migration: Migration): string {
  const lines = [
    `# workerless config for the SQS event source mappings of ${functionName} (made by workerless migrate).`,
    '# Run it with: workerless --config <this file>; then "workerless migrate --cutover" disables the mappings.',
  ];
  if (migration.notes.length > 0) lines.push('#', '# Kept by SQS, whoever reads the queues:', ...migration.notes.flatMap(item));
  if (migration.differences.length > 0)
    lines.push('#', '# What differs from the trigger, and why:', ...migration.differences.flatMap(item));
  const doc = new Document(migration.config);
  // Each filter pattern on one line, as the trigger's console and docs/delivery.md show them.
  visit(doc, {
    Pair(_, pair) {
      if (isPair(pair) && isScalar(pair.key) && pair.key.value === 'filters' && isSeq(pair.value))
        for (const pattern of pair.value.items) if (isMap(pattern)) pattern.flow = true;
    },
  });
  return `${lines.join('\n')}\n${doc.toString({ lineWidth: 0 })}`;
}

/** One list item of the header, wrapped at WIDTH with its continuation lines indented. */
function item(text: string): string[] {
  const out: string[] = [];
  let line = '#   -';
  for (const word of text.split(' ')) {
    if (line.length + 1 + word.length > WIDTH && line.trim() !== '#   -') {
      out.push(line);
      line = '#    ';
    }
    line += ` ${word}`;
  }
  out.push(line);
  return out;
}
