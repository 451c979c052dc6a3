import { setTimeout as sleep } from 'node:timers/promises';
import { AwsCallError, classifyAwsError } from '../core/errors.ts';
import { ANSWER_TOO_LARGE } from '../core/answer-caps.ts';
import { serviceError, type SignedHttp } from './signed-http.ts';

/** The SDK's standard retry mode: 3 attempts. */
const SDK_ATTEMPTS = 3;

/** The SDK's standard back-off: full jitter over 100 ms (500 ms when throttled) doubling per attempt, at most 20 s. */
function retryDelayMs(attempt: number, throttled: boolean): number {
  return Math.random() * Math.min(20_000, (throttled ? 500 : 100) * 2 ** (attempt - 1));
}

export interface JsonCall {
  readonly origin: URL;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** For errors and counting: ReceiveMessage, PutMetricData... */
  readonly operation: string;
  /** The largest answer this call can get (src/core/answer-caps.ts). */
  readonly maxAnswerBytes: number;
  /** Error codes as the wire names them -> the exception names the SDK's client throws, where they differ. */
  readonly sdkErrorNames: Readonly<Record<string, string>>;
}

/**
 * One AWS JSON 1.0 call of the lean path with the SDK's standard retries, until `signal` (if any) aborts. Failures
 * are classified once, here, and thrown as AwsCallError named as the SDK would name them; `onCall` counts the call
 * once by its outcome (not per attempt). Returns the answer's body.
 */
export async function postWithSdkRetries(
  http: SignedHttp,
  call: JsonCall,
  signal: AbortSignal | undefined,
  onCall?: (operation: string, err: unknown) => void,
): Promise<Buffer> {
  for (let attempt = 1; ; attempt++) {
    try {
      const answer = await http.post(call.origin, call.path, call.headers, call.body, signal, call.maxAnswerBytes);
      if (answer.status < 200 || answer.status >= 300) {
        const err = serviceError(answer);
        const name = call.sdkErrorNames[err.name];
        if (name !== undefined) err.name = name;
        throw err;
      }
      onCall?.(call.operation, undefined);
      return answer.body;
    } catch (err) {
      const e = classifyAwsError(err, signal);
      // The SDK does not retry an oversize answer within the call either (it is no transient error there).
      if (e.kind === 'fatal' || e.code === ANSWER_TOO_LARGE || signal?.aborted || attempt >= SDK_ATTEMPTS) {
        onCall?.(call.operation, err);
        throw new AwsCallError(call.operation, e);
      }
      try {
        await sleep(retryDelayMs(attempt, e.kind === 'throttled'), undefined, { signal });
      } catch (abort) {
        onCall?.(call.operation, abort);
        throw new AwsCallError(call.operation, classifyAwsError(abort, signal));
      }
    }
  }
}
