import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ensureNodeFlags, missingNodeFlags, NODE_FLAGS, type NodeProcess } from '../../../src/daemon/node-flags.ts';

/** A process whose execve records the call and, since the real one does not return, throws (a failed exec). */
function fakeProcess(over: Partial<NodeProcess> = {}): NodeProcess & { execs: unknown[][] } {
  const execs: unknown[][] = [];
  return {
    execPath: '/usr/bin/node',
    execArgv: [],
    argv: ['/usr/bin/node', '/app/dist/src/main.js', '--queues', 'q'],
    env: { PATH: '/usr/bin' },
    execve: (file, args, env) => {
      execs.push([file, args, env]);
      throw new Error('recorded');
    },
    ...over,
    execs,
  };
}

describe('missingNodeFlags', () => {
  it('all of them when Node was started without options', () => {
    assert.deepEqual(missingNodeFlags([], undefined), NODE_FLAGS);
  });

  it('none when Node has them: the #! line, the entrypoint, npm start, or a restart', () => {
    assert.deepEqual(missingNodeFlags(NODE_FLAGS, undefined), []);
    assert.deepEqual(missingNodeFlags(['--import', 'x.js', ...NODE_FLAGS], ''), []);
  });

  it("an operator's own value stands, in either spelling, on the command line or in NODE_OPTIONS", () => {
    assert.deepEqual(missingNodeFlags(['--max_semi_space_size=16'], undefined), ['--heap-growing-percent=10']);
    assert.deepEqual(missingNodeFlags(['--heap-growing-percent', '0'], undefined), ['--max-semi-space-size=8']);
    assert.deepEqual(missingNodeFlags([], '--inspect --max-semi-space-size=4'), ['--heap-growing-percent=10']);
    assert.deepEqual(missingNodeFlags(['--max-semi-space-size-other=1'], '--max-old-space-size=512'), NODE_FLAGS);
  });
});

describe('ensureNodeFlags', () => {
  it('replaces the process with the same script and arguments under the missing flags, before its own options', () => {
    const proc = fakeProcess({ execArgv: ['--max-semi-space-size=16', '--enable-source-maps'] });
    ensureNodeFlags(proc);
    assert.deepEqual(proc.execs, [
      [
        '/usr/bin/node',
        [
          '/usr/bin/node',
          '--heap-growing-percent=10',
          '--max-semi-space-size=16',
          '--enable-source-maps',
          '/app/dist/src/main.js',
          '--queues',
          'q',
        ],
        { PATH: '/usr/bin' },
      ],
    ]);
  });

  it('does nothing when nothing is missing', () => {
    const proc = fakeProcess({ execArgv: [...NODE_FLAGS] });
    assert.deepEqual(ensureNodeFlags(proc), []);
    assert.deepEqual(proc.execs, []);
  });

  it('warns, naming the flags, when it cannot restart: no execve, an IPC channel, a preload that would run twice, or a failed exec', () => {
    const cases: [Partial<NodeProcess>, string][] = [
      [{ execve: undefined }, 'this Node cannot replace the process'],
      [{ channel: {} }, 'the process has an IPC channel'],
      [
        {
          execve: () => {
            throw new Error('EACCES');
          },
        },
        'restarting Node with them failed (EACCES)',
      ],
      [
        { env: { NODE_OPTIONS: '--require /opt/apm/agent.js' } },
        'a restart would run the preload --require /opt/apm/agent.js a second time',
      ],
      [{ execArgv: ['--import=@opentelemetry/auto'] }, 'a restart would run the preload --import=@opentelemetry/auto a second time'],
      [{ execArgv: ['-r', 'dd-trace/init'] }, 'a restart would run the preload -r dd-trace/init a second time'],
    ];
    for (const [over, why] of cases) {
      const proc = fakeProcess(over);
      const warnings = ensureNodeFlags(proc);
      assert.equal(warnings.length, 1);
      assert.ok(warnings[0]!.startsWith(`Node runs without --max-semi-space-size=8 --heap-growing-percent=10 and ${why}`), warnings[0]);
      assert.ok(warnings[0]!.includes('node --max-semi-space-size=8 --heap-growing-percent=10 dist/src/main.js'), warnings[0]);
      assert.deepEqual(proc.execs, []);
    }
  });
});
