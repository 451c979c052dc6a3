// The chaos run in CI (test/chaos/chaos.ts): 5,000 messages through the built daemon while SQS and Lambda
// misbehave and the daemon is restarted with SIGTERM and kill -9. On this 2-core machine it takes about 75 s
// (about 70 messages/s: the run is bound by LocalStack receives and by the restarts' drains), well inside the
// integration phase's budget; 20,000 messages (scripts/chaos.sh) is the manual run.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatReport, runChaos } from '../chaos/chaos.ts';

describe('chaos run against the built CLI', () => {
  it(
    '5,000 messages under SQS 5xx and hangs, lost Invoke answers, throttles, function errors and restarts: none lost, none deleted early, none run twice at once, an empty DLQ',
    { timeout: 300_000 },
    async () => {
      const report = await runChaos({ messages: 5000, deadlineSec: 240 });
      console.log(formatReport(report));
      assert.ok(report.invocations > 0 && report.restarts.sigterm > 0 && report.restarts.kill9 > 0, 'the run did invoke and restart');
      assert.ok(
        Object.keys(report.faults).length > 0 && report.throttles > 0 && report.functionFailures > 0,
        'faults, throttles and function errors happened',
      );
      assert.deepEqual(
        report.violations.map((v) => `${v.kind}: ${v.detail} [${v.ids.slice(0, 20).join(', ')}]`),
        [],
      );
      assert.equal(report.dlqCount, 0);
      assert.ok(report.queueEmpty, 'the queue is empty');
    },
  );
});
