// The lean transport's signing: AWS's own SigV4 signer (@smithy/signature-v4) with node:crypto as its hash
// (NodeSha256), checked against AWS's published SigV4 test suite (post-vanilla, get-vanilla) and against an
// independent SigV4 computation with node:crypto for a signed SQS-style request with a body and a session token.
// The fake endpoints in the other tests do not check signatures; real AWS does.
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { SignatureV4 } from '@smithy/signature-v4';
import { NodeSha256 } from '../../../src/aws/signed-http.ts';

const EXAMPLE = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const DATE = new Date('2015-08-30T12:36:00Z');
const signatureOf = (authorization: string | undefined) => /Signature=([0-9a-f]{64})$/.exec(authorization ?? '')?.[1];

describe('SigV4 with NodeSha256', () => {
  const signer = (options: { service: string; applyChecksum: boolean; sessionToken?: string }) =>
    new SignatureV4({
      service: options.service,
      region: 'us-east-1',
      credentials: { ...EXAMPLE, ...(options.sessionToken ? { sessionToken: options.sessionToken } : {}) },
      sha256: NodeSha256,
      uriEscapePath: true,
      applyChecksum: options.applyChecksum,
    });

  for (const [name, method, expected] of [
    ['post-vanilla', 'POST', '5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b'],
    ['get-vanilla', 'GET', '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31'],
  ] as const) {
    it(`matches AWS's SigV4 test suite: ${name}`, async () => {
      const signed = await signer({ service: 'service', applyChecksum: false }).sign(
        { method, protocol: 'https:', hostname: 'example.amazonaws.com', path: '/', query: {}, headers: { host: 'example.amazonaws.com' } },
        { signingDate: DATE },
      );
      assert.equal(signatureOf(signed.headers['authorization']), expected);
    });
  }

  it('matches an independent SigV4 computation for a signed POST with a body, a checksum header and a session token', async () => {
    const body = '{"QueueUrl":"https://sqs.us-east-1.amazonaws.com/000000000000/q","MaxNumberOfMessages":10}';
    const headers = {
      host: 'sqs.us-east-1.amazonaws.com',
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': 'AmazonSQS.ReceiveMessage',
      'content-length': String(Buffer.byteLength(body)),
    };
    // Signed twice with one signer: the second signature comes from the signer's cached signing key.
    const s = signer({ service: 'sqs', applyChecksum: true, sessionToken: 'TOKEN/+=' });
    const request = { method: 'POST', protocol: 'https:', hostname: headers.host, path: '/', query: {}, headers, body };
    const first = await s.sign(request, { signingDate: DATE });
    const second = await s.sign(request, { signingDate: DATE });

    const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');
    const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
    const all: Record<string, string> = {
      ...headers,
      'x-amz-content-sha256': sha256(body),
      'x-amz-date': '20150830T123600Z',
      'x-amz-security-token': 'TOKEN/+=',
    };
    const names = Object.keys(all).sort();
    const canonical = ['POST', '/', '', ...names.map((n) => `${n}:${all[n]}`), '', names.join(';'), sha256(body)].join('\n');
    const scope = '20150830/us-east-1/sqs/aws4_request';
    const toSign = ['AWS4-HMAC-SHA256', '20150830T123600Z', scope, sha256(canonical)].join('\n');
    let key: Buffer = hmac(`AWS4${EXAMPLE.secretAccessKey}`, '20150830');
    for (const part of ['us-east-1', 'sqs', 'aws4_request']) key = hmac(key, part);
    const expected = createHmac('sha256', key).update(toSign).digest('hex');

    assert.equal(
      first.headers['authorization'],
      `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/${scope}, SignedHeaders=${names.join(';')}, Signature=${expected}`,
    );
    assert.equal(second.headers['authorization'], first.headers['authorization']);
  });
});
