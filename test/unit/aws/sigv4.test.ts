// The lean transport's SigV4 signer (src/aws/sigv4.ts), held to AWS's own signer: `@smithy/signature-v4`
// configured as the lean client configured it before (uriEscapePath and applyChecksum on) with the SDK clients'
// own SHA-256 (@smithy/core/checksum), itself checked against AWS's published SigV4 test suite (post-vanilla,
// get-vanilla). Both sign a few hundred generated requests, the header sets of real SQS and Lambda calls among
// them, and must give the same headers. An independent computation with node:crypto, written from the IAM User
// Guide's "Create a signed AWS API request" (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html),
// checks one request on its own. The fake endpoints in the other tests
// (and LocalStack) do not check signatures; real AWS does, so this file is what proves them.
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';
import { SkewClock } from '../../../src/aws/clock-skew.ts';
import { SignedHttp } from '../../../src/aws/signed-http.ts';
import { SigV4Signer, type SigningCredentials } from '../../../src/aws/sigv4.ts';
import { RecordingServer } from '../../support/recording-server.ts';
import { seeded } from '../../support/seeded.ts';

const EXAMPLE = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const DATE = new Date('2015-08-30T12:36:00Z');
const signatureOf = (authorization: string | undefined) => /Signature=([0-9a-f]{64})$/.exec(authorization ?? '')?.[1];

/** The SDK's signer, as signed-http.ts configured it before it had its own. */
function sdkSigner(service: string, region: string, credentials: SigningCredentials, applyChecksum = true): SignatureV4 {
  return new SignatureV4({ service, region, credentials, sha256: Sha256, uriEscapePath: true, applyChecksum });
}

interface Case {
  readonly service: string;
  readonly region: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly credentials: SigningCredentials;
  readonly date: Date;
}

async function sdkHeaders(c: Case): Promise<Record<string, string>> {
  const signed = await sdkSigner(c.service, c.region, c.credentials).sign(
    {
      method: 'POST',
      protocol: 'https:',
      hostname: c.headers['host'] ?? '',
      path: c.path,
      query: {},
      headers: { ...c.headers },
      body: c.body,
    },
    { signingDate: c.date },
  );
  return signed.headers;
}

function oursHeaders(signer: SigV4Signer, c: Case): Record<string, string> {
  const headers = { ...c.headers };
  signer.sign({ method: 'POST', path: c.path, headers, body: c.body }, c.credentials, c.date);
  return headers;
}

describe('the SDK signer this file compares with', () => {
  for (const [name, method, expected] of [
    ['post-vanilla', 'POST', '5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b'],
    ['get-vanilla', 'GET', '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31'],
  ] as const) {
    it(`matches AWS's SigV4 test suite: ${name}`, async () => {
      const signed = await sdkSigner('service', 'us-east-1', EXAMPLE, false).sign(
        { method, protocol: 'https:', hostname: 'example.amazonaws.com', path: '/', query: {}, headers: { host: 'example.amazonaws.com' } },
        { signingDate: DATE },
      );
      assert.equal(signatureOf(signed.headers['authorization']), expected);
    });
  }
});

describe('SigV4Signer', () => {
  it('matches an independent SigV4 computation for a signed POST with a body, a checksum header and a session token', () => {
    const body = '{"QueueUrl":"https://sqs.us-east-1.amazonaws.com/000000000000/q","MaxNumberOfMessages":10}';
    const headers = {
      host: 'sqs.us-east-1.amazonaws.com',
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': 'AmazonSQS.ReceiveMessage',
      'content-length': String(Buffer.byteLength(body)),
    };
    // Signed twice with one signer: the second signature comes from the signer's kept signing key.
    const signer = new SigV4Signer('sqs', 'us-east-1');
    const credentials = { ...EXAMPLE, sessionToken: 'TOKEN/+=' };
    const first = { ...headers };
    signer.sign({ method: 'POST', path: '/', headers: first, body }, credentials, DATE);
    const second: Record<string, string> = { ...headers };
    signer.sign({ method: 'POST', path: '/', headers: second, body }, credentials, DATE);

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

    assert.deepEqual(first, {
      ...all,
      authorization: `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/${scope}, SignedHeaders=${names.join(';')}, Signature=${expected}`,
    });
    assert.deepEqual(second, first);
  });

  it('gives the headers of the SDK signer, in its order, for generated requests', async () => {
    const cases = generateCases(0x5167_0004, 400);
    // One signer per service and region for every case, as a run has: its kept key is crossed by days,
    // credentials and tokens changing from one request to the next.
    const signers = new Map<string, SigV4Signer>();
    for (const [i, c] of cases.entries()) {
      const key = `${c.service}/${c.region}`;
      let signer = signers.get(key);
      if (!signer) signers.set(key, (signer = new SigV4Signer(c.service, c.region)));
      const ours = oursHeaders(signer, c);
      const sdk = await sdkHeaders(c);
      assert.deepEqual(ours, sdk, `case ${i}: ${JSON.stringify(c)}`);
      assert.deepEqual(Object.keys(ours), Object.keys(sdk), `case ${i}: header order`);
    }
  });

  it("drops a caller's own authorization, date and x-amz-date, and keeps a given x-amz-content-sha256, as the SDK does", async () => {
    const c: Case = {
      service: 'lambda',
      region: 'us-east-1',
      path: '/2015-03-31/functions/f/invocations',
      headers: {
        host: 'lambda.us-east-1.amazonaws.com',
        Authorization: 'stale',
        Date: 'Mon, 01 Jan 2024 00:00:00 GMT',
        'X-Amz-Date': '20240101T000000Z',
        'X-Amz-Content-Sha256': 'UNSIGNED-PAYLOAD',
        'content-length': '2',
      },
      body: '{}',
      credentials: EXAMPLE,
      date: DATE,
    };
    const ours = oursHeaders(new SigV4Signer(c.service, c.region), c);
    assert.deepEqual(ours, await sdkHeaders(c));
    assert.equal(ours['X-Amz-Content-Sha256'], 'UNSIGNED-PAYLOAD');
    assert.equal(ours['x-amz-content-sha256'], undefined);
  });

  it('refuses credentials without a key or secret, as the SDK does', () => {
    const signer = new SigV4Signer('sqs', 'us-east-1');
    const bad = { accessKeyId: 'A' } as unknown as SigningCredentials;
    assert.throws(() => signer.sign({ method: 'POST', path: '/', headers: { host: 'h' }, body: '' }, bad, DATE), {
      message: 'Resolved credential object is not valid',
    });
  });
});

