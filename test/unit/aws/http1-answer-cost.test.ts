// What a body costs the answer reader (src/aws/http1-answer.ts) while it is read, whatever its framing (issue 42:
// "tiny chunks defeat the answer caps"): a chunked answer of 1-byte chunks cost about 150 bytes of heap a body byte,
// a Buffer a chunk, so a 6 MiB Invoke answer under its cap exhausted a 512 MiB heap. The heap is read after a full
// collection, with the answer not yet complete, so what is counted is what the reader holds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Http1AnswerReader } from '../../../src/aws/http1-answer.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const held = () => {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

const BODY_BYTES = 2 * 1024 * 1024;

/** Bytes held per body byte once `feed` has given the reader all of the body but its last framing bytes. */
function costPerByte(feed: (reader: Http1AnswerReader) => void): number {
  // Once before, so the code the feed runs is compiled (V8's code space counts in heapUsed): a cold first run read up
  // to 9 bytes a byte on a busy host, against 1.1-1.6 warm, and about 130 before the fix.
  feed(new Http1AnswerReader(6 * 1024 * 1024));
  const reader = new Http1AnswerReader(6 * 1024 * 1024);
  const before = held();
  feed(reader);
  const cost = (held() - before) / BODY_BYTES;
  assert.equal(reader.started, true);
  return cost;
}

describe('Http1AnswerReader: a body costs its bytes, not a buffer a piece', () => {
  it('1-byte chunks, each read on its own: at most 8 bytes held a body byte (it was about 130)', () => {
    const cost = costPerByte((reader) => {
      reader.read(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'));
      for (let i = 0; i < BODY_BYTES; i++) reader.read(Buffer.from('1\r\nx\r\n'));
    });
    console.log(`# 1-byte chunks, a read each: ${cost.toFixed(2)} bytes held a body byte`);
    assert.ok(cost <= 8, `${cost.toFixed(1)} bytes a body byte`);
  });

  it('1-byte chunks in large reads: at most 8 bytes held a body byte', () => {
    const cost = costPerByte((reader) => {
      reader.read(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'));
      const read = Buffer.from('1\r\nx\r\n'.repeat((64 * 1024) / 8));
      for (let sent = 0; sent < BODY_BYTES; sent += (64 * 1024) / 8) reader.read(read);
    });
    console.log(`# 1-byte chunks, 8,192 a read: ${cost.toFixed(2)} bytes held a body byte`);
    assert.ok(cost <= 8, `${cost.toFixed(1)} bytes a body byte`);
  });

  it('a Content-Length body a byte a read: at most 8 bytes held a body byte', () => {
    const cost = costPerByte((reader) => {
      reader.read(Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${BODY_BYTES + 1}\r\n\r\n`));
      for (let i = 0; i < BODY_BYTES; i++) reader.read(Buffer.from('x'));
    });
    console.log(`# Content-Length, a byte a read: ${cost.toFixed(2)} bytes held a body byte`);
    assert.ok(cost <= 8, `${cost.toFixed(1)} bytes a body byte`);
  });

  it('the body read in pieces is the body sent', () => {
    const reader = new Http1AnswerReader(6 * 1024 * 1024);
    const body = Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 251));
    reader.read(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'));
    let answer;
    // Pieces of 1 to 40,000 bytes: some gathered in blocks, some kept whole.
    for (let at = 0, n = 1; at < body.length; at += n, n = (n * 7) % 40_001 || 1) {
      const piece = body.subarray(at, Math.min(at + n, body.length));
      answer = reader.read(Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]));
    }
    answer = reader.read(Buffer.from('0\r\n\r\n'));
    assert.ok(answer);
    assert.ok(answer.body.equals(body));
    assert.equal(answer.body.length, answer.body.buffer.byteLength, 'a buffer of the body size');
  });
});
