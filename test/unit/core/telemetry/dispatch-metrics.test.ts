import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { DispatchMetrics } from '../../../../src/core/telemetry/dispatch-metrics.ts';
import { noopMetrics, type MetricDatum } from '../../../../src/core/telemetry/metrics-sink.ts';
import { RecordingMetrics } from '../../../support/factories.ts';

/** Every event of a message's way, as the dispatcher reports them. */
function reportAll(m: DispatchMetrics, messages: readonly Message[]): void {
  m.agesAtReceive('q', messages, 10_000);
  m.polled('q', messages.length);
  m.gathered('q', 1);
  m.invoked('q', messages.length, 25);
  m.throttled('q', 'ReservedFunctionConcurrentInvocationLimitExceeded');
  m.failedInvoke('q', 1);
  m.deleted('q', messages.length);
  m.settled('q', messages.length, 40);
  m.limit(3);
  m.paused(false);
}

/** A message whose attributes count their reads. */
function countingMessage(reads: { n: number }): Message {
  return {
    MessageId: 'm',
    get Attributes() {
      reads.n++;
      return { SentTimestamp: '4000' };
    },
  };
}

describe('DispatchMetrics with metrics off', () => {
  it('records nothing into noopMetrics and reads no message: no datum, no ages, for nobody', () => {
    const reads = { n: 0 };
    const recorded: MetricDatum[] = [];
    // noopMetrics drops what it is given: listen in on it for the length of the test.
    const original = Object.getOwnPropertyDescriptor(noopMetrics, 'record')!;
    Object.defineProperty(noopMetrics, 'record', { ...original, value: (datum: MetricDatum) => void recorded.push(datum) });
    try {
      reportAll(new DispatchMetrics(noopMetrics, 'fn', 4), [countingMessage(reads)]);
    } finally {
      Object.defineProperty(noopMetrics, 'record', original);
    }
    assert.deepEqual(recorded, []);
    assert.equal(reads.n, 0, 'the ages at receive are not worked out');
  });

  it('with a sink, records every event, the ages at receive included', () => {
    const reads = { n: 0 };
    const sink = new RecordingMetrics();
    reportAll(new DispatchMetrics(sink, 'fn', 4), [countingMessage(reads)]);
    assert.equal(reads.n, 1);
    const ages = sink.data.filter((d) => d.name === 'MessageAgeAtReceive');
    assert.deepEqual(
      ages.map((d) => [d.value, d.dimensions]),
      [[6_000, { Function: 'fn', Queue: 'q' }]],
    );
    assert.ok(sink.data.length >= 14, `recorded ${sink.data.length}`);
  });
});
