import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseOpenFileLimit } from '../../../src/daemon/open-file-limit.ts';
const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max processes             96365                96365                processes
Max open files            300                  4096                 files
Max locked memory         8388608              8388608              bytes
`;

describe('the open-file limit', () => {
  it('reads the soft "Max open files" of /proc/self/limits; unlimited or missing is unknown', () => {
    assert.equal(parseOpenFileLimit(LIMITS), 300);
    assert.equal(parseOpenFileLimit(LIMITS.replace('300                  4096', 'unlimited            unlimited')), undefined);
    assert.equal(parseOpenFileLimit(''), undefined);
  });
});
