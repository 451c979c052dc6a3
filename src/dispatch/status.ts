import type { LoopActivity } from './loop-activity.ts';

/**
 * A Dispatcher's lifecycle: idle -> running (run() called) -> draining (its stop aborted, or a loop failed: no
 * new receives, what was received is invoked and settled) -> stopped, or failed when a loop failed (run()
 * rejects with DispatcherFailed). Each transition is logged once ('dispatcher state').
 */
export type DispatcherState = 'idle' | 'running' | 'draining' | 'stopped' | 'failed';

/** A Dispatcher's state at one moment (as Temporal's worker getStatus()), read by the operator surface and main.ts. */
export interface DispatcherStatus {
  readonly state: DispatcherState;
  /** The function this pool invokes (its route, with several). */
  readonly functionName: string;
  /** Whether the function is paused because it cannot be invoked. */
  readonly functionPaused: boolean;
  /** Whether some queue can be received from (not backing off after a failed receive). */
  readonly receivable: boolean;
  /** Loops allowed to hold a batch: --concurrency, or less while adaptive concurrency backs off throttles. */
  readonly concurrencyLimit: number;
  /** Each worker loop's current activity and its deadline (undefined: idle), for the liveness probe. */
  readonly loops: readonly (LoopActivity | undefined)[];
  /** Messages received and not yet settled, for the shutdown report; listed when read, as of then. */
  readonly inFlight: readonly { readonly queue: string; readonly messageIds: string[] }[];
}
