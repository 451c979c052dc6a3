// Text that came from the function reaches the logs capped (src/util/cap-text.ts), through the Dispatcher with the
// in-memory fakes: a 1 MB errorMessage and errorType, and a batchItemFailures id that echoes the body (issue 23,
// "Surfaces that leak nothing").
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Dispatcher } from '../../../src/dispatch/dispatcher.ts';
import { TEXT_CAP_BYTES } from '../../../src/util/cap-text.ts';
import {
  FakeInvoker,
  FakeSource,
  RecordingMetrics,
  dispatcherOptions,
  functionError,
  message,
  ok,
  queue,
  recordingLogger,
  stopAfterTests,
  until,
} from '../../support/factories.ts';

/** A marker placed past the cap: it must be cut from every line. */
const MARKER = 'CARD-4111111111111111-MARKER';
/** About 1 MB of function text with the marker in its middle, far past the first KiB. */
const huge = (head: string): string => `${head}${'x'.repeat(512 * 1024)}${MARKER}${'y'.repeat(512 * 1024)}`;
/** Longest a capped field may be: the cap plus the "…[N bytes cut]" note. */
const CAPPED_MAX_BYTES = TEXT_CAP_BYTES + 32;

function run(invoker: FakeInvoker, body: string) {
  const source = new FakeSource();
  const m = message({ Body: body });
  source.push('q', m);
  const { logger, lines } = recordingLogger();
  const dispatcher = new Dispatcher(dispatcherOptions([queue('q')]), {
    source,
    invoker,
    metrics: new RecordingMetrics(),
    logger,
    random: () => 0,
  });
  const stop = stopAfterTests();
  return { lines, source, m, stop, running: dispatcher.run(stop.signal) };
}

describe('text from the function is capped in the logs', () => {
  it('a 1 MB errorMessage and errorType: logged capped, the marker past the cap in no line', async () => {
    const invoker = new FakeInvoker(() => functionError(huge('BigError'), huge('failed: ')));
    const { lines, stop, running } = run(invoker, 'body');
    await until(() => lines.some((l) => l.msg === 'function error; messages stay on the queue'));
    stop.abort();
    await running;
    const line = lines.find((l) => l.msg === 'function error; messages stay on the queue');
    assert.ok(line);
    assert.equal(typeof line['errorMessage'], 'string');
    assert.match(String(line['errorMessage']), /^failed: x+…\[\d+ bytes cut\]$/);
    assert.match(String(line['errorType']), /^BigErrorx+…\[\d+ bytes cut\]$/);
    for (const l of lines) {
      const text = JSON.stringify(l);
      assert.ok(!text.includes(MARKER), `the marker leaked into "${l.msg}"`);
      assert.ok(Buffer.byteLength(text) < 4 * CAPPED_MAX_BYTES, `"${l.msg}" is ${Buffer.byteLength(text)} bytes`);
    }
  });

  it('an unknown itemIdentifier that echoes the body: its length is logged, never its text', async () => {
    const body = 'card 4111111111111111';
    const invoker = new FakeInvoker(() => ok({ batchItemFailures: [{ itemIdentifier: body }] }));
    const { lines, stop, running } = run(invoker, body);
    await until(() => lines.some((l) => l.msg.startsWith('invalid batchItemFailures response')));
    stop.abort();
    await running;
    const line = lines.find((l) => l.msg.startsWith('invalid batchItemFailures response'));
    assert.equal(line?.['reason'], `an itemIdentifier of ${body.length} characters is not in the batch`);
    for (const l of lines) assert.ok(!JSON.stringify(l).includes('4111111111111111'), `the body leaked into "${l.msg}"`);
  });
});
