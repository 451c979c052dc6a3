// The image's base: the official Node tag, pinned by digest, and the offline build's local stand-in built and used
// under the tag alone (a local image has no registry digest, so building from the pinned reference would pull).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

const read = (rel: string) => readFileSync(new URL(`../../${rel}`, import.meta.url), 'utf8');

/** Runs on their own the lines of a script that derive the base image's tag from the Dockerfile; prints `result`. */
function derivedTag(script: string, lines: RegExp, result: string, nodeImage?: string): string {
  const code = read(script)
    .split('\n')
    .filter((l) => lines.test(l));
  return execFileSync('bash', ['-c', `set -eu; root=.\n${code.join('\n')}\necho "$${result}"`], {
    cwd: new URL('../../', import.meta.url),
    env: { PATH: process.env['PATH'], ...(nodeImage === undefined ? {} : { NODE_IMAGE: nodeImage }) },
    encoding: 'utf8',
  }).trim();
}

describe('the base image', () => {
  it('is node:24-bookworm-slim pinned by digest', () => {
    const arg = /^ARG NODE_IMAGE=(.*)$/m.exec(read('Dockerfile'));
    assert.ok(arg);
    assert.match(arg[1]!, /^node:24-bookworm-slim@sha256:[0-9a-f]{64}$/);
  });

  it('offline, the stand-in is made and used under the tag without the digest, unless NODE_IMAGE is given', () => {
    const standIn = (nodeImage?: string) =>
      derivedTag('docker/build-base-image.sh', /^(dockerfile_default=|NODE_IMAGE=)/, 'NODE_IMAGE', nodeImage);
    const buildFrom = (nodeImage?: string) => derivedTag('docker/build-image.sh', /^base=/, 'base', nodeImage);
    assert.equal(standIn(), 'node:24-bookworm-slim');
    assert.equal(buildFrom(), 'node:24-bookworm-slim');
    assert.equal(standIn('mine:1'), 'mine:1');
    assert.equal(buildFrom('mine:1'), 'mine:1');
    assert.match(read('docker/build-image.sh'), /--build-arg "NODE_IMAGE=\$base"/);
  });
});
