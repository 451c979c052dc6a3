/**
 * Reads the standard OpenTelemetry environment variables that concern traces into a frozen settings object,
 * or undefined when tracing is off. Pure: no I/O and no OpenTelemetry package, so the daemon can decide whether
 * to load the SDK at all. Every invalid variable is reported at once, in one OtelConfigError.
 *
 * Tracing is opt in: it is on when OTEL_TRACES_EXPORTER lists `otlp` or an OTLP endpoint is set, and off when
 * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, whatever else is set. As the specification says, an
 * empty variable counts as unset.
 */

export type OtlpProtocol = 'http/protobuf' | 'http/json';
export type SamplerName = 'always_on' | 'always_off' | 'traceidratio';

export interface OtelSettings {
  /** OTEL_SERVICE_NAME, else service.name from OTEL_RESOURCE_ATTRIBUTES, else "workerless". */
  readonly serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES, percent-decoded. */
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly exporter: {
    /** OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL; default http/protobuf. grpc is not supported. */
    readonly protocol: OtlpProtocol;
    /** OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces; default http://localhost:4318/v1/traces. */
    readonly url: string;
    /** OTEL_EXPORTER_OTLP_HEADERS merged with OTEL_EXPORTER_OTLP_TRACES_HEADERS. */
    readonly headers: Readonly<Record<string, string>>;
    /** OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT; default 10000. */
    readonly timeoutMs: number;
    /** OTEL_EXPORTER_OTLP_[TRACES_]COMPRESSION; default none. */
    readonly compression: 'none' | 'gzip';
  };
  readonly batch: {
    /** OTEL_BSP_SCHEDULE_DELAY; default 5000. */
    readonly scheduledDelayMs: number;
    /** OTEL_BSP_EXPORT_TIMEOUT; default 30000. */
    readonly exportTimeoutMs: number;
    /** OTEL_BSP_MAX_QUEUE_SIZE; default 2048. */
    readonly maxQueueSize: number;
    /** OTEL_BSP_MAX_EXPORT_BATCH_SIZE; default 512, at most the queue size. */
    readonly maxExportBatchSize: number;
  };
  /**
   * OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG; default parentbased_always_on. Every span workerless
   * starts is a root (producers are linked, not parents), so the parentbased_* samplers act as their root sampler.
   */
  readonly sampler: { readonly name: SamplerName; readonly ratio: number };
}

export interface OtelProblem {
  readonly variable: string;
  /** The value received; secrets (header values) are replaced by "***". */
  readonly value: string;
  readonly reason: string;
}

/** Invalid OTEL_* configuration: the daemon and `workerless check` report each problem and exit 2. */
export class OtelConfigError extends Error {
  override readonly name = 'OtelConfigError';
  readonly problems: readonly OtelProblem[];

  constructor(problems: readonly OtelProblem[]) {
    super(problems.map(describeProblem).join('; '));
    this.problems = problems;
  }
}

export function describeProblem(p: OtelProblem): string {
  return `${p.variable} ${p.reason}, got ${JSON.stringify(p.value)}`;
}

const DEFAULT_ENDPOINT = 'http://localhost:4318/';
const TRACES_PATH = 'v1/traces';

