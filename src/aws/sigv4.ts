import { createHmac, createSecretKey, hash, type KeyObject } from 'node:crypto';

/**
 * AWS Signature Version 4 for the lean client's requests (IAM User Guide, "Create a signed AWS API request" and
 * "Elements of an AWS API request signature": https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html,
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-signing-elements.html), on node:crypto directly.
 *
 * It replaces `@smithy/signature-v4` on the hot path, where that signer allocated about a quarter of all bytes
 * per message (hex by string concatenation, a Uint8Array per digest, an HMAC of the secret per request for its
 * key cache, sorts and regexes per header). It signs exactly what signed-http.ts sends (a method, a path without
 * a query, a string body) and produces the headers `SignatureV4` produces with the options the lean client gave
 * it (uriEscapePath: true, applyChecksum: true): test/unit/aws/sigv4.test.ts holds the two to each other.
 */

/** The credentials a signature is made with (what the SDK's credential providers resolve). */
export interface SigningCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string | undefined;
}

export interface SignableRequest {
  readonly method: string;
  /** The path as it goes on the wire (its labels URI-encoded once already), without a query. */
  readonly path: string;
  /** Every header to send, host and content-length included; the signature's headers are added to it. */
  readonly headers: Record<string, string>;
  readonly body: string;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';
const AMZ_DATE = 'x-amz-date';
const SECURITY_TOKEN = 'x-amz-security-token';
const CONTENT_SHA256 = 'x-amz-content-sha256';

/**
 * Headers left out of the signature, as the SDK leaves them out: hop-by-hop headers and ones that proxies and
 * agents add or rewrite on the way (AWS would then see a different value than the one signed).
 */
const UNSIGNABLE = new Set([
  'authorization',
  'cache-control',
  'connection',
  'expect',
  'from',
  'keep-alive',
  'max-forwards',
  'pragma',
  'referer',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'user-agent',
  'x-amzn-trace-id',
]);
/** Headers the signature makes itself: a caller's own are dropped, as the SDK drops them, not sent beside them. */
const GENERATED = new Set(['authorization', AMZ_DATE, 'date']);
/** Values that need the spec's trimming: line breaks, tabs, runs of spaces, or a space at either end. */
const UNTRIMMED = /[\r\n\t]| {2}|^ | $/;
/** A name that toLowerCase() may change: an upper-case ASCII letter, or anything beyond ASCII. */
const NOT_LOWER = /[A-Z]|[^\x00-\x7f]/;
/** Canonical paths kept per signer: a client signs a handful of paths (one per queue endpoint or function). */
const MAX_PATHS = 64;

/** The signing key of one day, region and service (the spec's kSigning), kept for the day's requests. */
interface DayKey {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly shortDate: string;
  readonly scope: string;
  readonly key: KeyObject;
}

/**
 * Signs requests to one service in one region. Keeps the current day's signing key (the SDK keeps up to 50 in a
 * process-wide cache keyed by day, region, service and credentials; a signer here signs for one region and one
 * service, so one key is enough: it is derived again when the day or the credentials change).
 */
export class SigV4Signer {
  readonly #region: string;
  readonly #service: string;
  #dayKey: DayKey | undefined;
  #second = Number.NaN;
  #longDate = '';
  readonly #paths = new Map<string, string>();

  constructor(service: string, region: string) {
    this.#service = service;
    this.#region = region;
  }

  /**
   * Adds x-amz-date, x-amz-security-token (with a session token), x-amz-content-sha256 and authorization to
   * `request.headers`, signed at `signingDate` (AWS's time: the caller's clock corrected for skew). Drops a
   * caller's own authorization, x-amz-date and date headers, as the SDK does.
   */
  sign(request: SignableRequest, credentials: SigningCredentials, signingDate: Date): void {
    if (typeof credentials.accessKeyId !== 'string' || typeof credentials.secretAccessKey !== 'string')
      throw new Error('Resolved credential object is not valid');
    const headers = request.headers;
    let sha256Given: string | undefined;
    for (const name in headers) {
      const lower = lowerCase(name);
      if (GENERATED.has(lower)) delete headers[name];
      else if (lower === CONTENT_SHA256) sha256Given ??= headers[name];
    }
    const longDate = this.#amzDate(signingDate);
    const dayKey = this.#key(credentials, longDate.slice(0, 8));
    headers[AMZ_DATE] = longDate;
    if (credentials.sessionToken) headers[SECURITY_TOKEN] = credentials.sessionToken;
    // The payload's hash goes into the canonical request; with applyChecksum it is also sent (S3 requires it,
    // other services accept it), unless the caller gave one of its own.
    const payloadHash = sha256Given ?? hash('sha256', request.body, 'hex');
    if (sha256Given === undefined) headers[CONTENT_SHA256] = payloadHash;

    const { signed, canonical } = canonicalHeaders(headers);
    const canonicalRequest = `${request.method}\n${this.#canonicalPath(request.path)}\n\n${canonical}\n${signed}\n${payloadHash}`;
    const stringToSign = `${ALGORITHM}\n${longDate}\n${dayKey.scope}\n${hash('sha256', canonicalRequest, 'hex')}`;
    const signature = createHmac('sha256', dayKey.key).update(stringToSign).digest('hex');
    headers['authorization'] =
      `${ALGORITHM} Credential=${credentials.accessKeyId}/${dayKey.scope}, SignedHeaders=${signed}, Signature=${signature}`;
  }

