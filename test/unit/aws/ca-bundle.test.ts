// Where the CA bundle comes from (src/aws/ca-bundle.ts), as botocore finds `ca_bundle`: botocore/configprovider.py
// declares ('ca_bundle', 'AWS_CA_BUNDLE', None, None), the environment variable before the profile's key, and
// botocore/endpoint.py _validate_verify_value refuses a value that is empty or spaces ("Invalid CA bundle: the
// configured value (ca_bundle, AWS_CA_BUNDLE, REQUESTS_CA_BUNDLE, or verify) resolved to an empty or whitespace-only
// string"); the AWS CLI's configuration guide lists `ca_bundle` / AWS_CA_BUNDLE as "the CA certificate bundle to use
// when verifying SSL certificates". The profile is read through the SDK's own loader (AWS_PROFILE, AWS_CONFIG_FILE).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { caBundleSetting, loadCaBundle } from '../../../src/aws/ca-bundle.ts';
import { resolveAwsNetwork } from '../../../src/aws/network.ts';
import { createTestCa, type TestCa } from '../../support/tls-ca.ts';

describe('the CA bundle setting', () => {
  let ca: TestCa;
  let config: string;
  before(() => {
    ca = createTestCa();
    config = join(ca.dir, 'config');
    writeFileSync(config, `[default]\nca_bundle = /from/default.pem\n\n[profile corp]\nca_bundle = ${ca.bundlePath}\n`);
  });
  after(() => ca.remove());

  it('is AWS_CA_BUNDLE before the profile', async () => {
    assert.deepEqual(await caBundleSetting({ AWS_CA_BUNDLE: '/env.pem', AWS_CONFIG_FILE: config }), {
      path: '/env.pem',
      from: 'AWS_CA_BUNDLE',
    });
  });

  it("is the profile's ca_bundle otherwise: AWS_PROFILE, else default, in AWS_CONFIG_FILE", async () => {
    assert.deepEqual(await caBundleSetting({ AWS_CONFIG_FILE: config }), {
      path: '/from/default.pem',
      from: 'ca_bundle of profile "default" in the shared config',
    });
    assert.deepEqual(await caBundleSetting({ AWS_CONFIG_FILE: config, AWS_PROFILE: 'corp' }), {
      path: ca.bundlePath,
      from: 'ca_bundle of profile "corp" in the shared config',
    });
    assert.equal(await caBundleSetting({ AWS_CONFIG_FILE: config, AWS_PROFILE: 'other' }), undefined);
    assert.equal(await caBundleSetting({ AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' }), undefined);
  });

  it('reads the bundle, and refuses an empty setting, a missing file, a file without a certificate', async () => {
    const loaded = await loadCaBundle({ AWS_CONFIG_FILE: config, AWS_PROFILE: 'corp' });
    assert.ok(loaded && 'pem' in loaded);
    assert.equal(loaded.pem.trim(), ca.certPem.trim());
    assert.deepEqual(await loadCaBundle({ AWS_CA_BUNDLE: ' ' }), {
      problem: 'AWS_CA_BUNDLE is empty: name a CA bundle file (PEM), or leave it unset',
    });
    assert.deepEqual(await loadCaBundle({ AWS_CA_BUNDLE: join(ca.dir, 'missing.pem') }), {
      problem: `AWS_CA_BUNDLE ${join(ca.dir, 'missing.pem')} cannot be read: ENOENT`,
    });
    const key = join(ca.dir, 'ca.key');
    assert.deepEqual(await loadCaBundle({ AWS_CA_BUNDLE: key }), {
      problem: `AWS_CA_BUNDLE ${key} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
    });
    const broken = join(ca.dir, 'broken.pem');
    writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    const problem = await loadCaBundle({ AWS_CA_BUNDLE: broken });
    assert.match(problem && 'problem' in problem ? problem.problem : '', /^AWS_CA_BUNDLE .*broken\.pem: certificate 1 does not parse/);
  });

  it('makes one network whose trust names the bundle, or the problems of every setting at once', async () => {
    const network = await resolveAwsNetwork({ AWS_CA_BUNDLE: ca.bundlePath, HTTPS_PROXY: 'http://proxy:3128' });
    assert.ok(!('problems' in network));
    assert.equal(network.trust, `the CA bundle ${ca.bundlePath} (AWS_CA_BUNDLE)`);
    assert.equal(network.secureContext(), network.secureContext(), 'one context, shared');
    assert.deepEqual(network.describe(), { httpsProxy: 'http://proxy:3128 (HTTPS_PROXY)', caBundle: `${ca.bundlePath} (AWS_CA_BUNDLE)` });
    assert.deepEqual(await resolveAwsNetwork({ AWS_CA_BUNDLE: '', HTTPS_PROXY: 'socks5://p:1' }), {
      problems: [
        'HTTPS_PROXY names a socks5:// proxy: only an http:// proxy is supported (socks5://p:1)',
        'AWS_CA_BUNDLE is empty: name a CA bundle file (PEM), or leave it unset',
      ],
    });
    const plain = await resolveAwsNetwork({ AWS_CONFIG_FILE: '/dev/null', AWS_SHARED_CREDENTIALS_FILE: '/dev/null' });
    assert.ok(!('problems' in plain));
    assert.equal(plain.trust, 'the default CAs');
  });
});
