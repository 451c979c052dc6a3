import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { parse } from 'yaml';
import parseArgv from 'yargs-parser';
import { camel, defaultText, envName, flagOf, kebab, rangeText, type OptionDef } from './options.ts';

/**
 * Stage 1 of the configuration's three (here: raw -> with-defaults.ts -> config.ts; see config.ts), and the
 * command-line surface: every option (defined in options.ts) is a flag, a WORKERLESS_<UPPER_SNAKE> environment
 * variable and a key of the optional --config file (YAML or JSON). This module only collects raw values and
 * where they came from (flag > env > file); with-defaults.ts types them and fills in defaults, config.ts
 * compiles them.
 */
/** Where a raw value came from, used in error messages: `--concurrency`, `WORKERLESS_CONCURRENCY`, `concurrency in wl.yaml`. */
export interface RawValue {
  readonly value: unknown;
  readonly origin: string;
}

/** Raw options by flag name, kebab-case (`batch-size`), whichever spelling the file used. */
export type RawOptions = ReadonlyMap<string, RawValue>;

export interface CliResult {
  readonly raw: RawOptions;
  readonly problems: string[];
  readonly warnings: string[];
  readonly help: boolean;
  readonly version: boolean;
}

/**
 * Parses argv, the environment and the config file. Never throws and never exits: problems are returned
 * so that main can report all of them at once.
 */
export function collectOptions(argv: readonly string[], env: NodeJS.ProcessEnv, defs: readonly OptionDef[]): CliResult {
  const problems: string[] = [];
  const warnings: string[] = [];
  const byFlag = new Map(defs.map((d) => [d.flag, d]));
  // yargs's own parser (what yargs runs underneath): the rest of yargs builds --help and commands, which the
  // options table does here, and costs about 11 MiB resident (bench/README.md).
  const parsed = parseArgv([...argv], {
    boolean: ['help', 'version'],
    alias: { help: ['h'] },
    string: defs.map((d) => d.flag),
    configuration: { 'duplicate-arguments-array': false, 'strip-aliased': true, 'boolean-negation': false },
  }) as Record<string, unknown> & { _: (string | number)[] };

  const known = new Set(['_', '$0', 'help', 'h', 'version']);
  for (const d of defs) known.add(d.flag).add(camel(d.flag));
  const keys = Object.keys(parsed);
  for (const key of keys) {
    // The parser adds a camelCase twin of every kebab-case flag; report each unknown flag once, as typed.
    if (known.has(key) || (key !== kebab(key) && keys.includes(kebab(key)))) continue;
    problems.push(`unknown option --${key}${suggest(key, defs)}`);
  }
  for (const extra of parsed._) problems.push(`unexpected argument "${String(extra)}" (options take the form --name value)`);

  const raw = new Map<string, RawValue>();
  // Lowest precedence first: file, then env, then flags overwrite.
  const configFlag = parsed['config'] as string | undefined;
  const configPath = configFlag ?? env[envName('config')];
  if (configPath !== undefined && configPath !== '') {
    loadConfigFile(configPath, byFlag, raw, problems);
  }
  for (const d of defs) {
    const value = env[envName(d.flag)];
    if (value !== undefined) raw.set(d.flag, { value, origin: envName(d.flag) });
  }
  const envNames = new Set(defs.map((d) => envName(d.flag)));
  for (const name of Object.keys(env)) {
    if (name.startsWith('WORKERLESS_') && !envNames.has(name) && !INTERNAL_ENV.has(name)) {
      warnings.push(`ignoring unknown environment variable ${name}`);
    }
  }
  for (const d of defs) {
    const value = parsed[d.flag];
    if (value === undefined) continue;
    if (value === '' && d.kind !== 'boolean') {
      problems.push(`--${d.flag} needs a value`);
      continue;
    }
    raw.set(d.flag, { value: value === '' ? 'true' : value, origin: `--${d.flag}` });
  }
  return { raw, problems, warnings, help: parsed['help'] === true, version: parsed['version'] === true };
}

