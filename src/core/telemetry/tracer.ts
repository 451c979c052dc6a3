import type { Message } from '@aws-sdk/client-sqs';
import type { ResolvedQueue } from '../queue.ts';

/**
 * The tracing port of the data path. The dispatcher reports each step; the OpenTelemetry adapter
 * (otel.ts, loaded only when OTEL_* configuration asks for it) turns them into spans following the messaging
 * semantic conventions. The payload is never read or changed.
 */
export interface DispatchTracer {
  /** A receive that returned messages, reported after the fact. */
  received(queue: ResolvedQueue, messages: readonly Message[], startedAt: number, endedAt: number): void;
  /**
   * Runs one invocation of `messages` inside a process span linked to each message's producer context.
   * `failure` tells from the result (outcomes are values, not exceptions) the error type to record, if any.
   */
  process<T>(
    queue: ResolvedQueue,
    functionName: string,
    messages: readonly Message[],
    run: () => Promise<T>,
    failure?: (result: T) => string | undefined,
  ): Promise<T>;
  /** Runs one settle call (delete or release) inside a settle span. */
  settle<T>(
    queue: ResolvedQueue,
    operation: 'delete' | 'release',
    messages: readonly Message[],
    run: () => Promise<T>,
    failure?: (result: T) => string | undefined,
  ): Promise<T>;
  /** Exports what is buffered; called at shutdown. */
  shutdown(): Promise<void>;
}

export const noopTracer: DispatchTracer = {
  received() {},
  process: (_q, _f, _m, run) => run(),
  settle: (_q, _o, _m, run) => run(),
  shutdown: async () => {},
};
