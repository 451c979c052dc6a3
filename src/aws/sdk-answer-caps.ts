import { Transform, type Readable } from 'node:stream';
import { answerTooLarge, INVOKE_ANSWER_MAX_BYTES, RECEIVE_ANSWER_MAX_BYTES, SMALL_ANSWER_MAX_BYTES } from '../core/answer-caps.ts';

/**
 * The answer caps of src/core/answer-caps.ts on the SDK's clients (`--aws-client sdk`), so both clients refuse the
 * same answers with the same error: an SDK middleware placed just inside the deserializer, which sees the raw
 * answer before its body is read. A Content-Length over the cap is refused at once, and the body is counted on
 * its way to the deserializer, which fails with AnswerTooLarge (and the socket is destroyed) once it grows past it.
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
        let read = 0;
        const counted = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            read += chunk.length;
            if (read > maxBytes) {
              body.destroy();
              return done(answerTooLarge(read, maxBytes, false));
            }
            done(null, chunk);
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
