// Writes the option tables of docs/configuration.md from the option definitions (src/config/options.ts), between
// the markers `<!-- options:begin NAME -->` and `<!-- options:end NAME -->`. Run `npm run docs:options` after
// changing an option; test/unit/config/options-docs.test.ts fails while the page differs from what this would write.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { CORE_OPTIONS, TEMPORAL_OPTIONS, defaultText, envName, formatMs, type OptionDef } from '../src/config/options.ts';
import { headingAnchors } from './lib/markdown-links.ts';

/** The tables by marker name. */
const TABLES: Readonly<Record<string, readonly OptionDef[]>> = { main: CORE_OPTIONS, temporal: TEMPORAL_OPTIONS };

const DOCS = new URL('../docs/', import.meta.url);
const PAGE = 'configuration.md';

/**
 * The page with every marked options table rewritten from the definitions; throws on a missing marker.
 * An option's doc links to a section by its anchor alone (`[Priority](#priority)`), so that the definitions
 * need not know which page holds it: a link the page itself cannot resolve is pointed at the page of
 * `others` (path relative to this page -> its text) that has that heading.
 */
export function syncOptionTables(page: string, others: ReadonlyMap<string, string>): string {
  const own = headingAnchors(page);
  const elsewhere = new Map<string, string>();
  for (const [path, text] of others) for (const anchor of headingAnchors(text)) if (!elsewhere.has(anchor)) elsewhere.set(anchor, path);
  const relink = (table: string): string =>
    table.replace(/\]\(#([^)\s]+)\)/g, (link, anchor: string) => {
      const path = own.has(anchor) ? undefined : elsewhere.get(anchor);
      return path === undefined ? link : `](${path}#${anchor})`;
    });
  let out = page;
  for (const [name, defs] of Object.entries(TABLES)) {
    const begin = `<!-- options:begin ${name} -->\n`;
    const end = `<!-- options:end ${name} -->`;
    const from = out.indexOf(begin);
    const to = out.indexOf(end, from);
    if (from < 0 || to < 0) throw new Error(`docs/${PAGE} has no "${begin.trim()}" ... "${end}" block`);
    out = `${out.slice(0, from + begin.length)}${relink(optionsTable(defs))}${out.slice(to)}`;
  }
  return out;
}

/** The other pages an option's doc may link to: docs/*.md and the README, by their path from docs/. */
export function readOtherPages(): ReadonlyMap<string, string> {
  const pages = new Map<string, string>();
  for (const file of readdirSync(DOCS).sort()) {
    if (file.endsWith('.md') && file !== PAGE) pages.set(file, readFileSync(new URL(file, DOCS), 'utf8'));
  }
  pages.set('../README.md', readFileSync(new URL('../README.md', DOCS), 'utf8'));
  return pages;
}

/** docs/configuration.md as it is on disk. */
export function readOptionsPage(): string {
  return readFileSync(new URL(PAGE, DOCS), 'utf8');
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

/** The docs' lower-case sentence style: "Worker loops" -> "worker loops", but "YAML", "PEM" and "Temporal" stay. */
function meaning(d: OptionDef): string {
  if (d.doc !== undefined) return d.doc;
  const first = d.describe.split(' ', 1)[0] ?? '';
  return /^[A-Z][a-z]+$/.test(first) && first !== 'Temporal' ? `${first.toLowerCase()}${d.describe.slice(first.length)}` : d.describe;
}

if (import.meta.main) {
  const before = readOptionsPage();
  const after = syncOptionTables(before, readOtherPages());
  writeFileSync(new URL(PAGE, DOCS), after);
  process.stdout.write(
    after === before
      ? `docs/${PAGE} options tables are up to date\n`
      : `docs/${PAGE} options tables rewritten from src/config/options.ts\n`,
  );
}