  /** "20150830T123600Z": the ISO 8601 basic format of the spec, in UTC; the same for every request of a second. */
  #amzDate(date: Date): string {
    const second = Math.floor(date.getTime() / 1000);
    if (second !== this.#second) {
      const iso = date.toISOString();
      this.#longDate = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
      this.#second = second;
    }
    return this.#longDate;
  }

  /** kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request"). */
  #key(credentials: SigningCredentials, shortDate: string): DayKey {
    const cached = this.#dayKey;
    if (
      cached?.shortDate === shortDate &&
      cached.accessKeyId === credentials.accessKeyId &&
      cached.secretAccessKey === credentials.secretAccessKey
    )
      return cached;
    let key = createHmac('sha256', `AWS4${credentials.secretAccessKey}`).update(shortDate).digest();
    for (const part of [this.#region, this.#service, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
    this.#dayKey = {
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      shortDate,
      scope: `${shortDate}/${this.#region}/${this.#service}/aws4_request`,
      // A KeyObject once, instead of a key imported from bytes by every request's HMAC.
      key: createSecretKey(key),
    };
    return this.#dayKey;
  }

  #canonicalPath(path: string): string {
    let canonical = this.#paths.get(path);
    if (canonical === undefined) {
      if (this.#paths.size >= MAX_PATHS) this.#paths.clear();
      canonical = canonicalPath(path);
      this.#paths.set(path, canonical);
    }
    return canonical;
  }
}

/**
 * The spec's CanonicalURI for every service but S3: the path normalized (empty and "." segments removed, ".."
 * resolved) and URI-encoded once more, segment by segment ("Elements of an AWS API request signature":
 * "each path segment must be URI-encoded twice"; the caller has encoded it once). A path that ends in "/"
 * keeps its "/".
 */
function canonicalPath(path: string): string {
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const trail = segments.length > 0 && path.endsWith('/') ? '/' : '';
  // Always from the root: the SDK's HttpRequest makes an empty path "/" and puts a "/" before one without.
  return `/${segments.map(uriEncode).join('/')}${trail}`;
}

/** The spec's UriEncode: every byte but the unreserved characters (A-Z a-z 0-9 - . _ ~) as %XY, upper-case hex. */
function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * CanonicalHeaders and SignedHeaders: every signable header, its name in lower case, its value with line breaks
 * and runs of spaces and tabs made one space and the ends trimmed, sorted by name. Of two names that differ only
 * in case, the value of the one that sorts last is signed, as the SDK signs it.
 */
function canonicalHeaders(headers: Record<string, string>): { signed: string; canonical: string } {
  // Sorted as they are collected (a dozen at most), names and their lower case side by side: no array of pairs,
  // no comparator closure and no name lower-cased twice per request.
  const names: string[] = [];
  const lowers: string[] = [];
  for (const name in headers) {
    const lower = lowerCase(name);
    if (UNSIGNABLE.has(lower) || lower.startsWith('proxy-') || lower.startsWith('sec-')) continue;
    let i = names.length;
    names.push(name);
    lowers.push(lower);
    // By name in lower case, then (for names that differ only in case) by name as given.
    while (i > 0 && (lower < lowers[i - 1]! || (lower === lowers[i - 1] && name < names[i - 1]!))) {
      names[i] = names[i - 1]!;
      lowers[i] = lowers[i - 1]!;
      i--;
    }
    names[i] = name;
    lowers[i] = lower;
  }
  let signed = '';
  let canonical = '';
  for (let i = 0; i < names.length; i++) {
    const lower = lowers[i]!;
    if (lowers[i + 1] === lower) continue;
    const value = headers[names[i]!]!;
    signed += signed === '' ? lower : `;${lower}`;
    canonical += `${lower}:${UNTRIMMED.test(value) ? trimValue(value) : value}\n`;
  }
  return { signed, canonical };
}

/** toLowerCase() makes a new string even of one in lower case already, as the lean client's header names are. */
function lowerCase(name: string): string {
  return NOT_LOWER.test(name) ? name.toLowerCase() : name;
}

function trimValue(value: string): string {
  return value
    .replace(/[\r\n]/g, ' ')
    .replace(/[ \t]+/g, ' ')
    .replace(/^ | $/g, '');
}
