import { readFileSync } from 'node:fs';
import type { RawOptions, RawValue } from './cli.ts';
import { defaultOf, formatMs, optionDef, type Flag, type OptionDef, type OptionValue } from './options.ts';

/** Whether a file can be read: undefined if it can, else the reason (ENOENT, EACCES, EISDIR). */
export type FileCheck = (path: string) => string | undefined;

/** The default FileCheck: reads the file, as the code that uses it will (PEM files are small). */
export function readableFile(path: string): string | undefined {
  try {
    readFileSync(path);
    return undefined;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return e.code ?? (e.message || String(err)).split('\n')[0];
  }
}

/**
 * Stage 2 of the configuration's three (cli.ts: raw -> here: with defaults -> config.ts: compiled): the raw
 * options (`RawOptions`, by flag) with every default of the options table filled in. `addDefaults(raw)` makes them;
 * the compile stage reads them.
 */
export function addDefaults(raw: RawOptions, checkFile: FileCheck = readableFile): OptionsWithDefaults {
  return new OptionsWithDefaults(raw, checkFile);
}

/**
 * Typed values out of raw options by flag, through the option's definition (src/config/options.ts): its kind,
 * range or allowed values and default. Records one problem per invalid value in the form
 * `--flag must be ..., got "value" (from WORKERLESS_FLAG)`. Unset or empty values read as the default
 * (undefined without one), and so do invalid ones, whose problem is recorded. A value is checked when the
 * compile stage reads it, so problems come in the order its rules ask and an unused option's file is never
 * read. Read each option once: every read of an invalid value records its problem again.
 */
export class OptionsWithDefaults {
  readonly problems: string[] = [];
  /** The raw options these were made from (a route's options inherit some of them). */
  readonly raw: RawOptions;
  readonly #checkFile: FileCheck;

  /** `checkFile` is the only I/O done here (for path options); tests pass a fake. */
  constructor(raw: RawOptions, checkFile: FileCheck = readableFile) {
    this.raw = raw;
    this.#checkFile = checkFile;
  }

  /** Whether a value was given (an invalid one too). */
  has(flag: Flag): boolean {
    return this.#get(flag) !== undefined;
  }

  /** The option's value, checked against its definition; its default when unset or invalid. */
  read<F extends Flag>(flag: F): OptionValue<F> {
    return this.given(flag) ?? defaultOf(flag);
  }

  /** The value given for the option, checked against its definition; undefined when unset or invalid. */
  given<F extends Flag>(flag: F): NonNullable<OptionValue<F>> | undefined {
    return this.#value(optionDef(flag)) as NonNullable<OptionValue<F>> | undefined;
  }

