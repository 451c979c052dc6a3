// The GitHub workflows under .github/workflows, checked offline:
// - actionlint (with shellcheck on every `run:` script) passes on them, and fails, naming each fault, on a copy of
//   the release workflow broken on purpose (so a linter that checks nothing cannot pass this test);
// - what actionlint does not know: every action pinned by a full commit SHA, each job with only the permissions it
//   uses, the release's trigger, targets and attestations;
// - the release's tag check, run as the workflow runs it, with the tag that matches package.json and one that does not.
//
//   scripts/actionlint.sh ensure && node --test test/deploy/workflows.test.ts
//
// Tools: WORKERLESS_ACTIONLINT (scripts/test.sh sets it), else the path scripts/actionlint.sh builds into
// ($WORKERLESS_CACHE_DIR, default ~/.cache/workerless). Without it the actionlint tests are skipped with a message
// saying how to get it; with WORKERLESS_ACTIONLINT set, a missing file is a failure.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const root = fileURLToPath(new URL('../../', import.meta.url));
const workflows = join(root, '.github/workflows');
const cacheDir = process.env['WORKERLESS_CACHE_DIR'] ?? join(homedir(), '.cache/workerless');
const actionlint = process.env['WORKERLESS_ACTIONLINT'] ?? join(cacheDir, 'bin/actionlint');
if (process.env['WORKERLESS_ACTIONLINT'] !== undefined)
  assert.ok(existsSync(actionlint), `WORKERLESS_ACTIONLINT=${actionlint} does not exist`);
const noActionlint = existsSync(actionlint) ? false : `actionlint not found at ${actionlint}: run scripts/actionlint.sh ensure`;
const CHART = 'deploy/helm/workerless/Chart.yaml';
const packageVersion = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

const work = mkdtempSync(join(tmpdir(), 'workerless-workflows-'));
after(() => rmSync(work, { recursive: true, force: true }));

