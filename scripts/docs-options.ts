// Writes the README's option tables from the option definitions (src/config/options.ts), between the markers
// `<!-- options:begin NAME -->` and `<!-- options:end NAME -->`. Run `npm run docs:options` after changing an
// option; test/unit/config/options-readme.test.ts fails while the README differs from what this would write.
import { readFileSync, writeFileSync } from 'node:fs';
import { CORE_OPTIONS, TEMPORAL_OPTIONS, defaultText, envName, formatMs, type OptionDef } from '../src/config/options.ts';

/** The README tables by marker name. */
const TABLES: Readonly<Record<string, readonly OptionDef[]>> = { main: CORE_OPTIONS, temporal: TEMPORAL_OPTIONS };

const README = new URL('../README.md', import.meta.url);

/** The README with every marked options table rewritten from the definitions; throws on a missing marker. */
export function syncReadme(readme: string): string {
  let out = readme;
  for (const [name, defs] of Object.entries(TABLES)) {
    const begin = `<!-- options:begin ${name} -->\n`;
    const end = `<!-- options:end ${name} -->`;
    const from = out.indexOf(begin);
    const to = out.indexOf(end, from);
    if (from < 0 || to < 0) throw new Error(`README.md has no "${begin.trim()}" ... "${end}" block`);
    out = `${out.slice(0, from + begin.length)}${optionsTable(defs)}${out.slice(to)}`;
  }
  return out;
}

export function optionsTable(defs: readonly OptionDef[]): string {
  const rows = defs.map((d) => cells([`\`--${d.flag}\``, `\`${envName(d.flag)}\``, defaultCell(d), valuesCell(d), meaning(d)]));
  return `${cells(['flag', 'env', 'default', 'values', 'meaning'])}${cells(['---', '---', '---', '---', '---'])}${rows.join('')}`;
}

function cells(values: readonly string[]): string {
  return `| ${values.map((v) => v.replace(/\|/g, '\\|')).join(' | ')} |\n`;
}

function defaultCell(d: OptionDef): string {
  if (d.required !== undefined) return `(required ${d.required})`;
  if (d.defaultText !== undefined) return d.defaultText;
  const text = defaultText(d);
  return text === undefined ? '' : `\`${text}\``;
}

function valuesCell(d: OptionDef): string {
  switch (d.kind) {
    case 'integer':
    case 'number':
      return `${d.min}-${d.max}${d.kind === 'number' ? ' (fractions too)' : ''}`;
    case 'duration':
      return `${formatMs(d.minMs)}-${formatMs(d.maxMs)}`;
    case 'enum':
      return d.values.map((v) => `\`${v}\``).join(', ');
    case 'boolean':
      return '`on`/`off`, `true`/`false`';
    case 'url':
      return 'http(s) URL';
    case 'path':
      return 'path to a readable file';
    default:
      return d.valuesText ?? '';
  }
}

/** The README's lower-case sentence style: "Worker loops" -> "worker loops", but "YAML", "PEM" and "Temporal" stay. */
function meaning(d: OptionDef): string {
  if (d.doc !== undefined) return d.doc;
  const first = d.describe.split(' ', 1)[0] ?? '';
  return /^[A-Z][a-z]+$/.test(first) && first !== 'Temporal' ? `${first.toLowerCase()}${d.describe.slice(first.length)}` : d.describe;
}

if (import.meta.main) {
  const before = readFileSync(README, 'utf8');
  const after = syncReadme(before);
  writeFileSync(README, after);
  process.stdout.write(
    after === before ? 'README.md options tables are up to date\n' : 'README.md options tables rewritten from src/config/options.ts\n',
  );
}