  #value(d: OptionDef): string | number | boolean | undefined {
    switch (d.kind) {
      case 'integer':
      case 'number':
        return this.#number(d.flag, d.min, d.max, d.kind === 'integer');
      case 'duration':
        return this.#durationMs(d.flag, d.minMs, d.maxMs);
      case 'boolean':
        return this.#boolean(d.flag);
      case 'enum':
        return this.#oneOf(d.flag, d.values);
      case 'string':
        return d.pattern ? this.#matching(d.flag, d.pattern, d.mismatch ?? 'has an invalid form') : this.#string(d.flag);
      case 'url':
        return this.#url(d.flag);
      case 'path':
        return this.#readablePath(d.flag);
      case 'structured':
        throw new Error(`--${d.flag} is structured: read it with structured()`);
    }
  }

  /** The raw value, or undefined when unset or empty (an empty env var, as compose files often pass, is unset). */
  #get(flag: string): RawValue | undefined {
    const v = this.raw.get(flag);
    if (v === undefined || v.value === null || v.value === undefined) return undefined;
    if (typeof v.value === 'string' && v.value.trim() === '') return undefined;
    if (Array.isArray(v.value) && v.value.length === 0) return undefined;
    return v;
  }

  #fail(flag: string, v: RawValue, what: string, secret = false): undefined {
    const origin = v.origin === `--${flag}` ? '' : ` (from ${v.origin})`;
    this.problems.push(`--${flag} ${what}, got ${secret ? '"***"' : JSON.stringify(display(v.value))}${origin}`);
    return undefined;
  }

  #string(flag: string): string | undefined {
    const v = this.#get(flag);
    if (v === undefined) return undefined;
    if (Array.isArray(v.value))
      return v.value.every((x) => typeof x === 'string' || typeof x === 'number')
        ? v.value.join(',')
        : this.#fail(flag, v, 'must be a string or a list of strings');
    if (typeof v.value === 'object' && v.value !== null) return this.#fail(flag, v, 'must be a string');
    return String(v.value).trim();
  }

  #number(flag: string, min: number, max: number, integer: boolean): number | undefined {
    const v = this.#get(flag);
    if (v === undefined) return undefined;
    const text = String(v.value).trim();
    const n = Number(text);
    if (text === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      return this.#fail(flag, v, `must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
    }
    return n;
  }

  #boolean(flag: string): boolean | undefined {
    const v = this.#get(flag);
    if (v === undefined) return undefined;
    if (typeof v.value === 'boolean') return v.value;
    const text = String(v.value).trim().toLowerCase();
    if (['on', 'true', '1', 'yes'].includes(text)) return true;
    if (['off', 'false', '0', 'no'].includes(text)) return false;
    return this.#fail(flag, v, 'must be true or false (on/off)');
  }

  #oneOf(flag: string, values: readonly string[]): string | undefined {
    const s = this.#string(flag);
    if (s === undefined) return undefined;
    if (values.includes(s)) return s;
    return this.#fail(flag, this.#get(flag)!, `must be one of ${values.join(', ')}`);
  }

  #matching(flag: string, pattern: RegExp, what: string): string | undefined {
    const s = this.#string(flag);
    if (s === undefined) return undefined;
    return pattern.test(s) ? s : this.#fail(flag, this.#get(flag)!, what);
  }

  /** "500ms", "5s", "10m" or a bare number of seconds, in milliseconds. */
  #durationMs(flag: string, minMs: number, maxMs: number): number | undefined {
    const v = this.#get(flag);
    if (v === undefined) return undefined;
    const ms = parseDurationMs(v.value);
    if (ms === undefined || ms < minMs || ms > maxMs) {
      return this.#fail(flag, v, `must be a duration from ${formatMs(minMs)} to ${formatMs(maxMs)} (e.g. 500ms, 5s, 10m)`);
    }
    return ms;
  }

  #url(flag: string): string | undefined {
    const s = this.#string(flag);
    if (s === undefined) return undefined;
    try {
      const u = new URL(s);
      if (u.protocol === 'http:' || u.protocol === 'https:') return s;
    } catch {
      // reported below
    }
    return this.#fail(flag, this.#get(flag)!, 'must be an http(s) URL');
  }

  /** A file path that must be readable now (so a missing certificate is a start-up error, not a retry loop). */
  #readablePath(flag: string): string | undefined {
    const path = this.#string(flag);
    if (path === undefined) return undefined;
    const reason = this.#checkFile(path);
    if (reason === undefined) return path;
    const origin = this.#get(flag)!.origin;
    this.problems.push(`--${flag} cannot read ${JSON.stringify(path)}: ${reason}${origin === `--${flag}` ? '' : ` (from ${origin})`}`);
    return undefined;
  }

  /**
   * Records that a value was given where it does not belong (an option without the one it needs), in the
   * usual form with the value and where it came from; secret options show as "***". No-op when unset.
   */
  reject(flag: Flag, what: string): void {
    const v = this.#get(flag);
    if (v !== undefined) this.#fail(flag, v, what, optionDef(flag).secret ?? false);
  }

  /** Adds a problem that is not about a single value's format. */
  problem(message: string): void {
    this.problems.push(message);
  }

  /**
   * A structured value (a mapping or list from the config file), or a JSON string from a flag or env var;
   * undefined when unset, or when it is neither (recorded as a problem).
   */
  structured(flag: Flag): { value: unknown; origin: string } | undefined {
    const v = this.#get(flag);
    if (v === undefined) return undefined;
    if (typeof v.value !== 'string') return { value: v.value, origin: v.origin };
    try {
      return { value: JSON.parse(v.value) as unknown, origin: v.origin };
    } catch {
      return this.#fail(flag, v, 'must be JSON (or a mapping in the --config file)');
    }
  }

  /** Where the value came from (`--flag`, `WORKERLESS_FLAG`, `flag in wl.yaml`); undefined when unset. */
  origin(flag: Flag): string | undefined {
    return this.raw.get(flag)?.origin;
  }
}

function display(value: unknown): unknown {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Parses "500ms", "5s", "10m", "1.5s" or a bare number of seconds into milliseconds; undefined if invalid. */
export function parseDurationMs(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) : undefined;
  if (typeof value !== 'string') return undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(value);
  if (!match) return undefined;
  const factor = match[2] === 'ms' ? 1 : match[2] === 'm' ? 60_000 : 1000;
  return Math.round(Number(match[1]) * factor);
}
