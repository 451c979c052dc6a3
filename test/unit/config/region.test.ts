// The region without --region, as the AWS SDK finds it ("AWS Region",
// https://docs.aws.amazon.com/sdkref/latest/guide/feature-region.html): AWS_REGION, the shared config profile,
// then (ours, as before) AWS_DEFAULT_REGION, then the EC2 instance metadata (IMDSv2: a token, then the region),
// here served by a local HTTP server through AWS_EC2_METADATA_SERVICE_ENDPOINT.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadAwsRegion } from '../../../src/config/region.ts';

const KEYS = [
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_PROFILE',
  'AWS_CONFIG_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_EC2_METADATA_DISABLED',
  'AWS_EC2_METADATA_SERVICE_ENDPOINT',
];
const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));
let dir: string;
let imds: Server;
let imdsUrl: string;
const imdsCalls: string[] = [];
let files = 0;

/** loadAwsRegion() with exactly these variables; a config file of its own per call (the SDK caches files by path). */
async function region(env: Record<string, string>, config?: string) {
  for (const k of KEYS) delete process.env[k];
  const path = join(dir, `config-${++files}`);
  writeFileSync(path, config ?? '');
  Object.assign(
    process.env,
    { AWS_CONFIG_FILE: path, AWS_SHARED_CREDENTIALS_FILE: '/dev/null', AWS_EC2_METADATA_SERVICE_ENDPOINT: imdsUrl },
    env,
  );
  return loadAwsRegion();
}

describe('the region chain', () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'wl-region-'));
    imds = createServer((req, res) => {
      imdsCalls.push(`${req.method} ${req.url}`);
      if (req.method === 'PUT' && req.url === '/latest/api/token') return res.end('token');
      if (req.url === '/latest/meta-data/placement/region' && req.headers['x-aws-ec2-metadata-token'] === 'token')
        return res.end('ap-northeast-3');
      res.statusCode = 404;
      res.end();
    });
    await new Promise<void>((resolve) => imds.listen(0, '127.0.0.1', resolve));
    imdsUrl = `http://127.0.0.1:${(imds.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise((resolve) => imds.close(resolve));
    for (const k of KEYS) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  it('AWS_REGION, then the profile, then AWS_DEFAULT_REGION, then the instance metadata', async () => {
    const profiles = '[default]\nregion = eu-west-2\n[profile other]\nregion = sa-east-1\n';
    assert.deepEqual(await region({ AWS_REGION: 'us-west-1', AWS_DEFAULT_REGION: 'us-west-2' }, profiles), {
      value: 'us-west-1',
      origin: 'AWS_REGION',
    });
    assert.deepEqual(await region({ AWS_DEFAULT_REGION: 'us-west-2' }, profiles), {
      value: 'eu-west-2',
      origin: 'region of profile "default" in the shared config',
    });
    assert.deepEqual(await region({ AWS_PROFILE: 'other' }, profiles), {
      value: 'sa-east-1',
      origin: 'region of profile "other" in the shared config',
    });
    assert.deepEqual(await region({ AWS_DEFAULT_REGION: 'us-west-2' }), { value: 'us-west-2', origin: 'AWS_DEFAULT_REGION' });
    assert.deepEqual(imdsCalls, [], 'the instance metadata is asked only when nothing else gives a region');
    assert.deepEqual(await region({}), { value: 'ap-northeast-3', origin: 'instance metadata' });
    assert.deepEqual(imdsCalls, ['PUT /latest/api/token', 'GET /latest/meta-data/placement/region']);
  });

  it('nothing: undefined (the "required" error), without asking a disabled instance metadata', async () => {
    imdsCalls.length = 0;
    assert.equal(await region({ AWS_EC2_METADATA_DISABLED: 'true' }), undefined);
    assert.deepEqual(imdsCalls, []);
  });
});
