// The test functions (test/fixtures/functions) that the test Lambda endpoint serves, and the SQS event records an
// invocation of one carried, as the integration tests read them back from the endpoint.
import { fileURLToPath } from 'node:url';
import type { InvocationRecord } from './lambda-endpoint/server.ts';

/** The handler file of a test function, e.g. functionFixture('record.mjs'). */
export const functionFixture = (name: string): string => fileURLToPath(new URL(`../fixtures/functions/${name}`, import.meta.url));

/** The fields of an SQS event record that the tests read. */
export interface SqsEventRecord {
  messageId: string;
  body: string;
  eventSourceARN: string;
  attributes: Record<string, string>;
}

/** The records of the SQS event an invocation carried (the daemon's payload; a payload without them is a bug to see). */
export const eventRecords = (inv: InvocationRecord): SqsEventRecord[] => (inv.payload as { Records: SqsEventRecord[] }).Records;
