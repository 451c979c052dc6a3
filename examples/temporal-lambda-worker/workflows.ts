// Example workflow for the Lambda-hosted worker: one activity per workflow. Replace with your own; keep it
// deterministic (workflow code runs in the SDK's sandbox, from the prebuilt bundle).
import { proxyActivities } from '@temporalio/workflow';
import type * as activities from './activities.ts';

const { processOrder } = proxyActivities<typeof activities>({
  // An activity must finish within one invocation: see the deadline rules in README.md.
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5, initialInterval: '1 second' },
});

export interface OrderInput {
  orderId: string;
  /** How long the example activity works, to make the backlog visible in tests. */
  workMs?: number;
}

export async function orderWorkflow(input: OrderInput): Promise<string> {
  return await processOrder(input);
}
