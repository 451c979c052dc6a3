// The npm package, taken the way the registry and a user take it:
// - `npm publish --dry-run` in a copy of the build inputs (its prepack script cleans dist and builds, as a real
//   publish would), then `npm pack`: the tarball holds the compiled daemon, README, LICENSE and package.json, and
//   nothing else (no tests, bench, sources or source maps);
// - the tarball installed into an empty folder with production dependencies only (the registry is reached for
//   them), then `workerless --version`, `--help`, and a run from that install against LocalStack that delivers a
//   message to a test function, deletes it and stops on SIGTERM with exit 0;
// - `npm sbom` as the release workflow runs it: CycloneDX JSON that lists the runtime dependencies, not the dev ones.
//
//   localstack/localstack.sh start && node --test test/integration/alone/npm-package.test.ts
//
// It runs after the integration phase, alone (test/integration/alone/): the run needs LocalStack, and its build and
// install take both cores for some seconds, which made the timing tests beside it miss their bounds. It works in its
// own copy of the sources, so it never rebuilds the dist/ the other tests run. Durations are printed (`# ...` lines).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { awsTestEnv, countMessages, createQueue, sendMessages } from '../../support/aws.ts';
import { eventRecords, functionFixture } from '../../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../../support/localstack.ts';
import { run } from '../../docker/docker.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const work = mkdtempSync(join(tmpdir(), 'workerless-npm-package-'));
// Named as the release workflow's checkout is: npm sbom names the SBOM's component after the folder.
const source = join(work, 'workerless');
const install = join(work, 'install');
const bin = join(install, 'node_modules/.bin/workerless');
let tarball = '';
let packedFiles: string[] = [];

function note(line: string): void {
  process.stderr.write(`# ${line}\n`);
}

