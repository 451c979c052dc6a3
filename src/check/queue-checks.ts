// The checks `workerless check` runs on each queue of each route, once the queue is resolved and the route's
// function read: pure functions from what was found to one line. A new check of a queue against its route (a
// setting the queue needs for a route option, say) is one more function in QUEUE_CHECKS, with its facts added to
// QueueFacts when it needs more than these.
import type { CheckResult } from './check-ports.ts';
import { visibilityFit, type Verdict } from './function-fit.ts';
import { failureDestinationCovered } from './failure-destination-check.ts';
import type { QueueCheck } from './check-ports.ts';

/** The visibility timeout the queue's messages get, against the function's timeout (function-fit.ts). */
const visibilityCovers: QueueCheck = ({ route, queue, fn }) => {
  if (fn === undefined) return undefined;
  // An async durable start settles the message once Lambda accepted it (docs/targets.md): the visibility timeout
  // covers the Invoke call, not the execution, which may run for a year.
  if (route.durable === 'async')
    return { name: `queue ${queue.name} visibility`, ok: true, detail: '--durable async: covers only the start, not the execution' };
  const fromFlag = route.visibilityTimeoutSec !== undefined;
  const visibilitySec = route.visibilityTimeoutSec ?? queue.visibilityTimeoutSec;
  return asResult(`queue ${queue.name} visibility`, visibilityFit(visibilitySec, fromFlag, route.functionName, fn.timeoutSec));
};

/** Run on every resolved queue of every route, in this order. */
export const QUEUE_CHECKS: readonly QueueCheck[] = [visibilityCovers, failureDestinationCovered];

/** A finding as a line of the report: `warn` passes (exit 0) but is printed as a warning. */
export function asResult(name: string, finding: { readonly verdict: Verdict; readonly detail: string }): CheckResult {
  return {
    name,
    ok: finding.verdict !== 'fail',
    detail: finding.detail,
    ...(finding.verdict === 'warn' ? { warning: true } : {}),
  };
}
