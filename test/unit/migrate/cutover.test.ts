// The switch: --cutover waits for /readyz before it disables anything; each mapping switched once, in order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AwsCallError, classifyAwsError } from '../../../src/core/errors.ts';
import { interruptedLines, runServes, switchMappings, waitReady } from '../../../src/migrate/cutover.ts';
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
    assert.deepEqual(await switchMappings('f', false, ports, new AbortController().signal, (l) => lines.push(l)), {
      kind: 'switched',
      count: 1,
    });
    assert.deepEqual(changed, [['a', false]]);
    assert.deepEqual(lines, ['mapping a (queue a-q): Enabled -> Disabling', 'mapping b (queue b-q): already Disabled']);
  });

  it('undefined when the function has no SQS mapping', async () => {
    const ports = { listMappings: () => Promise.resolve([]), setEnabled: () => Promise.reject(new Error('not called')) };
    assert.deepEqual(await switchMappings('f', true, ports, new AbortController().signal, () => {}), { kind: 'no-mapping' });
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

describe('switchMappings at a cut-over, against the queues the run reads', () => {
  const two = () => [mapping('a', 'Enabled'), mapping('b', 'Enabled')];

  it('refuses, changing nothing, when the run does not read a queue of an enabled mapping, and names each such queue', async () => {
    const changed: string[] = [];
    const ports = {
      listMappings: () => Promise.resolve([...two(), mapping('c', 'Enabled'), mapping('d', 'Disabled')]),
      setEnabled: (uuid: string) => (changed.push(uuid), Promise.resolve('Disabling')),
    };
    const reads = { queues: new Set(['a-q']), partial: false };
    const outcome = await switchMappings('f', false, ports, new AbortController().signal, () => {}, reads);
    assert.deepEqual(outcome, { kind: 'unread', queues: ['b-q', 'c-q'] });
    assert.deepEqual(changed, [], 'not even the mapping of the queue the run reads');
  });

  it('with --partial disables only the mappings of the queues the run reads, and says which it keeps', async () => {
    const changed: string[] = [];
    const lines: string[] = [];
    const ports = {
      listMappings: () => Promise.resolve(two()),
      setEnabled: (uuid: string) => (changed.push(uuid), Promise.resolve('Disabling')),
    };
    const reads = { queues: new Set(['a-q']), partial: true };
    const outcome = await switchMappings('f', false, ports, new AbortController().signal, (l) => lines.push(l), reads);
    assert.deepEqual(outcome, { kind: 'switched', count: 1 });
    assert.deepEqual(changed, ['a']);
    assert.deepEqual(lines, [
      'mapping a (queue a-q): Enabled -> Disabling',
      'mapping b (queue b-q): kept Enabled: the run does not read this queue',
    ]);
  });

  it('a run reading every queue takes over every mapping', async () => {
    const changed: string[] = [];
    const ports = {
      listMappings: () => Promise.resolve(two()),
      setEnabled: (uuid: string) => (changed.push(uuid), Promise.resolve('Disabling')),
    };
    const reads = { queues: new Set(['a-q', 'b-q', 'other']), partial: false };
    assert.deepEqual(await switchMappings('f', false, ports, new AbortController().signal, () => {}, reads), {
      kind: 'switched',
      count: 2,
    });
    assert.deepEqual(changed, ['a', 'b']);
  });
});

describe('switchMappings interrupted (SIGINT while a mapping is being switched)', () => {
  /** Mappings a, b, c; the stop signal fires while b's update is in flight, after Lambda applied it. */
  const lambda = () => {
    const states = new Map([
      ['a', 'Enabled'],
      ['b', 'Enabled'],
      ['c', 'Enabled'],
    ]);
    let stopAt: string | undefined = 'b';
    const stop = new AbortController();
    const ports = {
      listMappings: () => Promise.resolve([...states].map(([uuid, state]) => mapping(uuid, state))),
      setEnabled: (uuid: string, enabled: boolean, signal: AbortSignal) => {
        states.set(uuid, enabled ? 'Enabling' : 'Disabling');
        if (uuid !== stopAt) return Promise.resolve(states.get(uuid)!);
        stop.abort();
        return Promise.reject(new AwsCallError('UpdateEventSourceMapping', classifyAwsError(signal.reason, signal)));
      },
    };
    return { states, stop, ports, rerun: () => (stopAt = undefined) };
  };

  it('names the mapping in flight as state unknown and lists those not reached; a re-run converges', async () => {
    const { states, stop, ports, rerun } = lambda();
    const lines: string[] = [];
    const outcome = await switchMappings('f', false, ports, stop.signal, (l) => lines.push(l));
    assert.deepEqual(outcome, { kind: 'interrupted', inFlight: 'mapping b (queue b-q)', notReached: ['mapping c (queue c-q)'] });
    assert.deepEqual(lines, ['mapping a (queue a-q): Enabled -> Disabling']);
    assert.deepEqual(interruptedLines(outcome.kind === 'interrupted' ? outcome : assert.fail(), false), [
      'interrupted: mapping b (queue b-q) was being disabled: its state is unknown (Lambda may have applied the update)',
      'interrupted: not reached: mapping c (queue c-q)',
      'run the same command again to finish: it skips the mappings already switched',
    ]);
    assert.equal(states.get('c'), 'Enabled', 'nothing switched after the stop');

    rerun();
    const again: string[] = [];
    assert.deepEqual(await switchMappings('f', false, ports, new AbortController().signal, (l) => again.push(l)), {
      kind: 'switched',
      count: 1,
    });
    assert.deepEqual(again, [
      'mapping a (queue a-q): already Disabling',
      'mapping b (queue b-q): already Disabling',
      'mapping c (queue c-q): Enabled -> Disabling',
    ]);
  });

  it('a stop before the first update leaves every mapping not reached, none in flight', async () => {
    const { stop, ports } = lambda();
    stop.abort();
    const outcome = await switchMappings('f', false, ports, stop.signal, () => {});
    assert.deepEqual(outcome, {
      kind: 'interrupted',
      inFlight: undefined,
      notReached: ['mapping a (queue a-q)', 'mapping b (queue b-q)', 'mapping c (queue c-q)'],
    });
    assert.deepEqual(interruptedLines(outcome.kind === 'interrupted' ? outcome : assert.fail(), false), [
      'interrupted: not reached: mapping a (queue a-q), mapping b (queue b-q), mapping c (queue c-q)',
      'run the same command again to finish: it skips the mappings already switched',
    ]);
  });
});
