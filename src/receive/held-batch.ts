/**
 * A batch an idle poll returned, held while it waits for a loop: `lease` keeps it invisible (the dispatcher's
 * visibility lease, which the batch keeps once a loop takes it), `release` makes it visible again at once (a stop).
 */
export interface HeldBatch<L> {
  readonly lease: L;
  release(): Promise<void>;
}