describe('SignedHttp signs what it sends', () => {
  const server = new RecordingServer();
  let origin: URL;
  before(async () => {
    origin = await server.listen();
  });
  after(() => server.close());

  it("sends the headers the SDK signer gives for the request as it arrives, at the clock's time", async () => {
    const now = Date.parse('2026-11-24T23:59:59.600Z');
    const credentials = { ...EXAMPLE, sessionToken: 'FwoGZXIvYXdzE/token+=' };
    const http = new SignedHttp({
      service: 'lambda',
      region: 'eu-west-1',
      credentials: () => Promise.resolve(credentials),
      maxSockets: 2,
      clock: new SkewClock(() => now),
    });
    try {
      const path = '/2015-03-31/functions/my%20fn%3A1/invocations';
      const sent = {
        'content-type': 'application/octet-stream',
        'x-amz-invocation-type': 'RequestResponse',
        'x-amz-tenant-id': 'ténant 1',
      };
      const body = '{"Records":[{"body":"héllo ✓"}]}';
      await http.post(origin, path, sent, body, undefined, 1024);
      const seen = server.seen.at(-1)!;
      assert.equal(seen.path, path);
      // What arrived, less what the signature added (the SDK adds it again) and node:http's own connection header.
      // Header values go out as UTF-8 bytes, which node:http's parser reads back as latin1; AWS reads the bytes.
      const arrived: Record<string, string> = {};
      for (const [name, value] of Object.entries(seen.headers))
        if (!['authorization', 'x-amz-date', 'x-amz-content-sha256', 'x-amz-security-token', 'connection'].includes(name))
          arrived[name] = Buffer.from(String(value), 'latin1').toString('utf8');
      assert.equal(arrived['x-amz-tenant-id'], 'ténant 1');
      assert.deepEqual(Object.keys(arrived).sort(), ['content-length', 'content-type', 'host', 'x-amz-invocation-type', 'x-amz-tenant-id']);
      const expected = await sdkHeaders({
        service: 'lambda',
        region: 'eu-west-1',
        path,
        headers: arrived,
        body,
        credentials,
        date: new Date(now),
      });
      for (const name of ['authorization', 'x-amz-date', 'x-amz-content-sha256', 'x-amz-security-token'])
        assert.equal(seen.headers[name], expected[name], name);
    } finally {
      http.destroy();
    }
  });
});

/** The SDK's extendedEncodeURIComponent, as the Lambda client encodes a function name into its path. */
const encodeLabel = (label: string) =>
  encodeURIComponent(label).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

const TARGETS = [
  { service: 'sqs', region: 'us-east-1', host: 'sqs.us-east-1.amazonaws.com' },
  { service: 'sqs', region: 'cn-north-1', host: 'sqs.cn-north-1.amazonaws.com.cn' },
  { service: 'lambda', region: 'eu-west-3', host: 'lambda.eu-west-3.amazonaws.com' },
  { service: 'lambda', region: 'us-gov-west-1', host: 'lambda-fips.us-gov-west-1.amazonaws.com' },
  { service: 'sns', region: 'ap-southeast-2', host: 'sns.ap-southeast-2.amazonaws.com' },
  { service: 'monitoring', region: 'us-east-1', host: '127.0.0.1:4566' },
];

