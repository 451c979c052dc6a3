import { SMALL_ANSWER_MAX_BYTES } from '../core/answer-caps.ts';
import { postWithSdkRetries } from './sdk-retry.ts';
import { joinPath, type SignedHttp } from './signed-http.ts';
import type { MetricsPublisher, PutMetricDataRequest } from '../core/telemetry/metrics-publisher.ts';

/**
 * PutMetricData on the lean path (`--aws-client lean`, the default) over SignedHttp, so that `--metrics on` does
 * not load the SDK's CloudWatch client for one call per interval (about 5 MiB of a running daemon's resident
 * memory; 27 MiB imported alone; bench/README.md). It speaks the protocol the installed
 * @aws-sdk/client-cloudwatch speaks (3.1162: AWS JSON 1.0, target GraniteServiceVersion20100801,
 * awsQueryCompatible), and keeps what the SDK did that matters:
 * - the endpoint: serviceEndpoint('cloudwatch', ...), i.e. --endpoint-url, AWS_ENDPOINT_URL_CLOUDWATCH,
 *   AWS_ENDPOINT_URL, else monitoring.<region>;
 * - the SDK's standard retries (3 attempts, jittered back-off) inside the caller's deadline;
 * - the error names the SDK throws (InvalidParameterValueException, not CloudWatch's query code
 *   InvalidParameterValue), classified once here as AwsCallError, so logs read the same on both paths.
 * test/unit/aws/cloudwatch-http.test.ts holds the request and the error names to the installed SDK.
 */
export class CloudWatchHttpPublisher implements MetricsPublisher {
  readonly #http: SignedHttp;
  readonly #origin: URL;
  readonly #path: string;
  readonly #onCall: ((operation: string, err: unknown) => void) | undefined;

  /** `endpoint`: serviceEndpoint('cloudwatch', ...).url. `onCall`: counts each call by outcome (once, not per attempt). */
  constructor(http: SignedHttp, endpoint: URL, onCall?: (operation: string, err: unknown) => void) {
    this.#http = http;
    this.#origin = endpoint;
    this.#path = joinPath(endpoint, '/');
    this.#onCall = onCall;
  }

  async putMetricData(request: PutMetricDataRequest, signal: AbortSignal): Promise<void> {
    const call = {
      origin: this.#origin,
      path: this.#path,
      headers: HEADERS,
      body: putMetricDataBody(request),
      operation: 'PutMetricData',
      maxAnswerBytes: SMALL_ANSWER_MAX_BYTES,
      sdkErrorNames: SDK_ERROR_NAMES,
    };
    await postWithSdkRetries(this.#http, call, signal, this.#onCall);
  }
}

/** AWS JSON 1.0, as the SDK sends it; x-amzn-query-mode asks for the awsQuery error code in x-amzn-query-error. */
const HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'application/x-amz-json-1.0',
  'x-amz-target': 'GraniteServiceVersion20100801.PutMetricData',
  'x-amzn-query-mode': 'true',
};

/**
 * The JSON body the SDK's serializer writes: the input's own member names, timestamps as epoch seconds (with
 * milliseconds), and NaN / Infinity as the strings Smithy's JSON uses; absent members left out.
 */
export function putMetricDataBody(request: PutMetricDataRequest): string {
  return JSON.stringify(request, function (this: Record<string, unknown>, key: string, value: unknown) {
    const raw = this[key];
    if (raw instanceof Date) return raw.getTime() / 1000;
    if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
    return value;
  });
}

/**
 * CloudWatch's awsQuery error codes (x-amzn-query-error) that the SDK reports under another name: it throws the
 * exception named after the code if there is one (ResourceNotFound), else the one whose awsQueryError trait
 * matches (@aws-sdk/client-cloudwatch's schema). Codes not listed keep their name there too
 * (ConcurrentModificationException, LimitExceededException, Throttling, AccessDenied...).
 */
const SDK_ERROR_NAMES: Readonly<Record<string, string>> = {
  InternalServiceError: 'InternalServiceFault',
  InvalidFormat: 'InvalidFormatFault',
  InvalidParameterCombination: 'InvalidParameterCombinationException',
  InvalidParameterInput: 'DashboardInvalidInputError',
  InvalidParameterValue: 'InvalidParameterValueException',
  LimitExceeded: 'LimitExceededFault',
  MissingParameter: 'MissingRequiredParameterException',
  ValidationError: 'ValidationException',
};
