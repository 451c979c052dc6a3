import { Transform, type Readable } from 'node:stream';
import { BodyPieces } from './body-pieces.ts';
import { answerTooLarge, INVOKE_ANSWER_MAX_BYTES, RECEIVE_ANSWER_MAX_BYTES, SMALL_ANSWER_MAX_BYTES } from '../core/answer-caps.ts';

/**
 * The answer caps of src/core/answer-caps.ts on the SDK's clients (`--aws-client sdk`), so both clients refuse the
 * same answers with the same error: an SDK middleware placed just inside the deserializer, which sees the raw
 * answer before its body is read. A Content-Length over the cap is refused at once, and the body is counted on
 * its way to the deserializer, which fails with AnswerTooLarge (and the socket is destroyed) once it grows past it;
 * small chunks reach it gathered in blocks, so the body costs its bytes.
 * Use: `client.middlewareStack.addRelativeTo(capAnswers(service), CAP_ANSWERS)`.
 */
export function capAnswers(service: 'sqs' | 'lambda' | 'cloudwatch' | 'sns') {
  return <A, R extends { response: unknown }>(next: (args: A) => Promise<R>, context: { commandName?: string }) =>
    async (args: A): Promise<R> => {
      const out = await next(args);
      const response = out.response as { headers?: Record<string, string | undefined>; body?: unknown };
      const maxBytes = capOf(service, context.commandName ?? '');
      const announced = Number(response.headers?.['content-length']);
      const body = response.body as Readable | undefined;
      if (announced > maxBytes) {
        body?.destroy?.();
        throw answerTooLarge(announced, maxBytes, true);
      }
      if (body && typeof body.pipe === 'function') {
        // Small chunks are passed on gathered in blocks: the SDK's collector keeps a buffer a chunk, so 1-byte chunks
        // would cost it some 130 bytes a body byte under the cap (src/aws/body-pieces.ts).
        const pieces = new BodyPieces();
        const counted = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            if (pieces.bytes + chunk.length > maxBytes) {
              body.destroy();
              return done(answerTooLarge(pieces.bytes + chunk.length, maxBytes, false));
            }
            pieces.add(chunk);
            for (const piece of pieces.take()) this.push(piece);
            done();
          },
          flush(done) {
            for (const piece of pieces.takeAll()) this.push(piece);
            done();
          },
        });
        body.on('error', (err) => counted.destroy(err));
        response.body = body.pipe(counted);
      }
      return out;
    };
}

export const CAP_ANSWERS = { relation: 'after', toMiddleware: 'deserializerMiddleware', name: 'workerlessAnswerCaps' } as const;

function capOf(service: 'sqs' | 'lambda' | 'cloudwatch' | 'sns', commandName: string): number {
  if (service === 'lambda') return INVOKE_ANSWER_MAX_BYTES;
  if (service === 'sqs' && commandName === 'ReceiveMessageCommand') return RECEIVE_ANSWER_MAX_BYTES;
  return SMALL_ANSWER_MAX_BYTES;
}
