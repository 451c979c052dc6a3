import type { Logger } from 'pino';
import { totalQueues, type Config } from '../config/config.ts';
import type { DispatcherStatus } from '../dispatch/status.ts';
import { EventLoopLag, checkLiveness } from './health.ts';
import { startHttpServer, type HttpServerHandle, type Probe } from './http/server.ts';
import { STATUS_PAGE_HTML } from './http/status-page.ts';
import type { MetricsSink } from '../core/telemetry/metrics-sink.ts';
import { PrometheusMetrics } from './metrics/prometheus.ts';
import { QueueSeries } from './metrics/queue-series.ts';
import { queueNameOf } from '../core/queue.ts';
import { monotonicNow, steadyEpochNow } from '../util/clock.ts';
import type { DaemonState, FleetSnapshot, StatusSnapshot } from './status/snapshot.ts';
import { StatusRecorder, type RecentErrors } from './status/status-recorder.ts';
import { parseStatusQuery, type StatusQuery } from './status/status-query.ts';

/** An event loop blocked this long is not serving its loops, timers or probes: restart it. */
const MAX_EVENT_LOOP_LAG_MS = 10_000;

/** What the probes read from a route's dispatcher. */
export interface DispatcherView {
  status(): Pick<DispatcherStatus, 'functionName' | 'state' | 'functionPaused' | 'receivable' | 'loops'>;
}

/**
 * The operator's view of the daemon, behind --http-port: liveness and readiness, Prometheus metrics and the
 * status page. Built only when the HTTP server is on; it adds its sinks to the metrics stream and reads the
 * dispatcher's state, never the other way round.
 */
export class Operations {
  readonly prometheus: PrometheusMetrics;
  readonly status: StatusRecorder;
  readonly #config: Config;
  readonly #log: Logger;
  readonly #version: string;
  // On the status recorder's clock, so the page's uptime (its now minus this) does not step with the wall clock.
  readonly #startedAt = steadyEpochNow();
  readonly #lag = new EventLoopLag();
  /** One per route. */
  #dispatchers: readonly DispatcherView[] = [];
  #started = false;
  #stopping = false;
  /** The fleet's view, when the daemon is in one (src/daemon/fleet-composition.ts). */
  #fleet: (() => FleetSnapshot) | undefined;
  #server: HttpServerHandle | undefined;

  /** `queueCount`: the routes' queues now (they change when found by prefix or tag); by default the configured ones. */
  constructor(
    config: Config,
    logger: Logger,
    version: string,
    recentErrors?: RecentErrors,
    queueCount: () => number = () => totalQueues(config.routes),
  ) {
    this.#config = config;
    this.#log = logger;
    this.#version = version;
    // The count is read again with each datum, so a route whose queues change while running switches the mode.
    this.prometheus = new PrometheusMetrics(new QueueSeries({ mode: config.metricsPerQueue, queueCount }));
    this.status = new StatusRecorder({
      queues: config.routes.flatMap((route) => route.queues.queues.map((q) => queueNameOf(q.ref))),
      ...(recentErrors ? { recentErrors } : {}),
    });
  }

  /** The sinks to add to the metrics stream. */
  get sinks(): MetricsSink[] {
    return [this.prometheus, this.status];
  }

  /** `maxConnections`: the HTTP server's share of the file descriptors (src/daemon/socket-budget.ts). */
  async start(maxConnections: number): Promise<void> {
    const port = this.#config.httpPort;
    if (port === undefined) return;
    this.#lag.start();
    this.#server = await startHttpServer({
      host: this.#config.httpHost,
      allowedHosts: this.#config.httpAllowedHosts,
      port,
      logger: this.#log,
      maxConnections,
      routes: {
        liveness: () => this.liveness(),
        readiness: () => this.readiness(),
        metrics: () => this.prometheus.exposition(),
        status: (query) => this.snapshot(parseStatusQuery(query)),
        statusPage: STATUS_PAGE_HTML,
      },
    });
    this.#log.info({ url: this.#server.url, maxConnections }, 'HTTP server listening: /healthz /readyz /metrics, status page at /');
  }

  /** Start-up checks passed; `dispatchers` are the routes' SQS pools. */
  running(dispatchers: readonly DispatcherView[]): void {
    this.#dispatchers = dispatchers;
    this.#started = true;
  }

  /** The daemon joined a fleet: status.json and the page show `fleet()`. */
  inFleet(fleet: () => FleetSnapshot): void {
    this.#fleet = fleet;
  }

  /** A signal or a failure started the drain. */
  stopping(): void {
    this.#stopping = true;
  }

  /** The daemon's state: the worst of its routes' (a failed or paused route makes the daemon so). */
  state(): DaemonState {
    const ds = this.#statuses();
    if (ds.some((d) => d.state === 'failed')) return 'failed';
    if (!this.#started) return this.#stopping ? 'stopped' : 'starting';
    if (ds.length > 0 && ds.every((d) => d.state === 'stopped')) return 'stopped';
    if (this.#stopping || ds.some((d) => d.state === 'draining')) return 'draining';
    if (ds.some((d) => d.functionPaused)) return 'paused';
    return 'running';
  }

  #statuses(): ReturnType<DispatcherView['status']>[] {
    return this.#dispatchers.map((d) => d.status());
  }

  readiness(): Probe {
    const state = this.state();
    const reasons: string[] = [];
    if (state === 'starting') reasons.push('starting: resolving queues and checking the function');
    else if (state === 'paused') {
      for (const d of this.#statuses().filter((d) => d.functionPaused))
        reasons.push(`function ${d.functionName} is paused: it cannot be invoked (see the logs)`);
    } else if (state !== 'running') reasons.push(`${state}: not taking new messages`);
    else {
      for (const d of this.#statuses().filter((d) => !d.receivable))
        reasons.push(`no queue of ${d.functionName} can be received from (every ReceiveMessage is failing)`);
    }
    return { ok: reasons.length === 0, reasons };
  }

  liveness(): Probe {
    return checkLiveness({
      lagMs: this.#lag.lagMs(),
      maxLagMs: MAX_EVENT_LOOP_LAG_MS,
      // With several routes a stuck loop is named by its function: "worker loop 3 stuck in fn-a: invoke".
      loops: this.#statuses().flatMap((d, _, all) =>
        all.length === 1 ? d.loops : d.loops.map((l) => l && { ...l, activity: `${d.functionName}: ${l.activity}` }),
      ),
      // The dispatchers' clock: a wall-clock step must not make every loop look stuck (or hide a stuck one).
      now: monotonicNow(),
      graceMs: 0,
    });
  }

  /** `query`: which queues it lists; default the 50 busiest. */
  snapshot(query?: StatusQuery): StatusSnapshot {
    const snapshot = this.status.snapshot(
      this.state(),
      {
        version: this.#version,
        functions: this.#config.routes.map((route) => route.functionName),
        startedAt: this.#startedAt,
      },
      query,
    );
    return this.#fleet === undefined ? snapshot : { ...snapshot, fleet: this.#fleet() };
  }

  async close(): Promise<void> {
    this.#lag.stop();
    await this.#server?.close();
  }
}
