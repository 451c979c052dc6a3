import type { Message } from '@aws-sdk/client-sqs';
import type { ResolvedQueue } from '../core/queue.ts';
import type { InvokeParams, InvokeResult } from '../core/function-invoker.ts';

/**
 * What an Invoke reads of the batch's visibility lease (src/settle/visibility-lease.ts's VisibilityLease, which
 * settle/ owns and dispatch/ hands in): invoke/ comes before settle/ on a message's path, so it declares the
 * narrow view here instead of importing the lease.
 */
export interface InvokeLease {
  /** The visibility timeout the receive stated and every extension renews, milliseconds. */
  readonly timeoutMs: number;
  /** The messages still leased. */
  readonly messages: Message[];
  /** Before an Invoke attempt: the messages of `messages` whose lease has lapsed (empty when all are hidden). */
  confirm(messages: readonly Message[]): Message[];
}

/**
 * One Invoke of a chunk of a batch, and who asks: the shape every wrapper (src/invoke/with-*.ts) takes and
 * returns, as a Watermill middleware does, so that the deadline, the span, the lease check and the permit
 * each stay one small function, composed once (src/invoke/compose.ts).
 */
export interface InvokeContext {
  /** The worker loop holding the batch (whose activity liveness watches). */
  readonly loop: number;
  readonly queue: ResolvedQueue;
  readonly lease: InvokeLease;
  /** The chunk in the payload: the messages the lease must still hide before each attempt. */
  readonly messages: readonly Message[];
  /** This chunk and every later one of the batch: the messages the span covers and a shutdown releases. */
  readonly unsettledIds: string[];
  /** Aborts on shutdown: ends the hold after an unknown outcome (never an Invoke in flight). */
  readonly halt: AbortSignal;
  /**
   * What the Invoke carries besides the payload: a tenant id (src/invoke/tenant-split.ts), a durable route's
   * execution name and invocation type (src/invoke/durable-event.ts).
   */
  readonly params?: InvokeParams | undefined;
  /** Called by the lease check once the attempt really starts (after any wait for a permit). */
  readonly onStart: () => void;
}

/** One attempt; `signal` ends the call itself (the deadline's). Never rejects for AWS errors: they are values. */
export type Invoke = (payload: string, ctx: InvokeContext, signal?: AbortSignal) => Promise<InvokeResult>;

/** A policy around an Invoke. */
export type InvokeWrapper = (next: Invoke) => Invoke;
