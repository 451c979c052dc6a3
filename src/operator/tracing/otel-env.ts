/**
 * Reads the standard OpenTelemetry environment variables that concern traces into a frozen settings object,
 * or undefined when tracing is off. Pure: no I/O and no OpenTelemetry package, so the daemon can decide whether
 * to load the SDK at all. Every invalid variable is reported at once, in one OtelConfigError.
 *
 * Tracing is opt in: it is on when OTEL_TRACES_EXPORTER lists `otlp` or an OTLP endpoint is set, and off when
 * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, whatever else is set. As the specification says, an
 * empty variable counts as unset.
 */
import { httpUrl, integer, otelVars, parseKeyValues, type OtelVars } from './otel-vars.ts';

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
const DEFAULT_TIMEOUT_MS = 10_000;

/** Resolves the settings, undefined when tracing is off; throws OtelConfigError listing every invalid variable. */
export function resolveOtelEnv(env: NodeJS.ProcessEnv): OtelSettings | undefined {
  const problems: OtelProblem[] = [];
  const vars = otelVars(env, (variable, value, reason) => {
    problems.push({ variable, value, reason });
  });
  if (!tracesOn(vars)) return finish(problems, undefined);
  // Resolved in this order because OtelConfigError lists the problems in the order they are found.
  const exporter = resolveExporter(vars);
  const batch = resolveBatch(vars);
  const sampler = resolveSampler(vars.read('OTEL_TRACES_SAMPLER'), vars.read('OTEL_TRACES_SAMPLER_ARG'), vars.problem);
  const resourceAttributes = resolveResourceAttributes(vars);
  const serviceName = vars.read('OTEL_SERVICE_NAME') ?? resourceAttributes['service.name'] ?? 'workerless';
  return finish(problems, { serviceName, resourceAttributes, exporter, batch, sampler });
}

/** Whether tracing is on (opt in); the variables that turn it off win over those that turn it on. */
function tracesOn(vars: OtelVars): boolean {
  const disabled = vars.read('OTEL_SDK_DISABLED');
  if (disabled !== undefined && !/^(true|false)$/i.test(disabled)) vars.problem('OTEL_SDK_DISABLED', disabled, 'must be true or false');
  if (disabled?.toLowerCase() === 'true') return false;

  const exporters = vars
    .read('OTEL_TRACES_EXPORTER')
    ?.split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '');
  if (exporters?.some((e) => e !== 'otlp' && e !== 'none')) {
    vars.problem(
      'OTEL_TRACES_EXPORTER',
      vars.read('OTEL_TRACES_EXPORTER')!,
      'must be otlp or none (workerless exports traces over OTLP only)',
    );
  }
  const off = exporters?.includes('none') === true;
  const on =
    exporters?.includes('otlp') === true ||
    vars.read('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') !== undefined ||
    vars.read('OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined;
  return on && !off;
}

function resolveExporter(vars: OtelVars): OtelSettings['exporter'] {
  // Properties are evaluated in order, so the problems keep the order of the fields.
  return {
    protocol: pickChoice(
      vars,
      'PROTOCOL',
      ['http/protobuf', 'http/json'],
      'http/protobuf',
      'must be http/protobuf or http/json (grpc is not supported; OTLP/HTTP listens on port 4318)',
    ),
    url: resolveUrl(vars),
    headers: resolveHeaders(vars),
    timeoutMs: resolveTimeout(vars),
    compression: pickChoice(vars, 'COMPRESSION', ['none', 'gzip'], 'none', 'must be gzip or none'),
  };
}

/** A pick() that must be one of `allowed`; `fallback` when unset or invalid. */
function pickChoice<T extends string>(vars: OtelVars, suffix: string, allowed: readonly T[], fallback: T, reason: string): T {
  const p = vars.pick(suffix);
  if (p === undefined) return fallback;
  const choice = allowed.find((a) => a === p.value);
  if (choice !== undefined) return choice;
  vars.problem(p.variable, p.value, reason);
  return fallback;
}

