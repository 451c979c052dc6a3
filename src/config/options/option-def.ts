/**
 * What an option definition is (the tables are route.ts, daemon.ts, queue-settings.ts and temporal.ts; options.ts
 * puts them together), and the pure helpers that read one: its env var, its camelCase and kebab-case names, and its
 * default and range as --help, docs/configuration.md and the CDK's generated props show them. Nothing here depends
 * on a table.
 */

interface Common {
  /** kebab-case flag name without dashes; also WORKERLESS_<UPPER_SNAKE>, the config-file key and the raw options' key. */
  readonly flag: string;
  /** --help heading the option is listed under; also picks the docs table. */
  readonly group: string;
  /** The --help line; the range or allowed values and the default are added from the definition. */
  readonly describe: string;
  /** The docs table's "meaning" cell (markdown), when it says more than `describe`. */
  readonly doc?: string;
  /** When the option is required, in words ("with queues"); shown in the docs table's default column. */
  readonly required?: string;
  /** The default in words, when there is no fixed `default` or it depends on other values. */
  readonly defaultText?: string;
  /** The docs table's "values" cell for a string option (markdown); numeric and enum options derive theirs. */
  readonly valuesText?: string;
  /** A credential: error messages show "***" instead of its value. */
  readonly secret?: boolean;
  /**
   * A route option (ROUTE_GROUPS) that names queues: each route of the `routes` list gives its own, and one given
   * outside `routes` is an error with them. The other route options given outside `routes` are every route's default.
   */
  readonly ownToRoute?: true;
  /** A `name=N,...` list that sets this `queue-options` key per queue, read with the key's range. */
  readonly perQueue?: string;
}

/** A whole number (`integer`) or any number (`number`) from `min` to `max`. */
interface NumberDef extends Common {
  readonly kind: 'integer' | 'number';
  readonly min: number;
  readonly max: number;
  readonly default?: number;
}

/** "500ms", "5s", "10m" or a bare number of seconds; read in milliseconds. */
interface DurationDef extends Common {
  readonly kind: 'duration';
  readonly minMs: number;
  readonly maxMs: number;
  /** In milliseconds. */
  readonly default?: number;
}

/** A switch: given alone (`--temporal-tls`) it means true; on/off, true/false, yes/no, 1/0. */
interface BooleanDef extends Common {
  readonly kind: 'boolean';
  readonly default?: boolean;
}

interface EnumDef extends Common {
  readonly kind: 'enum';
  readonly values: readonly string[];
  readonly default?: string;
}

/** Text; when `pattern` is set a value must match it, and `mismatch` is the error ("must be ..."). */
interface StringDef extends Common {
  readonly kind: 'string';
  readonly pattern?: RegExp;
  readonly mismatch?: string;
  readonly default?: string;
}

/** An http(s) URL. */
interface UrlDef extends Common {
  readonly kind: 'url';
}

/** A file that must be readable at start-up (a missing certificate is a start-up error, not a retry loop). */
interface PathDef extends Common {
  readonly kind: 'path';
}

/** A mapping or list in the config file, or JSON in the flag or env var. */
interface StructuredDef extends Common {
  readonly kind: 'structured';
}

export type OptionDef = NumberDef | DurationDef | BooleanDef | EnumDef | StringDef | UrlDef | PathDef | StructuredDef;

export function envName(flag: string): string {
  return `WORKERLESS_${flag.replace(/-/g, '_').toUpperCase()}`;
}

export function camel(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** batchSize -> batch-size: the kebab-case form of a name, in which flags, env names and raw options are keyed. */
export function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/**
 * The flag a config-file or route key names: flags are kebab-case (`batch-size`); the file also takes the
 * camelCase spelling (`batchSize`), as it always has.
 */
export function flagOf(key: string): string {
  return kebab(camel(key));
}

/** 0, 500ms, 5s, 10m: the largest unit the value is a whole number of (no hours: the parser takes ms, s and m). */
export function formatMs(ms: number): string {
  if (ms === 0) return '0';
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** The default as --help and docs/configuration.md show it, or undefined when there is none to show. */
export function defaultText(d: OptionDef): string | undefined {
  if (d.defaultText !== undefined) return d.defaultText;
  if (!('default' in d) || d.default === undefined) return undefined;
  if (d.kind === 'duration') return formatMs(d.default);
  if (d.kind === 'boolean') return d.default ? 'on' : 'off';
  return String(d.default);
}

/** The allowed range or values in plain text ("1-10000", "1s-12h", "on-success, never", "on/off"). */
export function rangeText(d: OptionDef): string | undefined {
  switch (d.kind) {
    case 'integer':
    case 'number':
      return `${d.min}-${d.max}`;
    case 'duration':
      return `${formatMs(d.minMs)}-${formatMs(d.maxMs)}`;
    case 'enum':
      return d.values.join(', ');
    case 'boolean':
      return 'on/off';
    default:
      return undefined;
  }
}