/** Resolves the settings, undefined when tracing is off; throws OtelConfigError listing every invalid variable. */
export function resolveOtelEnv(env: NodeJS.ProcessEnv): OtelSettings | undefined {
  const problems: OtelProblem[] = [];
  const read = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const problem = (variable: string, value: string, reason: string): void => {
    problems.push({ variable, value, reason });
  };

  const disabled = read('OTEL_SDK_DISABLED');
  if (disabled !== undefined && !/^(true|false)$/i.test(disabled)) problem('OTEL_SDK_DISABLED', disabled, 'must be true or false');
  if (disabled?.toLowerCase() === 'true') return finish(problems, undefined);

  const exporters = read('OTEL_TRACES_EXPORTER')
    ?.split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '');
  if (exporters?.some((e) => e !== 'otlp' && e !== 'none')) {
    problem('OTEL_TRACES_EXPORTER', read('OTEL_TRACES_EXPORTER')!, 'must be otlp or none (workerless exports traces over OTLP only)');
  }
  const tracesEndpoint = read('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const endpoint = read('OTEL_EXPORTER_OTLP_ENDPOINT');
  const off = exporters?.includes('none') === true;
  const on = exporters?.includes('otlp') === true || tracesEndpoint !== undefined || endpoint !== undefined;
  if (off || !on) return finish(problems, undefined);

  // The traces-specific variable wins over the general one, as the OTLP exporter specification says.
  const pick = (suffix: string): { variable: string; value: string } | undefined => {
    for (const variable of [`OTEL_EXPORTER_OTLP_TRACES_${suffix}`, `OTEL_EXPORTER_OTLP_${suffix}`]) {
      const value = read(variable);
      if (value !== undefined) return { variable, value };
    }
    return undefined;
  };

  let protocol: OtlpProtocol = 'http/protobuf';
  const p = pick('PROTOCOL');
  if (p) {
    if (p.value === 'http/protobuf' || p.value === 'http/json') protocol = p.value;
    else problem(p.variable, p.value, 'must be http/protobuf or http/json (grpc is not supported; OTLP/HTTP listens on port 4318)');
  }

  // A signal-specific endpoint is used as is; the general one gets /v1/traces appended (OTLP exporter spec).
  let url = `${DEFAULT_ENDPOINT}${TRACES_PATH}`;
  if (tracesEndpoint !== undefined) {
    if (httpUrl(tracesEndpoint)) url = new URL(tracesEndpoint).href;
    else problem('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', tracesEndpoint, 'must be an http:// or https:// URL');
  } else if (endpoint !== undefined) {
    if (httpUrl(endpoint)) url = new URL(`${endpoint.endsWith('/') ? endpoint : `${endpoint}/`}${TRACES_PATH}`).href;
    else problem('OTEL_EXPORTER_OTLP_ENDPOINT', endpoint, 'must be an http:// or https:// URL');
  }

  const headers: Record<string, string> = {};
  for (const variable of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS']) {
    const raw = read(variable);
    if (raw === undefined) continue;
    // Header values are often API keys: a problem names the entry's key, never its value.
    const parsed = parseKeyValues(raw, (entry) =>
      problem(variable, redact(entry), 'must be a comma-separated list of key=value (values percent-encoded)'),
    );
    Object.assign(headers, parsed);
  }

  let timeoutMs = 10_000;
  const t = pick('TIMEOUT');
  if (t) {
    const n = integer(t.value);
    if (n !== undefined && n > 0) timeoutMs = n;
    else problem(t.variable, t.value, 'must be a whole number of milliseconds greater than 0');
  }

  let compression: 'none' | 'gzip' = 'none';
  const c = pick('COMPRESSION');
  if (c) {
    if (c.value === 'none' || c.value === 'gzip') compression = c.value;
    else problem(c.variable, c.value, 'must be gzip or none');
  }

  const bsp = (variable: string, fallback: number, min: number): number => {
    const raw = read(variable);
    if (raw === undefined) return fallback;
    const n = integer(raw);
    if (n !== undefined && n >= min) return n;
    problem(variable, raw, `must be a whole number of at least ${min}`);
    return fallback;
  };
  const batch = {
    scheduledDelayMs: bsp('OTEL_BSP_SCHEDULE_DELAY', 5_000, 0),
    exportTimeoutMs: bsp('OTEL_BSP_EXPORT_TIMEOUT', 30_000, 1),
    maxQueueSize: bsp('OTEL_BSP_MAX_QUEUE_SIZE', 2_048, 1),
    maxExportBatchSize: bsp('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1),
  };
  if (batch.maxExportBatchSize > batch.maxQueueSize) {
    problem(
      'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
      String(batch.maxExportBatchSize),
      `must not exceed OTEL_BSP_MAX_QUEUE_SIZE (${batch.maxQueueSize})`,
    );
  }

  const sampler = resolveSampler(read('OTEL_TRACES_SAMPLER'), read('OTEL_TRACES_SAMPLER_ARG'), problem);

  const resourceAttributes: Record<string, string> = {};
  const rawResource = read('OTEL_RESOURCE_ATTRIBUTES');
  if (rawResource !== undefined) {
    Object.assign(
      resourceAttributes,
      parseKeyValues(rawResource, (entry) =>
        problem('OTEL_RESOURCE_ATTRIBUTES', entry, 'must be a comma-separated list of key=value (values percent-encoded)'),
      ),
    );
  }
  const serviceName = read('OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? 'workerless';

  return finish(problems, {
    serviceName,
    resourceAttributes,
    exporter: { protocol, url, headers, timeoutMs, compression },
    batch,
    sampler,
  });
}

function finish(problems: OtelProblem[], settings: OtelSettings | undefined): OtelSettings | undefined {
  if (problems.length > 0) throw new OtelConfigError(problems);
  return settings === undefined ? undefined : deepFreeze(settings);
}

function resolveSampler(
  name: string | undefined,
  arg: string | undefined,
  problem: (variable: string, value: string, reason: string) => void,
): OtelSettings['sampler'] {
  const n = name?.toLowerCase() ?? 'parentbased_always_on';
  const root = n.replace(/^parentbased_/, '');
  if (root !== 'always_on' && root !== 'always_off' && root !== 'traceidratio') {
    problem('OTEL_TRACES_SAMPLER', name!, 'must be always_on, always_off, traceidratio or their parentbased_ forms');
    return { name: 'always_on', ratio: 1 };
  }
  if (root !== 'traceidratio') return { name: root, ratio: 1 };
  if (arg === undefined) return { name: root, ratio: 1 };
  const ratio = Number(arg);
  if (Number.isFinite(ratio) && ratio >= 0 && ratio <= 1) return { name: root, ratio };
  problem('OTEL_TRACES_SAMPLER_ARG', arg, 'must be a number from 0 to 1 for traceidratio');
  return { name: root, ratio: 1 };
}

/** The W3C-baggage-like `key=value,key2=value2` list the OTEL_* variables use; values are percent-decoded. */
function parseKeyValues(raw: string, bad: (entry: string) => void): Record<string, string> {
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

function redact(entry: string): string {
  const eq = entry.indexOf('=');
  return eq < 0 ? '***' : `${entry.slice(0, eq).trim()}=***`;
}

function httpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

function integer(value: string): number | undefined {
  return /^\d+$/.test(value) ? Number(value) : undefined;
}

function deepFreeze<T extends object>(o: T): T {
  for (const v of Object.values(o)) if (v !== null && typeof v === 'object') deepFreeze(v as object);
  return Object.freeze(o);
}
