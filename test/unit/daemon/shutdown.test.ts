// The daemon's shutdown policies: the drain-retry budget inside --shutdown-timeout, the force-exit timer, the
// signals, and a failed part stopping the others.
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import type { DaemonProcess } from '../../../src/daemon/daemon-process.ts';
import { awaitParts, drainRetryMs, forceExitAfter, handleShutdown } from '../../../src/daemon/shutdown.ts';
import { recordingLogger, until } from '../../support/factories.ts';

describe('the drain-retry budget', () => {
  it('leaves the last 15 s of --shutdown-timeout to the invocations in flight', () => {
    // The default --shutdown-timeout 30: 15 s of retries, 15 s for what is in flight.
    assert.equal(drainRetryMs(30_000), 15_000);
    assert.equal(drainRetryMs(60_000), 45_000);
  });

  it('is 0 (release at once) when the timeout is 15 s or less, never negative', () => {
    assert.equal(drainRetryMs(15_000), 0);
    assert.equal(drainRetryMs(1_000), 0);
  });
});

describe('the force-exit timer', () => {
  it('forces the exit once --shutdown-timeout has passed, not before', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const forceExit = mock.fn();
    forceExitAfter(30_000, forceExit);
    t.mock.timers.tick(29_999);
    assert.equal(forceExit.mock.callCount(), 0);
    t.mock.timers.tick(1);
    assert.equal(forceExit.mock.callCount(), 1);
  });

  it('does not keep the process alive: a drain that ends in time exits without waiting for it', () => {
    // Node's own timers: the handle must be unref'd (mocked timers have no refs to check).
    const timers: NodeJS.Timeout[] = [];
    const real = globalThis.setTimeout;
    const spy = mock.method(globalThis, 'setTimeout', (fn: () => void, ms: number) => {
      const handle = real(fn, ms);
      timers.push(handle);
      return handle;
    });
    try {
      forceExitAfter(60_000, () => assert.fail('forced exit'));
    } finally {
      spy.mock.restore();
    }
    assert.equal(timers.length, 1);
    assert.equal(timers[0]?.hasRef(), false);
    clearTimeout(timers[0]);
  });
});

/** The process as main hands it over, recording the signal handler, forced exits and nothing else. */
function fakeProcess() {
  const exits: number[] = [];
  let handler: ((signal: NodeJS.Signals) => void) | undefined;
  const proc: DaemonProcess = {
    stop: new AbortController(),
    onSignal: (h) => {
      handler = h;
    },
    env: {},
    tell: () => {},
    exit: (code) => {
      exits.push(code);
      return undefined as never;
    },
    version: 'test',
  };
  return { proc, exits, signal: (s: NodeJS.Signals) => handler?.(s) };
}

describe('signals and the forced exit', () => {
  const inFlight = [{ status: () => ({ inFlight: [{ queue: 'q', messageIds: ['m-1'] }] }) }];

  it('the first signal stops receiving and starts the drain; the second forces exit 1, naming what is left', () => {
    const { proc, exits, signal } = fakeProcess();
    const { logger, lines } = recordingLogger();
    let stopping = 0;
    handleShutdown(proc, { shutdownTimeoutMs: 30_000 }, logger, { stopping: () => void stopping++ }, inFlight);
    signal('SIGTERM');
    assert.equal(proc.stop.signal.aborted, true);
    assert.equal(stopping, 1);
    assert.equal(lines.at(-1)?.['signal'], 'SIGTERM');
    assert.deepEqual(exits, []);
    signal('SIGINT');
    assert.deepEqual(exits, [1]);
    assert.equal(lines.at(-1)?.['reason'], 'second SIGINT');
    assert.deepEqual(lines.at(-1)?.['left'], [{ queue: 'q', messageIds: ['m-1'] }]);
  });

  it('the shutdown timeout with nothing in flight (only a long poll open) exits 0; with messages left, 1', async () => {
    for (const [dispatchers, code] of [
      [[], 0],
      [[{ status: () => ({ inFlight: [] }) }], 0],
      [inFlight, 1],
    ] as const) {
      const { proc, exits, signal } = fakeProcess();
      const { logger } = recordingLogger();
      handleShutdown(proc, { shutdownTimeoutMs: 5 }, logger, undefined, dispatchers);
      signal('SIGTERM');
      await until(() => exits.length > 0, 5_000, 'the shutdown timeout');
      assert.deepEqual(exits, [code]);
    }
  });

  it('warns at start-up of each route whose --poll-for is longer than --shutdown-timeout', () => {
    const { proc } = fakeProcess();
    const { logger, lines } = recordingLogger();
    const routes = [
      { functionName: 'long', pollForSec: 20 },
      { functionName: 'short', pollForSec: 5 },
    ];
    handleShutdown(proc, { shutdownTimeoutMs: 10_000, routes }, logger, undefined, []);
    const warned = lines.filter((l) => l.msg.startsWith('--shutdown-timeout is below --poll-for'));
    assert.deepEqual(
      warned.map((l) => l['function']),
      ['long'],
    );
  });

  it('a signal that came before the daemon took over starts the drain at once', () => {
    const { proc, exits } = fakeProcess();
    const { logger, lines } = recordingLogger();
    proc.stop.abort();
    handleShutdown(proc, { shutdownTimeoutMs: 30_000 }, logger, undefined, []);
    assert.equal(lines.at(-1)?.['signal'], 'earlier signal');
    assert.deepEqual(exits, []);
  });
});

describe('a failed part', () => {
  it('stops the others as a signal does, once, and comes back with every failure', async () => {
    const stop = new AbortController();
    const causes: string[] = [];
    let release!: () => void;
    const other = new Promise<void>((resolve) => {
      // The part still running ends once the stop reaches it.
      release = resolve;
      stop.signal.addEventListener('abort', () => release(), { once: true });
    });
    const failures = await awaitParts([Promise.reject(new Error('loop bug')), Promise.reject(new Error('spillover')), other], stop, (c) =>
      causes.push(c),
    );
    assert.equal(stop.signal.aborted, true);
    assert.deepEqual(causes, ['failure']);
    assert.deepEqual(
      failures.map((f) => (f as Error).message),
      ['loop bug', 'spillover'],
    );
  });

  it('after a signal, a failure does not start a second shutdown', async () => {
    const stop = new AbortController();
    stop.abort();
    const causes: string[] = [];
    const failures = await awaitParts([Promise.reject(new Error('late'))], stop, (c) => causes.push(c));
    assert.deepEqual(causes, []);
    assert.equal(failures.length, 1);
  });
});
