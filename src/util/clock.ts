/**
 * The clock for durations, deadlines and waits: milliseconds from performance.now(), which only moves forward.
 * The wall clock (Date.now()) can step back or forward (an NTP correction, a VM resumed from a snapshot): a
 * back-off or a deadline measured on it would stall or end early by the size of the step. Wall-clock time is
 * used only where AWS needs it (request signing, SentTimestamp arithmetic) and where a time is shown to a
 * person or another system (log lines, span timestamps, the status page), converted with epochMsOf() at
 * that boundary.
 */
export function monotonicNow(): number {
  return performance.now();
}

/**
 * Epoch ms that never step: the process's start time (performance.timeOrigin) plus the monotonic time since. For
 * a timeline that must stay continuous (the status page's buckets), at the cost of drifting from the wall clock by
 * whatever steps it took.
 */
export function steadyEpochNow(): number {
  return performance.timeOrigin + performance.now();
}

/** The wall-clock time (epoch ms) of a monotonicNow() reading, as of now: for span timestamps and displays. */
export function epochMsOf(monotonicMs: number, nowMonotonicMs = monotonicNow(), nowEpochMs = Date.now()): number {
  return nowEpochMs - (nowMonotonicMs - monotonicMs);
}
