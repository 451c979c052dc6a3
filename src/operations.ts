import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { DispatcherState } from './dispatcher.ts';
import { EventLoopLag, checkLiveness, type LoopStep } from './health.ts';
import { startHttpServer, type HttpServerHandle, type Probe } from './http/server.ts';
import { STATUS_PAGE_HTML } from './http/status-page.ts';
import type { MetricsSink } from './metrics/metrics-sink.ts';
import { PrometheusMetrics } from './metrics/prometheus.ts';
import { queueNameOf } from './queues/sqs-source.ts';
import type { DaemonState, StatusSnapshot } from './status/snapshot.ts';
import { StatusRecorder, type RecentErrors } from './status/status-recorder.ts';

/** An event loop blocked this long is not serving its loops, timers or probes: restart it. */
const MAX_EVENT_LOOP_LAG_MS = 10_000;

/** What the probes read from the dispatcher. */
export interface DispatcherView {
  readonly state: DispatcherState;
  readonly functionPaused: boolean;
  readonly receivable: boolean;
  loopSteps(): readonly (LoopStep | undefined)[];
}

/**
 * The operator's view of the daemon, behind --http-port: liveness and readiness, Prometheus metrics and the
 * status page. Built only when the HTTP server is on; it adds its sinks to the metrics stream and reads the
 * dispatcher's state, never the other way round.
 */
export class Operations {
  readonly prometheus = new PrometheusMetrics();
  readonly status: StatusRecorder;
  readonly #config: Config;
  readonly #log: Logger;
  readonly #version: string;
  readonly #startedAt = Date.now();
  readonly #lag = new EventLoopLag();
  #dispatcher: DispatcherView | undefined;
  #started = false;
  #stopping = false;
  #server: HttpServerHandle | undefined;

  constructor(config: Config, logger: Logger, version: string, recentErrors?: RecentErrors) {
    this.#config = config;
    this.#log = logger;
    this.#version = version;
    this.status = new StatusRecorder({
      queues: config.queues?.queues.map((q) => queueNameOf(q.ref)) ?? [],
      ...(recentErrors ? { recentErrors } : {}),
    });
  }

  /** The sinks to add to the metrics stream. */
  get sinks(): MetricsSink[] {
    return [this.prometheus, this.status];
  }

  async start(): Promise<void> {
    const port = this.#config.httpPort;
    if (port === undefined) return;
    this.#lag.start();
    this.#server = await startHttpServer({
      host: this.#config.httpHost,
      port,
      logger: this.#log,
      routes: {
        liveness: () => this.liveness(),
        readiness: () => this.readiness(),
        metrics: () => this.prometheus.exposition(),
        status: () => this.snapshot(),
        statusPage: STATUS_PAGE_HTML,
      },
    });
    this.#log.info({ url: this.#server.url }, 'HTTP server listening: /healthz /readyz /metrics, status page at /');
  }

  /** Start-up checks passed; `dispatcher` is the SQS pool, if any. */
  running(dispatcher: DispatcherView | undefined): void {
    this.#dispatcher = dispatcher;
    this.#started = true;
  }

  /** A signal or a failure started the drain. */
  stopping(): void {
    this.#stopping = true;
  }

  state(): DaemonState {
    const d = this.#dispatcher;
    if (d?.state === 'failed') return 'failed';
    if (!this.#started) return this.#stopping ? 'stopped' : 'starting';
    if (d?.state === 'stopped') return 'stopped';
    if (this.#stopping || d?.state === 'draining') return 'draining';
    if (d?.functionPaused) return 'paused';
    return 'running';
  }

  readiness(): Probe {
    const state = this.state();
    const reasons: string[] = [];
    if (state === 'starting') reasons.push('starting: resolving queues and checking the function');
    else if (state === 'paused') reasons.push('the function is paused: it cannot be invoked (see the logs)');
    else if (state !== 'running') reasons.push(`${state}: not taking new messages`);
    else if (this.#dispatcher && !this.#dispatcher.receivable)
      reasons.push('no queue can be received from (every ReceiveMessage is failing)');
    return { ok: reasons.length === 0, reasons };
  }

  liveness(): Probe {
    return checkLiveness({
      lagMs: this.#lag.lagMs(),
      maxLagMs: MAX_EVENT_LOOP_LAG_MS,
      loops: this.#dispatcher?.loopSteps() ?? [],
      now: Date.now(),
      graceMs: 0,
    });
  }

  snapshot(): StatusSnapshot {
    return this.status.snapshot(this.state(), {
      version: this.#version,
      functionName: this.#config.functionName,
      startedAt: this.#startedAt,
    });
  }

  async close(): Promise<void> {
    this.#lag.stop();
    await this.#server?.close();
  }
}
