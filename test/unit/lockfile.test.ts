import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

interface LockPackage {
  optionalDependencies?: Record<string, string>;
}

describe('package-lock.json', () => {
  // npm 11's `npm ci` (the official node:24 image's npm) refuses a lock in which an optional dependency has no
  // entry. `npm install` on these machines drops @swc/core's non-Linux builds, which their registry lacks.
  it('has an entry for every optional dependency, so npm 11 ci accepts it', () => {
    const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
      packages: Record<string, LockPackage>;
    };
    const missing: string[] = [];
    for (const [path, pkg] of Object.entries(lock.packages)) {
      for (const dep of Object.keys(pkg.optionalDependencies ?? {})) {
        const nested = `${path}/node_modules/${dep}`;
        if (!(nested in lock.packages) && !(`node_modules/${dep}` in lock.packages)) missing.push(`${dep} (of ${path || 'the root'})`);
      }
    }
    assert.deepEqual(missing, []);
  });
});
