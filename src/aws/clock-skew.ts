import { isClockSkewError } from '@smithy/core/retry';

/**
 * Clock skew, corrected as the AWS SDK corrects it (@aws-sdk/core 3.981, httpAuthSchemes: AwsSdkSigV4Signer and
 * getUpdatedSystemClockOffset; @smithy/core's retry: isClockSkewError, which is used as it is, and
 * isClockSkewCorrectedError). @aws-sdk/core does not export its signer's offset rules, so those are written here, and
 * test/unit/aws/clock-skew.test.ts holds them to the SDK's own behaviour:
 * - every request is signed at `Date.now() + offset`;
 * - every answer with a `Date` header (and no `Age` header: a cached answer's date is old) sets the offset to
 *   `Date - now`, unless the call took over 15 minutes (the date then says little about the clock);
 * - a refusal is "skew-corrected" when that moved the offset by a refused request's worth (|offset| >= 4 min,
 *   and not the offset the request was signed with): the SDK then retries it, signed again with the new offset.
 * AWS refuses a signature more than 5 minutes from its own clock
 * (https://docs.aws.amazon.com/IAM/latest/UserGuide/signature-v4-troubleshooting.html).
 */

/** The SDK's threshold for a correction worth a retry: an offset this large has the request refused. */
export const SKEWED_MS = 240_000;
/** An answer that took longer than this says too little about the clock (the SDK's 900 s). */
const STALE_ANSWER_MS = 900_000;

/**
 * A refusal that a retry signed with a corrected clock can cure: a clock-skew error code after a correction, or
 * Lambda's and SQS's "Signature expired" (which @smithy/core's isTransientError retries by name and message).
 * Nothing ran on AWS for such a refusal, so even an Invoke may be sent again.
 */
export function isSkewRefusal(code: string, message: string, corrected: boolean): boolean {
  if (code === 'InvalidSignatureException' && message.includes('Signature expired')) return true;
  return corrected && isClockSkewError({ name: code } as Parameters<typeof isClockSkewError>[0]);
}

/**
 * Calls `onSkew` when an offset becomes skewed (|offset| >= SKEWED_MS) and when it stops being so: once per
 * change, not per answer, since every answer moves the offset by up to the Date header's one-second resolution.
 */
export function skewWatcher(onSkew: (offsetMs: number, skewed: boolean) => void): (offsetMs: number) => void {
  let skewed = false;
  return (offsetMs) => {
    const now = Math.abs(offsetMs) >= SKEWED_MS;
    if (now === skewed) return;
    skewed = now;
    onSkew(offsetMs, now);
  };
}

/** What one answer did to the clock. */
export interface ClockSample {
  /** The offset moved past SKEWED_MS away from what the request was signed with (the SDK's clockSkewCorrected). */
  readonly corrected: boolean;
}

/** The offset between this machine's clock and AWS's, for one service's client (as the SDK keeps one per client). */
export class SkewClock {
  #offsetMs = 0;
  readonly #now: () => number;
  readonly #watch: ((offsetMs: number) => void) | undefined;

  /** `onSkew`: told when the offset becomes skewed and when it stops being so (skewWatcher). */
  constructor(now: () => number = Date.now, onSkew?: (offsetMs: number, skewed: boolean) => void) {
    this.#now = now;
    this.#watch = onSkew && skewWatcher(onSkew);
  }

  get offsetMs(): number {
    return this.#offsetMs;
  }

  /** When a request signed now should say it was signed (the SDK's getSkewCorrectedDate). */
  signingDate(): Date {
    return new Date(this.#now() + this.#offsetMs);
  }

  /**
   * Learns from one answer's `Date` and `Age` headers. `sentAtMs`: when the request was signed (this.now());
   * `signedOffsetMs`: the offset it was signed with.
   */
  sample(date: string | undefined, age: string | undefined, sentAtMs: number, signedOffsetMs: number): ClockSample {
    if (date === undefined || age !== undefined) return { corrected: false };
    const serverMs = Date.parse(date);
    if (Number.isNaN(serverMs)) return { corrected: false };
    const now = this.#now();
    if (now - sentAtMs > STALE_ANSWER_MS) return { corrected: false };
    const offset = serverMs - now;
    this.#offsetMs = offset;
    this.#watch?.(offset);
    return { corrected: Math.abs(offset) >= SKEWED_MS && offset !== signedOffsetMs };
  }
}
