/**
 * How OpenTelemetry's specifications say every OTEL_* variable is read (an empty variable is unset, a traces-specific
 * exporter variable wins over the general one, lists are percent-encoded key=value pairs). Kept apart from
 * otel-env.ts, which decides which variables workerless honours and what they may hold.
 */

/** The OTEL_* variables as the specification reads them, and where the problems found in them go. */
export interface OtelVars {
  /** The trimmed value; an empty variable counts as unset. */
  readonly read: (name: string) => string | undefined;
  /** OTEL_EXPORTER_OTLP_TRACES_<suffix>, else OTEL_EXPORTER_OTLP_<suffix>, with the name of the one set. */
  readonly pick: (suffix: string) => { variable: string; value: string } | undefined;
  readonly problem: (variable: string, value: string, reason: string) => void;
}

export function otelVars(env: NodeJS.ProcessEnv, problem: OtelVars['problem']): OtelVars {
  const read = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  return {
    read,
    // The traces-specific variable wins over the general one, as the OTLP exporter specification says.
    pick: (suffix) => {
      for (const variable of [`OTEL_EXPORTER_OTLP_TRACES_${suffix}`, `OTEL_EXPORTER_OTLP_${suffix}`]) {
        const value = read(variable);
        if (value !== undefined) return { variable, value };
      }
      return undefined;
    },
    problem,
  };
}

/** The W3C-baggage-like `key=value,key2=value2` list the OTEL_* variables use; values are percent-decoded. */
export function parseKeyValues(raw: string, bad: (entry: string) => void): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of raw.split(',')) {
    if (entry.trim() === '') continue;
    const eq = entry.indexOf('=');
    const key = eq < 0 ? '' : entry.slice(0, eq).trim();
    if (key === '') {
      bad(entry.trim());
      continue;
    }
    try {
      out[key] = decodeURIComponent(entry.slice(eq + 1).trim());
    } catch {
      bad(entry.trim());
    }
  }
  return out;
}

export function httpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

export function integer(value: string): number | undefined {
  return /^\d+$/.test(value) ? Number(value) : undefined;
}
