// Example activity. Long activities should heartbeat so that the next invocation can resume them if a
// Lambda deadline cuts one short (README.md, "Deadline rules").
import { Context } from '@temporalio/activity';
import type { OrderInput } from './workflows.ts';

export async function processOrder(input: OrderInput): Promise<string> {
  const context = Context.current();
  // Cancellation-aware sleep: worker shutdown cancels it once the stop timeout has passed.
  await context.sleep(input.workMs ?? 0);
  return `processed ${input.orderId}`;
}