const FUNCTION_NAMES = [
  'my-function',
  'arn:aws:lambda:us-east-1:123456789012:function:my-function:$LATEST',
  'my fn',
  'ünïcödé-fn',
  'a~b',
  'a%b',
  'a+b=c',
  "it's (weird)*!",
  '日本語',
];

const RAW_PATHS = [
  '/',
  '',
  '/000000000000/my-queue',
  '/a b/c',
  '/a~b/%41/+/=',
  '//double//slash/',
  '/./a/../b/',
  '/a/',
  '/ünï/😀',
  "/a*b/(c)!/'d'",
  '/..',
  'no-lead/x',
];

const BODIES = [
  '',
  '{}',
  '{"QueueUrl":"https://sqs.us-east-1.amazonaws.com/000000000000/q","MaxNumberOfMessages":1,"WaitTimeSeconds":20}',
  '{"Records":[{"body":"héllo wörld ✓ 😀 日本"}]}',
  'line one\nline two\r\n\ttab',
  'x'.repeat(70_000),
  // A lone surrogate (a message body cut in the middle of a pair): both hash it as UTF-8 does, as U+FFFD.
  'cut \ud83d here',
];

const ODD_VALUES = ['  leading', 'trailing  ', 'multiple   inner  spaces', '\ttab\tand  space ', 'a\r\nb', 'a\tb', ' ', 'plain'];

const CREDENTIALS: SigningCredentials[] = [
  EXAMPLE,
  { ...EXAMPLE, sessionToken: 'FwoGZXIvYXdzEBYaDH/+=token' },
  { accessKeyId: 'ASIAROTATED', secretAccessKey: 'rotated/secret+key=', sessionToken: 'second-token' },
  { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'a different secret for the same key id' },
  { ...EXAMPLE, sessionToken: '' },
];

/** Signing times on both sides of midnight UTC (and of a year's end), and within one second. */
const DATES = [
  '2026-11-24T23:59:59.999Z',
  '2026-11-25T00:00:00.000Z',
  '2026-11-24T23:59:59.001Z',
  '2026-11-25T00:00:00.999Z',
  '2026-12-31T23:59:59.500Z',
  '2027-01-01T00:00:00.000Z',
  '2015-08-30T12:36:00.000Z',
].map((d) => new Date(d));

function generateCases(seed: number, count: number): Case[] {
  const next = seeded(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const cases: Case[] = [];
  for (let i = 0; i < count; i++) {
    const target = pick(TARGETS);
    const body = pick(BODIES);
    let path: string;
    let headers: Record<string, string>;
    if (target.service === 'lambda') {
      path = next() < 0.8 ? `/2015-03-31/functions/${encodeLabel(pick(FUNCTION_NAMES))}/invocations` : pick(RAW_PATHS);
      // Lambda Invoke's headers (src/aws/lambda-http-invoker.ts, and the SDK's InvokeCommand serializer).
      headers = { 'content-type': 'application/octet-stream', 'x-amz-invocation-type': pick(['RequestResponse', 'Event', 'DryRun']) };
      if (next() < 0.3) headers['x-amz-client-context'] = Buffer.from('{"custom":{"a":"ü"}}').toString('base64');
      if (next() < 0.3) headers['x-amz-log-type'] = 'Tail';
      if (next() < 0.3) headers['x-amz-durable-execution-name'] = pick(['exec-1', 'exec with spaces', 'ëxec']);
      if (next() < 0.3) headers['x-amz-tenant-id'] = pick(['tenant-1', 'tënant  two', ' padded ']);
    } else {
      path = next() < 0.7 ? '/' : pick(RAW_PATHS);
      // SQS (and SNS, CloudWatch) over AWS JSON 1.0 (src/aws/sqs-http-source.ts).
      headers = {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': `AmazonSQS.${pick(['ReceiveMessage', 'DeleteMessageBatch', 'ChangeMessageVisibility', 'GetQueueUrl'])}`,
        'x-amzn-query-mode': 'true',
      };
    }
    // Mixed-case names, odd values, and headers the signature leaves out.
    if (next() < 0.3) headers['X-Custom-Header'] = pick(ODD_VALUES);
    if (next() < 0.2) headers['x-amz-meta-odd'] = pick(ODD_VALUES);
    if (next() < 0.15) headers['Content-Type'] = 'application/json';
    if (next() < 0.15) headers['User-Agent'] = 'workerless';
    if (next() < 0.1) headers['x-amzn-trace-id'] = 'Root=1-abc';
    if (next() < 0.1) headers['Proxy-Authorization'] = 'x';
    cases.push({
      service: target.service,
      region: target.region,
      path,
      headers: { ...headers, host: target.host, 'content-length': String(Buffer.byteLength(body)) },
      body,
      credentials: pick(CREDENTIALS),
      date: pick(DATES),
    });
  }
  return cases;
}
