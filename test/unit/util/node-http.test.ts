import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

// The daemon's modules must not load what it never runs: Node's bundled undici (pulled in by an ES import of
// node:http: src/util/node-http.ts) and the whole of yargs (src/config/cli.ts parses with yargs-parser). Each
// costs resident memory at rest (bench/README.md, "Memory"). Checked in a fresh process with nothing else loaded.
test('the daemon, the CLI parser and the HTTP server load neither undici nor yargs', () => {
  const src = (rel: string) => JSON.stringify(new URL(`../../../src/${rel}`, import.meta.url).href);
  const script = `
    const { registerHooks } = await import('node:module');
    const urls = [];
    registerHooks({ load(url, context, next) { urls.push(url); return next(url, context); } });
    await import(${src('daemon/daemon.ts')});
    await import(${src('config/cli.ts')});
    await import(${src('operator/operations.ts')});
    console.log(JSON.stringify({
      undici: process.moduleLoadList.filter((m) => m.includes('undici')),
      yargs: urls.filter((u) => /node_modules\\/yargs\\//.test(u)),
      modules: urls.length,
    }));`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const seen = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as { undici: string[]; yargs: string[]; modules: number };
  assert.ok(seen.modules > 50, `the daemon's modules were loaded (${seen.modules})`);
  assert.deepEqual({ undici: seen.undici, yargs: seen.yargs }, { undici: [], yargs: [] });
});
