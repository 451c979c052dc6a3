import { CALL_DEADLINE_MS } from '../core/queue.ts';

/** A settle step: DeleteMessageBatch's 8 attempts of at most CALL_DEADLINE_MS each, plus back-off. */
export const SETTLE_DEADLINE_MS = 8 * (CALL_DEADLINE_MS + 1_000);
