/**
 * Where an entry sits in the heap: when it is due, and its slot in the heap (-1: not scheduled; HANDING_OVER:
 * due, waiting in a fire's list to be handed over).
 */
export interface HeapEntry {
  dueAt: number;
  slot: number;
}

/** The slot of an entry taken out of the heap by a fire, until it is handed over: remove() still cancels it. */
const HANDING_OVER = -2;

/**
 * One timer for many deadlines (the visibility leases' extensions, src/settle/visibility-lease.ts; the SQS calls'
 * deadlines, src/aws/signed-http.ts), instead of a setTimeout each. Most of them are cleared long before they
 * fall due (a batch settled before its first extension, a call answered in milliseconds), so a timer each was
 * armed and cleared for nothing (why that cost memory: docs/performance.md, "Garbage the data path no longer
 * makes"). Here an entry only takes a slot in a binary min-heap (O(log n) in
 * and out, no allocation once the heap has grown to the entries open at a time), and the one timer is aimed at
 * the earliest.
 *
 * - The timer is re-armed only when an entry becomes due earlier than it is aimed; an entry that leaves or is
 *   due later leaves it be: when it fires with nothing due, it is aimed at the earliest entry again. Under a
 *   steady load that is one timer per entry lifetime (20 s for a lease with a 30 s timeout), not one per entry.
 * - When the timer fires, every entry due by `now` is handed to `onDue`, never one before its due time: Node
 *   counts a timer from the event loop's cached time, which may be a little behind `now`, so the timer can fire
 *   a millisecond or more early (a deadline cut short, seen in CI under load); it is then aimed again at what is
 *   left.
 * - With no entry left, the timer stays armed but unref'd: an idle heap keeps no process alive, and the next
 *   entry (a daemon at concurrency 1 makes one lease per batch) finds it armed instead of arming one of its own.
 */
export class TimerHeap<T extends HeapEntry> {
  readonly #now: () => number;
  readonly #onDue: (entry: T) => void;
  readonly #heap: T[] = [];
  #timer: NodeJS.Timeout | undefined;
  /** The due time the timer is aimed at; Infinity when none is armed. */
  #aimedAt = Infinity;
  readonly #fired = () => this.#fire();
  /** The timer never holds the process open, even with entries scheduled. */
  readonly #unref: boolean;

  /**
   * `unref`: for deadlines of work that keeps the process alive on its own (an Invoke's open request): the timer
   * never does, even while entries are scheduled.
   */
  constructor(now: () => number, onDue: (entry: T) => void, options?: { readonly unref?: boolean }) {
    this.#now = now;
    this.#onDue = onDue;
    this.#unref = options?.unref === true;
  }

  /** Schedules `entry` at `dueAt` (monotonic ms, as `now`), or moves it there if it is scheduled already. */
  set(entry: T, dueAt: number): void {
    if (entry.slot >= 0) {
      const earlier = dueAt < entry.dueAt;
      entry.dueAt = dueAt;
      if (earlier) this.#up(entry.slot);
      else this.#down(entry.slot);
    } else {
      entry.dueAt = dueAt;
      entry.slot = this.#heap.length;
      this.#heap.push(entry);
      this.#up(entry.slot);
    }
    if (dueAt < this.#aimedAt) this.#arm();
    else if (!this.#unref) this.#timer?.ref();
  }

  /** Unschedules `entry`, also when it is due in the fire under way and not handed over yet; a no-op when it is not scheduled. */
  remove(entry: T): void {
    const slot = entry.slot;
    if (slot === HANDING_OVER) entry.slot = -1;
    if (slot < 0) return;
    entry.slot = -1;
    const last = this.#heap.pop()!;
    if (last !== entry) {
      this.#heap[slot] = last;
      last.slot = slot;
      this.#up(slot);
      this.#down(last.slot);
    }
    if (this.#heap.length === 0) this.#timer?.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    const by = this.#now();
    this.#aimedAt = Infinity;
    // Taken out before any is handed over: onDue may schedule or remove entries (its own or others). One it
    // removes or sets again before its turn is not handed over in this fire (set again, it waits for its new time).
    const due: T[] = [];
    while (this.#heap.length > 0 && this.#heap[0]!.dueAt <= by) {
      const entry = this.#heap[0]!;
      this.remove(entry);
      entry.slot = HANDING_OVER;
      due.push(entry);
    }
    if (this.#heap.length > 0 && this.#timer === undefined) this.#arm();
    for (const entry of due) {
      if (entry.slot !== HANDING_OVER) continue;
      entry.slot = -1;
      this.#onDue(entry);
    }
  }

  /** Aims the timer at the earliest entry; there is one. */
  #arm(): void {
    clearTimeout(this.#timer);
    const first = this.#heap[0]!;
    this.#aimedAt = first.dueAt;
    this.#timer = setTimeout(this.#fired, Math.max(0, first.dueAt - this.#now()));
    if (this.#unref) this.#timer.unref();
  }

  #up(slot: number): void {
    const heap = this.#heap;
    const entry = heap[slot]!;
    while (slot > 0) {
      const parentSlot = (slot - 1) >> 1;
      const parent = heap[parentSlot]!;
      if (parent.dueAt <= entry.dueAt) break;
      heap[slot] = parent;
      parent.slot = slot;
      slot = parentSlot;
    }
    heap[slot] = entry;
    entry.slot = slot;
  }

  #down(slot: number): void {
    const heap = this.#heap;
    const entry = heap[slot]!;
    const n = heap.length;
    for (;;) {
      let child = 2 * slot + 1;
      if (child >= n) break;
      if (child + 1 < n && heap[child + 1]!.dueAt < heap[child]!.dueAt) child++;
      const next = heap[child]!;
      if (entry.dueAt <= next.dueAt) break;
      heap[slot] = next;
      next.slot = slot;
      slot = child;
    }
    heap[slot] = entry;
    entry.slot = slot;
  }
}
