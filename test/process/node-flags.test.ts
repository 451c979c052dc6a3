// The V8 flags the daemon runs with, however it is started: each documented way (the workerless command, node
// dist/src/main.js, npm start) started for real, and the flags read from the running daemon's /proc/<pid>/cmdline.
// The image's entrypoint is held to the same flags by test/unit/node-flags.test.ts. Linux only (/proc).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../../src/daemon/node-flags.ts';
import { CLI } from '../support/cli.ts';
import { until } from '../support/factories.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENV = {
  PATH: process.env['PATH'],
  HOME: process.env['HOME'],
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
};

// An endpoint that accepts connections and never answers keeps the daemon in its start-up checks, running.
let silent: Server;
let endpoint = '';
const sockets: Socket[] = [];
before(async () => {
  silent = createServer((socket) => sockets.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
});
after(() => {
  for (const s of sockets) s.destroy();
  silent.close();
});

const args = () => ['--function', 'fn', '--queues', 'q', '--endpoint-url', endpoint];

function cmdline(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return undefined;
  }
}

/** The process under `root` (itself or a descendant: npm's shell's child) that runs the CLI. */
function daemonPid(root: number): number | undefined {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    if (cmdline(pid)?.some((a) => a.endsWith('dist/src/main.js'))) return pid;
    for (const [child, parent] of parents) if (parent === pid) queue.push(child);
  }
  return undefined;
}

interface Started {
  /** The Node options of the running daemon: what comes before the script on its command line. */
  nodeOptions: string[];
  stdout: string;
  stderr: string;
  /** Its exit code after a SIGTERM. */
  code: number | null;
}

/** Starts it, waits until it is in its start-up checks (it has connected), reads its options, then stops it. */
async function start(
  command: string,
  commandArgs: string[],
  options: { ipc?: boolean; env?: Record<string, string> } = {},
): Promise<Started> {
  const connected = sockets.length;
  const child: ChildProcess = spawn(command, commandArgs, {
    cwd: ROOT,
    env: { ...ENV, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe', ...(options.ipc ? (['ipc'] as const) : [])],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  try {
    await until(() => sockets.length > connected || child.exitCode !== null, 20_000, 'the first start-up request', 20);
    assert.equal(child.exitCode, null, `exited early:\n${stdout}\n${stderr}`);
    const pid = daemonPid(child.pid!);
    assert.ok(pid !== undefined, `no process runs ${CLI} under ${command}`);
    const line = cmdline(pid)!;
    const nodeOptions = line.slice(
      1,
      line.findIndex((a) => a.endsWith('dist/src/main.js')),
    );
    process.kill(pid, 'SIGTERM');
    const code = await exited;
    return { nodeOptions, stdout, stderr, code };
  } finally {
    child.kill('SIGKILL');
  }
}

describe('the V8 flags, however the daemon is started', () => {
  it('as the workerless command (its #! line)', async () => {
    chmodSync(CLI, 0o755); // as npm does for a package's bin
    const run = await start(CLI, args());
    assert.deepEqual(run.nodeOptions, NODE_FLAGS);
    assert.equal(run.code, 0, run.stderr);
  });

  it('as node dist/src/main.js: it restarts itself with them, in the same process, and stops cleanly', async () => {
    const run = await start(process.execPath, [CLI, ...args()]);
    assert.deepEqual(run.nodeOptions, NODE_FLAGS);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
    assert.ok(!run.stdout.includes('Node runs without'), run.stdout);
  });

  it('as npm start', async () => {
    const run = await start('npm', ['start', '--silent', '--', ...args()]);
    assert.deepEqual(run.nodeOptions, NODE_FLAGS);
  });

  it("with an operator's own value of one flag: that value stands and the other flag is added", async () => {
    const run = await start(process.execPath, ['--max-semi-space-size=16', CLI, ...args()]);
    assert.deepEqual(run.nodeOptions, ['--heap-growing-percent=10', '--max-semi-space-size=16']);
  });

  it('with a NODE_OPTIONS preload (an APM agent): it does not restart, so the preload runs once, and says why', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wl-preload-'));
    const ran = join(dir, 'ran');
    const preload = join(dir, 'agent.cjs');
    writeFileSync(preload, `require('node:fs').appendFileSync(${JSON.stringify(ran)}, process.pid + '\\n');\n`);
    const run = await start(process.execPath, [CLI, ...args()], { env: { NODE_OPTIONS: `--require ${preload}` } });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(readFileSync(ran, 'utf8').trim().split('\n').length, 1, 'the preload ran once');
    assert.deepEqual(run.nodeOptions, [], 'not restarted');
    assert.ok(run.stdout.includes(`a restart would run the preload --require ${preload} a second time`), run.stdout);
  });

  it('where it cannot restart (forked with an IPC channel): it runs without them and warns', async () => {
    const run = await start(process.execPath, [CLI, ...args()], { ipc: true });
    assert.deepEqual(run.nodeOptions, []);
    const warning = run.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .find((l) => l.msg.startsWith('Node runs without'));
    assert.ok(warning, run.stdout);
    assert.equal(warning.level, 40, 'a warning');
    assert.ok(warning.msg.includes('--max-semi-space-size=8 --heap-growing-percent=10'), warning.msg);
  });
});
