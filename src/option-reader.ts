import { readFileSync } from 'node:fs';
import type { RawOptions, RawValue } from './cli.ts';

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
 * Reads typed values out of raw options, recording one problem per invalid value in the form
 * `--flag must be ..., got "value" (from WORKERLESS_FLAG)`. Unset or empty values read as undefined.
 */
export class OptionReader {
  readonly problems: string[] = [];
  readonly #raw: RawOptions;
  readonly #checkFile: FileCheck;

  /** `checkFile` is the only I/O the reader does (for path options); tests pass a fake. */
  constructor(raw: RawOptions, checkFile: FileCheck = readableFile) {
    this.#raw = raw;
    this.#checkFile = checkFile;
  }

  has(name: string): boolean {
    return this.#get(name) !== undefined;
  }

  /** The raw value, or undefined when unset or empty (an empty env var, as compose files often pass, is unset). */
  #get(name: string): RawValue | undefined {
    const v = this.#raw.get(name);
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

  string(name: string, flag: string): string | undefined {
    const v = this.#get(name);
    if (v === undefined) return undefined;
    if (Array.isArray(v.value)) return v.value.every((x) => typeof x === 'string' || typeof x === 'number') ? v.value.join(',') : this.#fail(flag, v, 'must be a string or a list of strings');
    if (typeof v.value === 'object' && v.value !== null) return this.#fail(flag, v, 'must be a string');
    return String(v.value).trim();
  }

  number(name: string, flag: string, min: number, max: number, opts: { integer?: boolean } = {}): number | undefined {
    const v = this.#get(name);
    if (v === undefined) return undefined;
    const text = String(v.value).trim();
    const n = Number(text);
    const integer = opts.integer ?? true;
    if (text === '' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      return this.#fail(flag, v, `must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}`);
    }
    return n;
  }

  boolean(name: string, flag: string): boolean | undefined {
    const v = this.#get(name);
    if (v === undefined) return undefined;
    if (typeof v.value === 'boolean') return v.value;
    const text = String(v.value).trim().toLowerCase();
    if (['on', 'true', '1', 'yes'].includes(text)) return true;
    if (['off', 'false', '0', 'no'].includes(text)) return false;
    return this.#fail(flag, v, 'must be true or false (on/off)');
  }

  oneOf<T extends string>(name: string, flag: string, values: readonly T[]): T | undefined {
    const s = this.string(name, flag);
    if (s === undefined) return undefined;
    if ((values as readonly string[]).includes(s)) return s as T;
    return this.#fail(flag, this.#raw.get(name)!, `must be one of ${values.join(', ')}`);
  }

  matching(name: string, flag: string, pattern: RegExp, what: string): string | undefined {
    const s = this.string(name, flag);
    if (s === undefined) return undefined;
    return pattern.test(s) ? s : this.#fail(flag, this.#raw.get(name)!, what);
  }

  /** "500ms", "5s", "10m" or a bare number of seconds, in milliseconds. */
  durationMs(name: string, flag: string, minMs: number, maxMs: number): number | undefined {
    const v = this.#get(name);
    if (v === undefined) return undefined;
    const ms = parseDurationMs(v.value);
    if (ms === undefined || ms < minMs || ms > maxMs) {
      return this.#fail(flag, v, `must be a duration from ${formatMs(minMs)} to ${formatMs(maxMs)} (e.g. 500ms, 5s, 10m)`);
    }
    return ms;
  }

  url(name: string, flag: string): string | undefined {
    const s = this.string(name, flag);
    if (s === undefined) return undefined;
    try {
      const u = new URL(s);
      if (u.protocol === 'http:' || u.protocol === 'https:') return s;
    } catch {
      // reported below
    }
    return this.#fail(flag, this.#raw.get(name)!, 'must be an http(s) URL');
  }

  /** A file path that must be readable now (so a missing certificate is a start-up error, not a retry loop). */
  readablePath(name: string, flag: string): string | undefined {
    const path = this.string(name, flag);
    if (path === undefined) return undefined;
    const reason = this.#checkFile(path);
    if (reason === undefined) return path;
    const origin = this.#raw.get(name)!.origin;
    this.problems.push(`--${flag} cannot read ${JSON.stringify(path)}: ${reason}${origin === `--${flag}` ? '' : ` (from ${origin})`}`);
    return undefined;
  }

  /**
   * Records that a value was given where it does not belong (an option without the one it needs), in the
   * usual form with the value and where it came from; `secret` values show as "***". No-op when unset.
   */
  reject(name: string, flag: string, what: string, opts: { secret?: boolean } = {}): void {
    const v = this.#get(name);
    if (v !== undefined) this.#fail(flag, v, what, opts.secret);
  }

  /** Adds a problem that is not about a single value's format. */
  problem(message: string): void {
    this.problems.push(message);
  }

  /**
   * A structured value (a mapping or list from the config file), or a JSON string from a flag or env var;
   * undefined when unset, or when it is neither (recorded as a problem).
   */
  structured(name: string, flag: string): { value: unknown; origin: string } | undefined {
    const v = this.#get(name);
    if (v === undefined) return undefined;
    if (typeof v.value !== 'string') return { value: v.value, origin: v.origin };
    try {
      return { value: JSON.parse(v.value) as unknown, origin: v.origin };
    } catch {
      return this.#fail(flag, v, 'must be JSON (or a mapping in the --config file)');
    }
  }

  origin(name: string): string | undefined {
    return this.#raw.get(name)?.origin;
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

function formatMs(ms: number): string {
  if (ms === 0) return '0';
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