/** npm with the environment of this process (PATH carries Node 24's npm); fails with its output on a non-zero exit. */
async function npm(
  args: readonly string[],
  cwd: string,
  timeoutMs = 5 * 60_000,
): Promise<{ stdout: string; stderr: string; durationMs: number }> {
  const result = await run('npm', ['--no-audit', '--no-fund', '--no-update-notifier', ...args], { cwd, timeoutMs });
  assert.equal(result.code, 0, `npm ${args.join(' ')} exited with ${result.code ?? result.signal}:\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** Every file under dir, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)));
}

before(
  async () => {
    // The build inputs as a release checkout has them; node_modules is the repository's (linked, for tsc).
    for (const path of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'README.md', 'LICENSE', 'src']) {
      cpSync(join(root, path), join(source, path), { recursive: true });
    }
    symlinkSync(join(root, 'node_modules'), join(source, 'node_modules'));

    const dryRun = await npm(['publish', '--dry-run'], source);
    note(`npm publish --dry-run (prepack: clean dist, build): ${(dryRun.durationMs / 1000).toFixed(1)} s`);
    // npm prints what it would publish on stderr, and the package line on stdout.
    assert.match(dryRun.stdout, new RegExp(`^\\+ ${manifest.name}@${manifest.version.replaceAll('.', '\\.')}$`, 'm'), dryRun.stdout);
    assert.match(dryRun.stderr, /\(dry-run\)/, dryRun.stderr);

    // The prepack above built dist; packing again would only rebuild it.
    const pack = await npm(['pack', '--ignore-scripts', '--json', '--pack-destination', work], source);
    const [packed] = JSON.parse(pack.stdout) as [{ filename: string; size: number; unpackedSize: number; files: { path: string }[] }];
    tarball = join(work, packed.filename);
    packedFiles = packed.files.map((f) => f.path).sort();
    note(
      `npm pack: ${packed.filename}, ${(packed.size / 1024).toFixed(0)} KiB (${(packed.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${packedFiles.length} files)`,
    );

    mkdirSync(install);
    const installed = await npm(['install', '--omit=dev', tarball], install);
    note(`npm install --omit=dev <tarball> into an empty folder: ${(installed.durationMs / 1000).toFixed(1)} s`);
  },
  { timeout: 10 * 60_000 },
);

after(() => rmSync(work, { recursive: true, force: true }));

describe('the packed tarball', () => {
  test('holds the compiled daemon for every source file, README, LICENSE and package.json, and nothing else', () => {
    const sources = filesUnder(join(root, 'src'))
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
      .map((f) => `dist/src/${f.replace(/\.ts$/, '.js')}`);
    assert.ok(sources.includes('dist/src/main.js'));
    assert.deepEqual(packedFiles, ['LICENSE', 'README.md', ...sources, 'package.json'].sort());
  });

  test('package.json: the bin, the Node it needs, licence and repository; nothing importable but package.json', () => {
    const packed = JSON.parse(readFileSync(join(install, 'node_modules/workerless/package.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(packed['bin'], { workerless: 'dist/src/main.js' });
    assert.deepEqual(packed['engines'], { node: '>=22' });
    assert.equal(packed['license'], 'MIT');
    // npm publish --provenance refuses a package whose repository is not the one the workflow runs in.
    assert.deepEqual(packed['repository'], { type: 'git', url: 'git+https://github.com/workerless/workerless.git' });
    assert.deepEqual(packed['exports'], { './package.json': './package.json' });
    assert.equal(packed['version'], manifest.version);
  });
});

describe('installed from the tarball with production dependencies only', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({ functions: { record: { handler: functionFixture('record.mjs'), timeoutSec: 30 } } });
  });
  after(() => endpoint?.stop());

  test('has the runtime dependencies and no development ones', () => {
    const modules = join(install, 'node_modules');
    for (const name of Object.keys(manifest.dependencies)) assert.ok(existsSync(join(modules, name, 'package.json')), `${name} is missing`);
    // A devDependency that a runtime package also needs (the lockfile says which: no "dev" flag) is installed anyway.
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
    const devOnly = Object.keys(manifest.devDependencies).filter((name) => lock.packages[`node_modules/${name}`]?.dev === true);
    assert.ok(devOnly.includes('typescript'), devOnly.join(', '));
    for (const name of devOnly) assert.ok(!existsSync(join(modules, name)), `${name} (a devDependency) was installed`);
  });

  test('workerless --version prints the package version', async () => {
    const result = await run(bin, ['--version'], { cwd: install, timeoutMs: 30_000 });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, `${manifest.version}\n`);
  });

  test('workerless --help lists the options and exits 0', async () => {
    const result = await run(bin, ['--help'], { cwd: install, timeoutMs: 30_000 });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Usage: workerless/);
    assert.match(result.stdout, /--concurrency/);
    assert.match(result.stdout, /WORKERLESS_QUEUES/);
  });

  test('delivers a message to the function, deletes it, and stops on SIGTERM with exit 0', { timeout: 90_000 }, async () => {
    const queue = await createQueue('wl-npm-package');
    const body = JSON.stringify({ from: 'the installed package' });
    const [messageId] = await sendMessages(queue.url, [body]);

    const daemon = startInstalled(['--function', 'record', '--queues', queue.name, '--metrics', 'off', '--poll-for', '1'], {
      ...awsTestEnv({ lambdaEndpoint: endpoint.url }),
    });
    try {
      const calls = await endpoint.waitFor(
        (invocations) => invocations.some((i) => eventRecords(i).some((r) => r.messageId === messageId)),
        30_000,
      );
      const record = calls.flatMap(eventRecords).find((r) => r.messageId === messageId);
      assert.equal(record?.body, body);
      assert.equal(record?.eventSourceARN, queue.arn);
      const deadline = Date.now() + 20_000;
      while ((await countMessages(queue.url)) !== 0) {
        assert.ok(Date.now() < deadline, 'the delivered message was not deleted');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      daemon.child.kill('SIGTERM');
    }
    const exit = await daemon.exited;
    assert.deepEqual(exit, { code: 0, signal: null }, daemon.output());
    assert.match(daemon.output(), /"msg":"workerless started"/);
    assert.match(daemon.output(), /"msg":"stopped cleanly"/);
  });
});

describe('npm sbom, as the release workflow runs it', () => {
  test('is CycloneDX JSON with every runtime package of the lockfile required, and the development ones marked', async () => {
    const { stdout } = await npm(['sbom', '--package-lock-only', '--sbom-format', 'cyclonedx'], source);
    const bom = JSON.parse(stdout) as {
      bomFormat: string;
      specVersion: string;
      metadata: { component: { name: string; version: string } };
      components: { name: string; group?: string; version: string; scope?: string; properties?: { name: string; value: string }[] }[];
    };
    assert.equal(bom.bomFormat, 'CycloneDX');
    assert.match(bom.specVersion, /^1\.\d+$/);
    assert.deepEqual([bom.metadata.component.name, bom.metadata.component.version], [manifest.name, manifest.version]);

    const id = (c: { name: string; group?: string; version: string }): string => `${c.group ? `${c.group}/` : ''}${c.name}@${c.version}`;
    const lock = JSON.parse(readFileSync(join(source, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { version: string; dev?: boolean }>;
    };
    const lockEntries = Object.entries(lock.packages).filter(([path]) => path !== '');
    const lockId = ([path, entry]: [string, { version: string }]): string => `${path.replace(/^.*node_modules\//, '')}@${entry.version}`;
    const required = new Set(bom.components.filter((c) => c.scope === 'required').map(id));
    // Exactly what `npm install workerless` installs at the locked versions: the lockfile's non-dev packages.
    assert.deepEqual([...required].sort(), [...new Set(lockEntries.filter(([, e]) => !e.dev).map(lockId))].sort());
    for (const [name, range] of Object.entries(manifest.dependencies)) {
      assert.ok(
        [...required].some((r) => r.startsWith(`${name}@`)),
        `${name}@${range} is not a required component`,
      );
    }
    // The build and test tools are listed too, as optional development packages.
    const dev = bom.components.filter((c) => c.properties?.some((p) => p.name === 'cdx:npm:package:development' && p.value === 'true'));
    assert.ok(dev.every((c) => c.scope === 'optional'));
    // (one package at one version is one component: a copy the runtime also uses is listed once, as required)
    const devIds = lockEntries.filter(([, e]) => e.dev).map(lockId);
    assert.deepEqual(new Set(dev.map(id)), new Set(devIds.filter((d) => !required.has(d))));
    note(`npm sbom: CycloneDX ${bom.specVersion}, ${required.size} required components, ${dev.length} development ones`);
  });
});

/** The installed `workerless` command (its #! line, its bin link), with exactly the given environment plus PATH and HOME. */
function startInstalled(
  args: string[],
  env: Record<string, string>,
): { child: ChildProcess; output: () => string; exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> } {
  const child = spawn(bin, args, {
    cwd: install,
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => output, exited };
}