interface Step {
  id?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Job {
  needs?: string | string[];
  permissions?: Record<string, string>;
  steps: Step[];
}
interface Workflow {
  on: Record<string, unknown>;
  permissions?: Record<string, string>;
  jobs: Record<string, Job>;
}

const source = (name: string): string => readFileSync(join(workflows, name), 'utf8');
const load = (name: string): Workflow => parse(source(name)) as Workflow;

interface LintError {
  message: string;
  kind: string;
  line: number;
}

function lint(dir: string, files: string[]): { code: number | null; errors: LintError[]; stderr: string } {
  const result = spawnSync(actionlint, ['-format', '{{json .}}', '-verbose', ...files], { cwd: dir, encoding: 'utf8' });
  return {
    code: result.status,
    errors: result.stdout.trim() === '' ? [] : (JSON.parse(result.stdout) as LintError[]),
    stderr: result.stderr,
  };
}

describe('actionlint', { skip: noActionlint }, () => {
  test('passes on every workflow, with shellcheck checking their scripts', () => {
    const result = lint(root, ['.github/workflows/ci.yml', '.github/workflows/release.yml']);
    assert.deepEqual(result.errors, [], JSON.stringify(result.errors, null, 2));
    assert.equal(result.code, 0, result.stderr);
    // Without shellcheck actionlint says so only in its verbose output, and checks no script.
    assert.doesNotMatch(result.stderr, /Rule "shellcheck" was disabled/);
  });

  test('fails on a release workflow broken on purpose, naming each fault', () => {
    const faults: [string, string][] = [
      // a context property that does not exist
      ['TAG: ${{ github.ref_name }}', 'TAG: ${{ github.ref_nmae }}'],
      // a job that needs a job that does not exist
      ['needs: [version, npm, image]', 'needs: [version, npm, imgae]'],
      // an unquoted expansion in a script: shellcheck's SC2086
      ['echo "version=$version" >>"$GITHUB_OUTPUT"', 'echo version=$version >>$GITHUB_OUTPUT'],
    ];
    let broken = source('release.yml');
    for (const [from, to] of faults) {
      assert.ok(broken.includes(from), `release.yml no longer has ${from}: update this test's faults`);
      broken = broken.replace(from, to);
    }
    const dir = join(work, 'broken');
    mkdirSync(join(dir, '.github/workflows'), { recursive: true });
    writeFileSync(join(dir, '.github/workflows/release.yml'), broken);

    const result = lint(dir, ['.github/workflows/release.yml']);
    assert.equal(result.code, 1, result.stderr);
    const kinds = new Set(result.errors.map((e) => e.kind));
    for (const kind of ['expression', 'job-needs', 'shellcheck']) {
      assert.ok(kinds.has(kind), `no ${kind} error in ${JSON.stringify(result.errors, null, 2)}`);
    }
    assert.ok(result.errors.some((e) => e.message.includes('ref_nmae')));
    assert.ok(result.errors.some((e) => e.message.includes('imgae')));
    assert.ok(result.errors.some((e) => e.message.includes('SC2086')));
  });
});

describe('the workflows, beyond what actionlint checks', () => {
  test('CI runs the suite the way the CI machine does', () => {
    const ci = load('ci.yml');
    const runs = Object.values(ci.jobs).flatMap((job) => job.steps.map((s) => s.run));
    assert.ok(runs.includes('.ci/run'), JSON.stringify(runs));
  });

  for (const name of ['ci.yml', 'release.yml']) {
    test(`${name}: every action is pinned by a full commit SHA, with the tag it was read from`, () => {
      const uses = Object.values(load(name).jobs).flatMap((job) => job.steps.flatMap((s) => (s.uses === undefined ? [] : [s.uses])));
      assert.ok(uses.length > 0);
      for (const use of uses) assert.match(use, /^[\w.-]+\/[\w.-]+@[0-9a-f]{40}$/, use);
      // The comment after each pin names a release (`# v7.0.1`), so a reader and an updater know what it is.
      for (const line of source(name)
        .split('\n')
        .filter((l) => /^\s*-?\s*uses:/.test(l))) {
        assert.match(line, /@[0-9a-f]{40} # v\d+\.\d+\.\d+$/, line);
      }
    });

    test(`${name}: nothing by default, each job only the permissions it uses`, () => {
      const workflow = load(name);
      assert.deepEqual(workflow.permissions, {});
      for (const [jobName, job] of Object.entries(workflow.jobs)) assert.ok(job.permissions, `job ${jobName} declares no permissions`);
    });
  }

  test('release: on v* tags; write permissions only where they are used', () => {
    const release = load('release.yml');
    assert.deepEqual(release.on, { push: { tags: ['v*'] } });
    const permissions = Object.fromEntries(Object.entries(release.jobs).map(([name, job]) => [name, job.permissions]));
    assert.deepEqual(permissions, {
      version: { contents: 'read' },
      npm: { contents: 'read', 'id-token': 'write' },
      image: { contents: 'read', packages: 'write' },
      release: { contents: 'write' },
    });
    // Nothing is published before the tag check passes; the release waits for both publications.
    assert.equal(release.jobs['npm']?.needs, 'version');
    assert.equal(release.jobs['image']?.needs, 'version');
    assert.deepEqual(release.jobs['release']?.needs, ['version', 'npm', 'image']);
  });

  test('release: npm with provenance, the image for two platforms with SBOM and max provenance, a CycloneDX SBOM', () => {
    const release = load('release.yml');
    const npmRuns = release.jobs['npm']?.steps.map((s) => s.run ?? '') ?? [];
    assert.ok(
      npmRuns.some((r) => /^npm publish --provenance\b/.test(r)),
      JSON.stringify(npmRuns),
    );
    const build = release.jobs['image']?.steps.find((s) => s.uses?.startsWith('docker/build-push-action@'));
    assert.ok(build?.with);
    assert.equal(build.with['platforms'], 'linux/amd64,linux/arm64');
    assert.equal(build.with['push'], true);
    assert.equal(build.with['sbom'], true);
    assert.equal(build.with['provenance'], 'mode=max');
    // Every build argument the Dockerfile turns into an OCI label.
    const args = String(build.with['build-args'])
      .trim()
      .split('\n')
      .map((l) => l.split('=')[0]);
    assert.deepEqual(args, ['VERSION', 'REVISION', 'CREATED', 'SOURCE']);
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    for (const arg of args) assert.match(dockerfile, new RegExp(`^ARG ${arg}=`, 'm'), `the Dockerfile has no ARG ${arg}`);
    const releaseRuns = release.jobs['release']?.steps.map((s) => s.run ?? '') ?? [];
    assert.ok(
      releaseRuns.some((r) => r.includes('npm sbom') && r.includes('--sbom-format cyclonedx')),
      JSON.stringify(releaseRuns),
    );
  });

  describe("release: the tag check, run as the workflow's step runs it", () => {
    const step = load('release.yml').jobs['version']?.steps.find((s) => s.id === 'version');

    /** Runs the step in a folder holding package.json and the chart's Chart.yaml, the latter as given. */
    function runCheck(
      tag: string,
      chart = readFileSync(join(root, CHART), 'utf8'),
    ): { code: number | null; stdout: string; outputs: string } {
      assert.ok(step?.run);
      const dir = mkdtempSync(join(work, 'tag-check-'));
      mkdirSync(join(dir, dirname(CHART)), { recursive: true });
      writeFileSync(join(dir, 'package.json'), readFileSync(join(root, 'package.json')));
      writeFileSync(join(dir, CHART), chart);
      const outputFile = join(dir, 'output');
      writeFileSync(outputFile, '');
      // GitHub runs a `run:` step with `bash -e {0}`.
      const result = spawnSync('bash', ['-e', '-c', step.run], {
        cwd: dir,
        encoding: 'utf8',
        env: { PATH: process.env['PATH'], TAG: tag, GITHUB_OUTPUT: outputFile },
      });
      return { code: result.status, stdout: result.stdout, outputs: readFileSync(outputFile, 'utf8') };
    }

    test("passes for v + package.json's version and gives the version to the later jobs", () => {
      const result = runCheck(`v${packageVersion}`);
      assert.equal(result.code, 0, result.stdout);
      assert.equal(result.outputs, `version=${packageVersion}\nprerelease=${packageVersion.includes('-')}\n`);
    });

    test('stops the release on any other tag, naming both versions', () => {
      for (const tag of [`v${packageVersion}-rc.1`, packageVersion, 'v999.0.0']) {
        const result = runCheck(tag);
        assert.equal(result.code, 1, `${tag}: ${result.stdout}`);
        assert.equal(
          result.stdout.trim(),
          `::error::tag ${tag} does not match package.json's version ${packageVersion} (expected v${packageVersion})`,
        );
        assert.equal(result.outputs, '');
      }
    });

    test("stops the release when the chart's appVersion is another version", () => {
      const chart = readFileSync(join(root, CHART), 'utf8');
      const other = chart.replace(/^appVersion: .*$/m, 'appVersion: "0.0.9"');
      assert.notEqual(other, chart);
      const result = runCheck(`v${packageVersion}`, other);
      assert.equal(result.code, 1, result.stdout);
      assert.equal(result.stdout.trim(), `::error::${CHART}'s appVersion 0.0.9 is not package.json's version ${packageVersion}`);
      assert.equal(result.outputs, '');
    });
  });
});
