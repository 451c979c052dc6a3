/**
 * The process, as main.ts hands it to the daemon: main stays the one module that touches `process` (argv, env,
 * signals, stdio, exit), so the daemon's files can be read, and run, without it.
 */
export interface DaemonProcess {
  /** The root controller: the first SIGTERM/SIGINT, or a failed part, aborts it (stop receiving, drain). */
  readonly stop: AbortController;
  /** Replaces main's start-up signal handler, once the daemon can report what is in flight. */
  onSignal(handler: (signal: NodeJS.Signals) => void): void;
  /** The environment: the OTEL_* variables configure tracing. */
  readonly env: NodeJS.ProcessEnv;
  /** One line for the operator on stderr, as `workerless: <line>`. */
  tell(line: string): void;
  /** Ends the process at once (a forced exit). */
  exit(code: number): never;
  readonly version: string;
}
