// The import rule's tool fails on an import that points the wrong way (issue 39: "the import rule's tool fails on
// a planted upward import"). dependency-cruiser runs, with the project's own .dependency-cruiser.cjs, on a tiny
// src/ tree in a temporary directory: nothing is ever planted in the real src/, so a killed run leaves nothing
// behind there.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DEPCRUISE = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruiser.mjs');

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A project of `files` (path under src/ -> the paths under src/ it imports) beside the real rule. */
function project(files: Readonly<Record<string, readonly string[]>>): string {
  const dir = mkdtempSync(join(tmpdir(), 'workerless-deps-rule-'));
  dirs.push(dir);
  copyFileSync(join(ROOT, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', allowImportingTsExtensions: true, noEmit: true },
    }),
  );
  for (const [file, imports] of Object.entries(files)) {
    const path = join(dir, 'src', file);
    mkdirSync(dirname(path), { recursive: true });
    const lines = imports.map((to, i) => `import { v as v${i} } from '${relativeImport(file, to)}';`);
    writeFileSync(path, [...lines, `export const v = [${imports.map((_, i) => `v${i}`).join(', ')}].length;`, ''].join('\n'));
  }
  return dir;
}

/** `to` as `from` imports it: '../settle/s.ts' from 'receive/r.ts'. */
function relativeImport(from: string, to: string): string {
  const up = from.split('/').length - 1;
  return (up === 0 ? './' : '../'.repeat(up)) + to;
}

/** Runs `npm run deps`'s command in `dir`: its exit code and what it printed. */
function depcruise(dir: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [DEPCRUISE, 'src', '--config', '.dependency-cruiser.cjs', '--output-type', 'err-long'],
      { cwd: dir, timeout: 20_000 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

describe('the import rule (.dependency-cruiser.cjs)', { concurrency: true }, () => {
  it('passes imports that point down: a step imports the steps before it, aws/ and operator/ read config/', async () => {
    const dir = project({
      'core/c.ts': [],
      'receive/r.ts': ['core/c.ts'],
      'invoke/i.ts': ['receive/r.ts', 'core/c.ts'],
      'settle/s.ts': ['invoke/i.ts', 'receive/r.ts'],
      'dispatch/d.ts': ['settle/s.ts'],
      'temporal/t.ts': [],
      'util/u.ts': [],
      'fleet/f.ts': ['core/c.ts', 'util/u.ts'],
      'fleet/g.ts': ['fleet/f.ts'],
      'config/cfg.ts': ['dispatch/d.ts', 'temporal/t.ts'],
      'aws/a.ts': ['config/cfg.ts', 'fleet/f.ts'],
      'operator/o.ts': ['config/cfg.ts'],
      'daemon/dm.ts': ['fleet/g.ts'],
    });
    const { code, output } = await depcruise(dir);
    assert.equal(code, 0, output);
    assert.match(output, /no dependency violations found/);
  });

  it('fails on an import back up the path, across the adapters or out of the pure fleet/, naming the rule and the arrow', async () => {
    // one tree for every wrong arrow: each run of the tool takes seconds on a loaded machine
    const dir = project({
      'core/c.ts': [],
      'settle/s.ts': ['core/c.ts'],
      'invoke/i.ts': ['settle/s.ts'],
      'receive/r.ts': ['invoke/i.ts', 'fleet/f.ts'],
      'dispatch/d.ts': [],
      'temporal/t.ts': [],
      'aws/a.ts': [],
      'config/cfg.ts': ['aws/a.ts'],
      'operator/o.ts': ['aws/a.ts'],
      'fleet/f.ts': ['core/c.ts', 'dispatch/d.ts', 'temporal/t.ts', 'aws/a.ts'],
    });
    const { code, output } = await depcruise(dir);
    assert.notEqual(code, 0, output);
    for (const [rule, from, to] of [
      ['layer-receive', 'receive/r.ts', 'invoke/i.ts'],
      ['layer-invoke', 'invoke/i.ts', 'settle/s.ts'],
      ['adapters-apart', 'config/cfg.ts', 'aws/a.ts'],
      ['adapters-apart', 'operator/o.ts', 'aws/a.ts'],
      ['layer-receive', 'receive/r.ts', 'fleet/f.ts'],
      ['fleet-pure', 'fleet/f.ts', 'dispatch/d.ts'],
      ['fleet-pure', 'fleet/f.ts', 'temporal/t.ts'],
      ['fleet-pure', 'fleet/f.ts', 'aws/a.ts'],
    ] as const) {
      assert.ok(output.includes(`error ${rule}: src/${from} → src/${to}`), `${rule} for src/${from} → src/${to} in:\n${output}`);
    }
    assert.match(output, /8 dependency violations/);
  });
});
