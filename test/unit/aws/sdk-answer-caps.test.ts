// The SDK clients' answer caps (src/aws/sdk-answer-caps.ts) on a body of 1-byte chunks (issue 42, "tiny chunks
// defeat the answer caps"): the SDK's collector keeps a buffer a chunk it is given, so the middleware hands it small
// chunks gathered in blocks, the body unchanged, and still refuses one that grows past the cap.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { capAnswers } from '../../../src/aws/sdk-answer-caps.ts';
import { SMALL_ANSWER_MAX_BYTES } from '../../../src/core/answer-caps.ts';

const BODY = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));

/** The body as the deserializer would read it: its pieces, through capAnswers(service) for `commandName`. */
async function throughCaps(source: Readable, service: 'lambda' | 'sqs', commandName: string): Promise<Buffer[]> {
  const next = async () => ({ response: { statusCode: 200, headers: {}, body: source } });
  const out = await capAnswers(service)(next, { commandName })({});
  const pieces: Buffer[] = [];
  for await (const piece of (out.response as { body: Readable }).body) pieces.push(piece as Buffer);
  return pieces;
}

describe('capAnswers: tiny chunks', () => {
  it('hands the deserializer 1-byte chunks gathered in blocks, the body unchanged', async () => {
    const pieces = await throughCaps(
      Readable.from(
        (function* () {
          for (const byte of BODY) yield Buffer.from([byte]);
        })(),
        { objectMode: false },
      ),
      'lambda',
      'InvokeCommand',
    );
    assert.ok(Buffer.concat(pieces).equals(BODY));
    console.log(`# ${BODY.length} 1-byte chunks reached the deserializer as ${pieces.length} pieces`);
    assert.ok(pieces.length <= BODY.length / 1024, `${pieces.length} pieces`);
  });

  it('still refuses a body of small chunks that grows past the cap (a DeleteMessageBatch answer)', async () => {
    const over = SMALL_ANSWER_MAX_BYTES + 1;
    const source = Readable.from(
      (function* () {
        for (let i = 0; i < over; i += 7) yield Buffer.alloc(Math.min(7, over - i), 120);
      })(),
    );
    await assert.rejects(throughCaps(source, 'sqs', 'DeleteMessageBatchCommand'), { name: 'AnswerTooLarge' });
  });
});
