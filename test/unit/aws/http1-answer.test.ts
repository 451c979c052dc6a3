// The lean transport's answer reader (src/aws/http1-answer.ts), on its own: framing by Content-Length, chunked and
// the end of the connection, interim answers, keep-alive, the caps, and the same answer read whole or a byte at a
// time. Its parity with node:http on real sockets is test/unit/aws/http1-pool.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HEAD_MAX_BYTES, Http1AnswerReader, type Http1Answer } from '../../../src/aws/http1-answer.ts';

/** Reads `text` whole, then a byte at a time, and checks both reads agree. */
function readBoth(text: string, max = 1024): Http1Answer | undefined {
  const whole = new Http1AnswerReader(max).read(Buffer.from(text, 'latin1'));
  const slow = new Http1AnswerReader(max);
  let answer: Http1Answer | undefined;
  for (const byte of Buffer.from(text, 'latin1')) answer ??= slow.read(Buffer.from([byte]));
  assert.deepEqual(answer, whole, 'byte at a time differs from whole');
  return whole;
}

const errorOf = (text: string, max = 1024) => {
  try {
    new Http1AnswerReader(max).read(Buffer.from(text, 'latin1'));
  } catch (err) {
    return err as Error & { code?: string };
  }
  assert.fail('no error');
};

describe('Http1AnswerReader', () => {
  it('reads a body framed by Content-Length, with the fields lower-cased and a repeated field joined', () => {
    const a = readBoth('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Amzn-RequestId: r1\r\nVia: a\r\nVia: b\r\n\r\nhello');
    assert.equal(a?.status, 200);
    assert.equal(a?.body.toString(), 'hello');
    assert.equal(a?.headers['x-amzn-requestid'], 'r1');
    assert.equal(a?.headers['via'], 'a, b');
    assert.equal(a?.keepAlive, true);
  });

  it('waits for the rest of a body', () => {
    const r = new Http1AnswerReader(1024);
    assert.equal(r.read(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab')), undefined);
    assert.equal(r.started, true);
    assert.equal(r.read(Buffer.from('cd'))?.body.toString(), 'abcd');
  });

  it('reads a chunked body, dropping chunk extensions and trailer fields', () => {
    const a = readBoth('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n');
    assert.equal(a?.body.toString(), 'abcde');
    assert.equal(a?.keepAlive, true);
  });

  it('reads a body framed by the end of the connection, and does not keep that connection', () => {
    const r = new Http1AnswerReader(1024);
    assert.equal(r.read(Buffer.from('HTTP/1.1 200 OK\r\n\r\npart')), undefined);
    const a = r.end();
    assert.equal(a?.body.toString(), 'part');
    assert.equal(a?.keepAlive, false);
  });

  it('an answer cut short by the end of the connection is no answer', () => {
    const r = new Http1AnswerReader(1024);
    r.read(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'));
    assert.equal(r.end(), undefined);
  });

  it('skips interim answers (100, 103) and reads the one that follows', () => {
    const a = readBoth(
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok',
    );
    assert.equal(a?.status, 201);
    assert.equal(a?.body.toString(), 'ok');
  });

  it('204 and 304 have no body whatever they announce', () => {
    assert.equal(readBoth('HTTP/1.1 204 No Content\r\n\r\n')?.body.length, 0);
    assert.equal(readBoth('HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n')?.body.length, 0);
  });

  it('keeps the connection per RFC 9112: Connection: close, HTTP/1.0 unless keep-alive, and the Keep-Alive timeout hint', () => {
    assert.equal(readBoth('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')?.keepAlive, false);
    assert.equal(readBoth('HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n')?.keepAlive, false);
    const kept = readBoth('HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: 0\r\n\r\n');
    assert.equal(kept?.keepAlive, true);
    assert.equal(kept?.keepAliveMs, 5000);
  });

  it('bytes after a complete answer: the connection is not kept', () => {
    const a = new Http1AnswerReader(1024).read(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1 200'));
    assert.equal(a?.body.toString(), 'x');
    assert.equal(a?.keepAlive, false);
  });

  it('refuses a Content-Length over the cap before reading the body, and a body that grows past it as soon as it does', () => {
    const announced = errorOf('HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n');
    assert.equal(announced.name, 'AnswerTooLarge');
    assert.match(announced.message, /announces 2000 bytes/);
    const chunked = errorOf('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n', 1000);
    assert.equal(chunked.name, 'AnswerTooLarge');
    const r = new Http1AnswerReader(10);
    r.read(Buffer.from('HTTP/1.1 200 OK\r\n\r\n12345'));
    assert.throws(() => r.read(Buffer.from('678901')), { name: 'AnswerTooLarge' });
  });

  it('cuts off a head longer than Node default --max-http-header-size, whether or not it ever ends', () => {
    const field = `X-Long: ${'a'.repeat(HEAD_MAX_BYTES)}\r\n`;
    assert.equal(errorOf(`HTTP/1.1 200 OK\r\n${field}`).code, 'HPE_HEADER_OVERFLOW');
    assert.equal(errorOf(`HTTP/1.1 200 OK\r\n${field}\r\n`).code, 'HPE_HEADER_OVERFLOW');
  });

  it('malformed answers get llhttp codes', () => {
    assert.equal(errorOf('SSH-2.0-OpenSSH\r\n\r\n').code, 'HPE_INVALID_CONSTANT');
    assert.equal(errorOf('HTTP/1.1 200 OK\r\nBad Field: x\r\n\r\n').code, 'HPE_INVALID_HEADER_TOKEN');
    assert.equal(errorOf('HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n').code, 'HPE_UNEXPECTED_CONTENT_LENGTH');
    assert.equal(errorOf('HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n').code, 'HPE_INVALID_CONTENT_LENGTH');
    assert.equal(errorOf('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n').code, 'HPE_INVALID_TRANSFER_ENCODING');
    assert.equal(errorOf('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n').code, 'HPE_INVALID_CHUNK_SIZE');
  });
});
