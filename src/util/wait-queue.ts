/**
 * A first-in, first-out line of waiting callers. Joining, leaving (abort or timeout) and waking the first
 * cost O(1) whatever the length of the line, and a waiter that gave up is gone from it at once: 2,000 worker
 * loops rechecking every second cost 2,000 entries, not 2,000 more each second. The caller decides what a
 * wake hands over (a slot, a permit, a chance to look again); the line only keeps the order.
 */
interface Waiter {
  prev: Waiter | undefined;
  next: Waiter | undefined;
  done: (woken: boolean) => void;
}

export class WaitQueue {
  #head: Waiter | undefined;
  #tail: Waiter | undefined;
  #size = 0;

  /** Callers waiting now. */
  get size(): number {
    return this.#size;
  }

  /**
   * Joins the end of the line. Resolves true when wakeOne() reaches this waiter, false when `signal` aborts or
   * `timeoutMs` passes first (the waiter has then left the line).
   */
  wait(signal?: AbortSignal, timeoutMs?: number): Promise<boolean> {
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const giveUp = () => this.#leave(waiter, false);
      const waiter: Waiter = {
        prev: this.#tail,
        next: undefined,
        done: (woken) => {
          if (timer !== undefined) clearTimeout(timer);
          signal?.removeEventListener('abort', giveUp);
          resolve(woken);
        },
      };
      if (this.#tail) this.#tail.next = waiter;
      else this.#head = waiter;
      this.#tail = waiter;
      this.#size++;
      signal?.addEventListener('abort', giveUp, { once: true });
      if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) timer = setTimeout(giveUp, Math.max(0, timeoutMs));
    });
  }

  /** Wakes the first waiter (its wait resolves true); false when nobody waits. */
  wakeOne(): boolean {
    const first = this.#head;
    if (!first) return false;
    this.#leave(first, true);
    return true;
  }

  #leave(waiter: Waiter, woken: boolean): void {
    // A waiter leaves once: a wake after its timeout (or the other way round) finds it gone.
    if (waiter.prev === undefined && this.#head !== waiter) return;
    if (waiter.prev) waiter.prev.next = waiter.next;
    else this.#head = waiter.next;
    if (waiter.next) waiter.next.prev = waiter.prev;
    else this.#tail = waiter.prev;
    waiter.prev = waiter.next = undefined;
    this.#size--;
    waiter.done(woken);
  }
}