/** A signal-specific endpoint is used as is; the general one gets /v1/traces appended (OTLP exporter spec). */
function resolveUrl(vars: OtelVars): string {
  const tracesEndpoint = vars.read('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const endpoint = vars.read('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (tracesEndpoint !== undefined) {
    if (httpUrl(tracesEndpoint)) return new URL(tracesEndpoint).href;
    vars.problem('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', tracesEndpoint, 'must be an http:// or https:// URL');
  } else if (endpoint !== undefined) {
    if (httpUrl(endpoint)) return new URL(`${endpoint.endsWith('/') ? endpoint : `${endpoint}/`}${TRACES_PATH}`).href;
    vars.problem('OTEL_EXPORTER_OTLP_ENDPOINT', endpoint, 'must be an http:// or https:// URL');
  }
  return `${DEFAULT_ENDPOINT}${TRACES_PATH}`;
}

function resolveHeaders(vars: OtelVars): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const variable of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS']) {
    const raw = vars.read(variable);
    if (raw === undefined) continue;
    // Header values are often API keys: a problem names the entry's key, never its value.
    const parsed = parseKeyValues(raw, (entry) =>
      vars.problem(variable, redact(entry), 'must be a comma-separated list of key=value (values percent-encoded)'),
    );
    Object.assign(headers, parsed);
  }
  return headers;
}

function resolveTimeout(vars: OtelVars): number {
  const t = vars.pick('TIMEOUT');
  if (t === undefined) return DEFAULT_TIMEOUT_MS;
  const n = integer(t.value);
  if (n !== undefined && n > 0) return n;
  vars.problem(t.variable, t.value, 'must be a whole number of milliseconds greater than 0');
  return DEFAULT_TIMEOUT_MS;
}

function resolveBatch(vars: OtelVars): OtelSettings['batch'] {
  const batch = {
    scheduledDelayMs: bspInteger(vars, 'OTEL_BSP_SCHEDULE_DELAY', 5_000, 0),
    exportTimeoutMs: bspInteger(vars, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000, 1),
    maxQueueSize: bspInteger(vars, 'OTEL_BSP_MAX_QUEUE_SIZE', 2_048, 1),
    maxExportBatchSize: bspInteger(vars, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, 1),
  };
  if (batch.maxExportBatchSize > batch.maxQueueSize) {
    vars.problem(
      'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
      String(batch.maxExportBatchSize),
      `must not exceed OTEL_BSP_MAX_QUEUE_SIZE (${batch.maxQueueSize})`,
    );
  }
  return batch;
}

function bspInteger(vars: OtelVars, variable: string, fallback: number, min: number): number {
  const raw = vars.read(variable);
  if (raw === undefined) return fallback;
  const n = integer(raw);
  if (n !== undefined && n >= min) return n;
  vars.problem(variable, raw, `must be a whole number of at least ${min}`);
  return fallback;
}

function resolveResourceAttributes(vars: OtelVars): Record<string, string> {
  const resourceAttributes: Record<string, string> = {};
  const raw = vars.read('OTEL_RESOURCE_ATTRIBUTES');
  if (raw !== undefined) {
    Object.assign(
      resourceAttributes,
      parseKeyValues(raw, (entry) =>
        vars.problem('OTEL_RESOURCE_ATTRIBUTES', entry, 'must be a comma-separated list of key=value (values percent-encoded)'),
      ),
    );
  }
  return resourceAttributes;
}

function finish(problems: OtelProblem[], settings: OtelSettings | undefined): OtelSettings | undefined {
  if (problems.length > 0) throw new OtelConfigError(problems);
  return settings === undefined ? undefined : deepFreeze(settings);
}

function resolveSampler(name: string | undefined, arg: string | undefined, problem: OtelVars['problem']): OtelSettings['sampler'] {
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

function redact(entry: string): string {
  const eq = entry.indexOf('=');
  return eq < 0 ? '***' : `${entry.slice(0, eq).trim()}=***`;
}

function deepFreeze<T extends object>(o: T): T {
  for (const v of Object.values(o)) if (v !== null && typeof v === 'object') deepFreeze(v as object);
  return Object.freeze(o);
}
