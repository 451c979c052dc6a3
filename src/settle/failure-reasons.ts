import { capText, TEXT_CAP_BYTES } from '../util/cap-text.ts';
import type { FailureReason } from './failure-destination.ts';

/**
 * Texts are kept capped 32 bytes short of the record's cap: with capText's note of the bytes cut (at most 25
 * bytes) they stay within it, so building the record does not cut them again.
 */
const KEPT_TEXT_BYTES = TEXT_CAP_BYTES - 32;

/** How many reasons are kept: each holds at most 2 KiB of capped text, so at most about 2 MiB. */
const KEPT = 1_000;

/**
 * Why messages whose record the failure destination refused had failed, by queue ARN and message id, so that
 * their record names that reason when the message comes back past its allowed receives and is sent again
 * without being invoked (src/settle/settle-exhausted.ts). Only this process knows them: a message another
 * process (or this one before a restart) saw fail gets RetriesExhausted. The oldest are dropped beyond KEPT.
 */
export class FailureReasons {
  readonly #reasons = new Map<string, FailureReason>();

  remember(queueArn: string, messageId: string, reason: FailureReason): void {
    const key = `${queueArn}\n${messageId}`;
    // Re-inserted, so the Map's order is the order of the last refusal.
    this.#reasons.delete(key);
    this.#reasons.set(key, {
      ...reason,
      errorType: capText(reason.errorType, KEPT_TEXT_BYTES),
      errorMessage: capText(reason.errorMessage, KEPT_TEXT_BYTES),
    });
    if (this.#reasons.size > KEPT) this.#reasons.delete(this.#reasons.keys().next().value!);
  }

  recall(queueArn: string, messageId: string): FailureReason | undefined {
    return this.#reasons.get(`${queueArn}\n${messageId}`);
  }

  forget(queueArn: string, messageId: string): void {
    this.#reasons.delete(`${queueArn}\n${messageId}`);
  }

  /** Reasons kept now. */
  get size(): number {
    return this.#reasons.size;
  }
}
