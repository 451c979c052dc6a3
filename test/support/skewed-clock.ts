// An AWS endpoint whose clock is off this machine's: how AWS treats a signature made with a wrong clock.
// AWS refuses a request whose X-Amz-Date is more than 5 minutes from its own clock
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/signature-v4-troubleshooting.html), with these shapes:
//   SQS / CloudWatch (AWS JSON 1.0): 400, {"__type":"com.amazon.coral.service#InvalidSignatureException",
//     "message":"Signature expired: 20261124T150000Z is now earlier than 20261124T151000Z (20261124T151500Z - 5 min.)"};
//   Lambda (REST JSON): 403, x-amzn-ErrorType: InvalidSignatureException, {"message":"Signature expired: ..."};
//   a clock behind the request's: "Signature not yet current: <date> is still later than <aws + 5 min> (<aws> + 5 min.)".
// Every answer carries a Date header from the endpoint's clock, which is what the SDK corrects its offset from.
import { randomUUID } from 'node:crypto';
import { request as httpRequest, createServer, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

const FIVE_MIN_MS = 5 * 60_000;

/** "20261124T150000Z" -> epoch ms. */
function parseAmzDate(value: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  return m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) : NaN;
}
function amzDate(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

/** An AWS error answer. */
export interface Refusal {
  status: number;
  headers: OutgoingHttpHeaders;
  body: string;
}

/**
 * The refusal AWS would send for a request signed at `x-amz-date` when its own clock reads `awsNowMs`, or
 * undefined when the signature's time is acceptable. `lambda`: the REST JSON shape, else AWS JSON 1.0.
 */
export function skewRefusal(headers: IncomingHttpHeaders, awsNowMs: number, lambda: boolean): Refusal | undefined {
  const raw = headers['x-amz-date'];
  const signedMs = parseAmzDate(typeof raw === 'string' ? raw : '');
  if (Math.abs(signedMs - awsNowMs) <= FIVE_MIN_MS) return undefined;
  const date = typeof raw === 'string' ? raw : '';
  const message =
    signedMs < awsNowMs
      ? `Signature expired: ${date} is now earlier than ${amzDate(awsNowMs - FIVE_MIN_MS)} (${amzDate(awsNowMs)} - 5 min.)`
      : `Signature not yet current: ${date} is still later than ${amzDate(awsNowMs + FIVE_MIN_MS)} (${amzDate(awsNowMs)} + 5 min.)`;
  const common = { 'x-amzn-requestid': randomUUID(), date: new Date(awsNowMs).toUTCString() };
  return lambda
    ? {
        status: 403,
        headers: { ...common, 'content-type': 'application/json', 'x-amzn-errortype': 'InvalidSignatureException' },
        body: JSON.stringify({ message }),
      }
    : {
        status: 400,
        headers: { ...common, 'content-type': 'application/x-amz-json-1.0' },
        body: JSON.stringify({ __type: 'com.amazon.coral.service#InvalidSignatureException', message }),
      };
}

/** Whether a request is a Lambda one (REST JSON, /2015-03-31/functions/...), not AWS JSON 1.0 (X-Amz-Target). */
export function isLambdaRequest(path: string, headers: IncomingHttpHeaders): boolean {
  return headers['x-amz-target'] === undefined && path.includes('/functions/');
}

export interface SkewProxy {
  readonly url: string;
  /** Requests refused for their signature's time so far. */
  refused: number;
  /** Requests forwarded so far. */
  forwarded: number;
  close(): void;
}

/**
 * An HTTP proxy in front of `upstream` (LocalStack, the test Lambda endpoint) whose clock is `skewMs` off this
 * machine's: it refuses as AWS would any request signed more than 5 minutes from its clock, forwards the others,
 * and stamps every answer with a Date header from its own clock.
 */
export async function startSkewProxy(upstream: string, skewMs: number): Promise<SkewProxy> {
  const target = new URL(upstream);
  const proxy: SkewProxy = { url: '', refused: 0, forwarded: 0, close: () => {} };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const now = Date.now() + skewMs;
      const refusal = skewRefusal(req.headers, now, isLambdaRequest(req.url ?? '', req.headers));
      if (refusal) {
        proxy.refused += 1;
        res.writeHead(refusal.status, refusal.headers).end(refusal.body);
        return;
      }
      proxy.forwarded += 1;
      const up = httpRequest(
        { hostname: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          const headers = { ...answer.headers, date: new Date(Date.now() + skewMs).toUTCString() };
          res.writeHead(answer.statusCode ?? 502, headers);
          answer.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      up.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(proxy, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  });
}
