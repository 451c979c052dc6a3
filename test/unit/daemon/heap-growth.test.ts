import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { restoreV8HeapGrowth, SMALL_RUN_MAX_LOOPS } from '../../../src/daemon/heap-growth.ts';

const ours = ['--max-semi-space-size=8', '--heap-growing-percent=10'];

describe('restoreV8HeapGrowth', () => {
  it('keeps the command flag up to SMALL_RUN_MAX_LOOPS loops and gives V8 its growth back above', () => {
    assert.equal(restoreV8HeapGrowth(10, ours, undefined), false);
    assert.equal(restoreV8HeapGrowth(SMALL_RUN_MAX_LOOPS, ours, undefined), false);
    assert.equal(restoreV8HeapGrowth(SMALL_RUN_MAX_LOOPS + 1, ours, undefined), true);
    assert.equal(restoreV8HeapGrowth(10_000, ours, ''), true);
  });

  it("leaves an operator's choice alone: another value, NODE_OPTIONS, or Node started without the flag", () => {
    assert.equal(restoreV8HeapGrowth(10_000, ['--heap-growing-percent=50'], undefined), false);
    assert.equal(restoreV8HeapGrowth(10_000, [...ours, '--heap_growing_percent=30'], undefined), false);
    assert.equal(restoreV8HeapGrowth(10_000, ours, '--heap-growing-percent=10'), false);
    assert.equal(restoreV8HeapGrowth(10_000, ['--max-semi-space-size=8'], undefined), false);
  });

  it('V8 takes the flag back at run time: a run with the flag does more full collections, one reset to 0 as many as none', () => {
    // Promoted garbage: objects that live through two scavenges, then die. Counts mark-compacts with --trace-gc.
    const script = (reset: boolean) =>
      `${reset ? "require('v8').setFlagsFromString('--heap-growing-percent=0');" : ''}` +
      'let keep=[];for(let i=0;i<4e6;i++){keep.push({i,s:"x"+i});if(keep.length>2e5)keep=[]}';
    const fullGcs = (flags: string[], reset: boolean) =>
      execFileSync(process.execPath, [...flags, '--trace-gc', '-e', script(reset)], { encoding: 'utf8' }).split('Mark-Compact').length - 1;
    const none = fullGcs(['--max-semi-space-size=8'], false);
    const flagged = fullGcs(ours, false);
    const reset = fullGcs(ours, true);
    assert.ok(flagged > none, `with the flag ${flagged} full GCs, without ${none}`);
    assert.ok(reset < flagged, `reset at run time ${reset} full GCs, flag kept ${flagged}`);
  });
});
