// The V8 flags workerless runs with are given in three places: the #! line of the installed command
// (src/main.ts), the Docker image's entrypoint and `npm start`, and src/daemon/node-flags.ts adds them when Node was
// started without them. They must agree, and Node must accept them.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { NODE_FLAGS } from '../../src/daemon/node-flags.ts';

const read = (rel: string) => readFileSync(new URL(`../../${rel}`, import.meta.url), 'utf8');

function shebangFlags(): string[] {
  const m = /^#!\/usr\/bin\/env -S node((?: --\S+)*)\n/.exec(read('src/main.ts'));
  assert.ok(m, 'src/main.ts starts with #!/usr/bin/env -S node <flags>');
  return m[1]!.trim().split(' ');
}

describe('Node flags', () => {
  it('the Docker entrypoint and npm start pass the flags of the #! line', () => {
    const flags = shebangFlags();
    assert.deepEqual(flags, NODE_FLAGS, 'and the daemon adds the same ones when Node was started without them');
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'));
    assert.ok(entrypoint);
    assert.deepEqual(JSON.parse(entrypoint[1]!), ['/usr/bin/tini', '--', 'node', ...flags, '/app/dist/src/main.js']);
    const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    assert.equal(scripts['start'], `node ${flags.join(' ')} dist/src/main.js`);
  });

  it('Node accepts them and they bound the young generation', () => {
    // Enough short-lived objects, many surviving a scavenge, for V8 to grow the new space as far as it may.
    const script =
      "let k=[];for(let i=0;i<5e6;i++){k.push({i,s:'x'+i});if(k.length>3e5)k=[]}" +
      "console.log(require('v8').getHeapSpaceStatistics().find(s=>s.space_name==='new_space').space_size)";
    const newSpace = (flags: string[]) => Number(execFileSync(process.execPath, [...flags, '-e', script], { encoding: 'utf8' }));
    assert.ok(newSpace([]) > 16 * 1024 * 1024, 'without them V8 grows the new space past 16 MiB');
    assert.ok(newSpace(shebangFlags()) <= 16 * 1024 * 1024, 'with them it stays within 2 x 8 MiB');
  });
});