/** Variables of the project's own scripts, which are not daemon options. */
const INTERNAL_ENV = new Set(['WORKERLESS_CACHE_DIR']);

function loadConfigFile(path: string, byFlag: Map<string, OptionDef>, raw: Map<string, RawValue>, problems: string[]): void {
  let data: unknown;
  // Loaded only for a config file: the YAML parser is about 10 MiB of resident memory a run does not need otherwise.
  const parseYaml = (createRequire(import.meta.url)('yaml') as { parse: typeof parse }).parse;
  try {
    data = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    const e = err as { code?: string; message?: string };
    problems.push(`--config cannot read "${path}": ${e.code ?? (e.message ?? String(err)).split('\n')[0]}`);
    return;
  }
  for (const [flag, value] of fileOptions(data, path, [...byFlag.values()], problems)) raw.set(flag, value);
}

/**
 * The options a parsed config file holds (a mapping of option names to values), by flag, each with `where` as its
 * origin (`batch-size in wl.yaml`); unknown keys and a file that is not a mapping go to `problems`. `workerless
 * migrate` reads the config it prints through this too, so what it prints is what the daemon would read.
 */
export function fileOptions(data: unknown, where: string, defs: readonly OptionDef[], problems: string[]): Map<string, RawValue> {
  const raw = new Map<string, RawValue>();
  if (data === null || data === undefined) return raw;
  if (typeof data !== 'object' || Array.isArray(data)) {
    problems.push(`--config "${where}" must hold a mapping of option names to values`);
    return raw;
  }
  const known = new Set(defs.map((d) => d.flag));
  for (const [key, value] of Object.entries(data)) {
    const flag = flagOf(key);
    if (!known.has(flag) || flag === 'config') {
      problems.push(`unknown option "${key}" in ${where}${suggest(kebab(key), defs)}`);
      continue;
    }
    raw.set(flag, { value, origin: `${kebab(key)} in ${where}` });
  }
  return raw;
}

function suggest(name: string, defs: readonly OptionDef[]): string {
  let best: string | undefined;
  let bestDistance = 3;
  for (const d of defs) {
    const dist = distance(name, d.flag);
    if (dist < bestDistance) [best, bestDistance] = [d.flag, dist];
  }
  return best ? ` (did you mean --${best}?)` : '';
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

/** The --help text: every option with its env var and default. */
export function helpText(defs: readonly OptionDef[], extra: string): string {
  const lines = [
    'Usage: workerless --function <name|ARN|name:alias> --queues <list> [options]',
    '       workerless check [the same options]',
    '       workerless migrate --function <name> [--cutover | --rollback]   (see workerless migrate --help)',
    '',
    'Dispatches messages from prioritised SQS queues to a Lambda function (or several: routes in the --config file).',
    '',
    '"workerless check" validates the configuration as a run does, then prints one line per check and exits 0',
    'when all pass: every queue resolves, the functions accept a DryRun invoke, CloudWatch takes one CheckRun',
    'datum (when metrics are on), and Temporal answers DescribeTaskQueue (when spillover is on).',
    '',
    '"workerless migrate" prints the config that does what a function\'s SQS event source mappings do, and switches',
    'from the trigger to workerless (--cutover) and back (--rollback); see docs/migrate.md.',
  ];
  let group: string | undefined;
  const width = Math.max(...defs.map((d) => d.flag.length)) + 4;
  for (const d of defs) {
    if (d.group !== group) {
      group = d.group;
      lines.push('', group ?? 'Options:');
    }
    lines.push(`  --${d.flag.padEnd(width)}${helpDescription(d)}`);
    lines.push(`  ${' '.repeat(width + 2)}env ${envName(d.flag)}`);
  }
  lines.push('', 'Other:', '  --help, -h    Show this help', '  --version     Show the version', '', extra);
  return lines.join('\n');
}

/** One option's --help description: what it does, its range or allowed values, and its default. */
export function helpDescription(d: OptionDef): string {
  const range = rangeText(d);
  const def = defaultText(d);
  return `${d.describe}${range !== undefined ? ` (${range})` : ''}${def !== undefined ? ` [default: ${def}]` : ''}`;
}
