// The chaos run's Lambda handler (run by the test Lambda endpoint, one module per execution environment). It
// records every invocation by message id, so the run can check what the daemon did against what the function
// saw, and it fails a fixed share of messages on their first receive only: each message then needs at most one
// failed attempt, and with maxReceiveCount 3 anything in the DLQ was put there by the daemon, not by the function.
//
// Body of each message: {"id":"m-000001","sleepMs":40,"fail":"error"}. Records go to
// $CHAOS_RECORD_DIR/invocations-<pid>.jsonl (one file per environment, so concurrent writers never interleave):
//   {"t":"start","inv":<request id>,"at":<ms>,"ids":[...]}              before the work
//   {"t":"end","inv":...,"start":<ms>,"end":<ms>,"records":[...]}       after it, one entry per record
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** What the chaos body carries. */
export interface ChaosBody {
  id: string;
  /** How long the function works on this message; a batch takes the longest of its messages. */
  sleepMs: number;
  /**
   * Fail this message on its first receive (ApproximateReceiveCount 1) and succeed afterwards: 'error' by
   * throwing (a function error fails the whole batch), 'item' by listing it in batchItemFailures.
   */
  fail: false | 'error' | 'item';
}

/** One record's outcome in an invocation, as written to the record file. */
export interface RecordOutcome {
  id: string;
  messageId: string;
  receiptHandle: string;
  receiveCount: number;
  ok: boolean;
}

export type InvocationLine =
  | { t: 'start'; inv: string; at: number; ids: string[] }
  | { t: 'end'; inv: string; start: number; end: number; error: boolean; records: RecordOutcome[] };

interface SqsRecord {
  messageId: string;
  receiptHandle: string;
  body: string;
  attributes: { ApproximateReceiveCount: string };
}

const file = join(process.env['CHAOS_RECORD_DIR'] ?? '.', `invocations-${process.pid}.jsonl`);
const write = (line: InvocationLine): void => appendFileSync(file, `${JSON.stringify(line)}\n`);

export const handler = async (event: { Records: SqsRecord[] }, context: { awsRequestId: string }): Promise<unknown> => {
  const start = Date.now();
  const parsed = event.Records.map((r) => ({
    record: r,
    body: JSON.parse(r.body) as ChaosBody,
    receiveCount: Number(r.attributes.ApproximateReceiveCount),
  }));
  write({ t: 'start', inv: context.awsRequestId, at: start, ids: parsed.map((p) => p.body.id) });
  await sleep(Math.max(0, ...parsed.map((p) => p.body.sleepMs)));
  const firstTime = parsed.filter((p) => p.body.fail !== false && p.receiveCount === 1);
  const failing = new Set(firstTime.map((p) => p.record.messageId));
  // A function error fails the whole batch, so it is used only when every message is on its first receive:
  // otherwise a message on its second receive would be charged a second failure for its batch-mate.
  const throwIt = firstTime.some((p) => p.body.fail === 'error') && parsed.every((p) => p.receiveCount === 1);
  const records = parsed.map((p) => ({
    id: p.body.id,
    messageId: p.record.messageId,
    receiptHandle: p.record.receiptHandle,
    receiveCount: p.receiveCount,
    ok: !throwIt && !failing.has(p.record.messageId),
  }));
  write({ t: 'end', inv: context.awsRequestId, start, end: Date.now(), error: throwIt, records });
  if (throwIt) throw new Error(`chaos: failing ${failing.size} message(s) on their first receive`);
  return { batchItemFailures: [...failing].map((itemIdentifier) => ({ itemIdentifier })) };
};
