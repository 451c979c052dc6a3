// The switch: --cutover waits for /readyz before it disables anything; each mapping switched once, in order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runServes, switchMappings, waitReady } from '../../../src/migrate/cutover.ts';
import type { SqsMapping } from '../../../src/migrate/migrate-ports.ts';

const mapping = (uuid: string, state: string, source = `arn:aws:sqs:us-east-1:123456789012:${uuid}-q`): SqsMapping => ({
  uuid,
  functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:f',
  eventSourceArn: source,
  state,
  batchSize: 10,
  windowSec: 0,
  filterPatterns: [],
  reportBatchItemFailures: true,
  eventCountMetrics: false,
});

describe('waitReady', () => {
  it('returns once /readyz answers 200, after a refused connection and a 503', async () => {
    const answers = [{ unreachable: 'ECONNREFUSED' }, { status: 503 }, { status: 200 }];
    const asked: string[] = [];
    const probe = (url: string) => (asked.push(url), Promise.resolve(answers.shift()!));
    assert.equal(await waitReady('http://h/readyz', 10_000, { probe }, new AbortController().signal), undefined);
    assert.equal(asked.length, 3);
  });

  it('gives up at the timeout with the last answer', async () => {
    let t = 0;
    const probe = () => Promise.resolve({ status: 503 });
    const why = await waitReady('http://h/readyz', 1_500, { probe }, new AbortController().signal, () => (t += 1_000));
    assert.equal(why, 'not ready within 2 s (last answer: HTTP 503)');
  });
});

describe('switchMappings', () => {
  it('disables the SQS mappings not already disabled, one line each, and leaves other sources alone', async () => {
    const changed: [string, boolean][] = [];
    const lines: string[] = [];
    const ports = {
      listMappings: () =>
        Promise.resolve([
          mapping('a', 'Enabled'),
          mapping('b', 'Disabled'),
          mapping('k', 'Enabled', 'arn:aws:kinesis:us-east-1:123456789012:stream/s'),
        ]),
      setEnabled: (uuid: string, enabled: boolean) => (changed.push([uuid, enabled]), Promise.resolve('Disabling')),
    };
    assert.equal(await switchMappings('f', false, ports, new AbortController().signal, (l) => lines.push(l)), 1);
    assert.deepEqual(changed, [['a', false]]);
    assert.deepEqual(lines, ['mapping a (queue a-q): Enabled -> Disabling', 'mapping b (queue b-q): already Disabled']);
  });

  it('undefined when the function has no SQS mapping', async () => {
    const ports = { listMappings: () => Promise.resolve([]), setEnabled: () => Promise.reject(new Error('not called')) };
    assert.equal(await switchMappings('f', true, ports, new AbortController().signal, () => {}), undefined);
  });
});

describe('switchMappings and another function', () => {
  it('never switches the mapping of a function whose name only starts with the one named (LocalStack 4.13 lists those too)', async () => {
    const other = { ...mapping('o', 'Enabled'), functionArn: 'arn:aws:lambda:us-east-1:123456789012:function:f-admin' };
    const changed: string[] = [];
    const ports = {
      listMappings: () => Promise.resolve([mapping('a', 'Enabled'), other]),
      setEnabled: (uuid: string) => (changed.push(uuid), Promise.resolve('Disabling')),
    };
    await switchMappings('f', false, ports, new AbortController().signal, () => {});
    assert.deepEqual(changed, ['a']);
  });
});

describe('runServes', () => {
  it('a run invoking the function by any of its names takes over; a run of another function does not', () => {
    assert.ok(runServes('orders-fn', ['orders-fn']));
    assert.ok(runServes('orders-fn', ['billing-fn', 'arn:aws:lambda:us-east-1:123456789012:function:orders-fn:live']));
    assert.ok(runServes('arn:aws:lambda:us-east-1:123456789012:function:orders-fn', ['orders-fn:live']));
    assert.ok(!runServes('orders-fn', ['orders-fn-admin']));
    assert.ok(!runServes('orders-fn', []));
  });
});
