import { isIP } from 'node:net';
import type { AwsEndpoints } from './endpoints.ts';

/**
 * Start-up warnings for calls that would travel as plain http:// to a host that is not this machine: SigV4 keeps
 * the secret key off the wire, but the session token (X-Amz-Security-Token), the message bodies and the answers
 * would cross the network in clear text. A local emulator (LocalStack on 127.0.0.1) is fine. Queue URLs count only
 * where calls go to them: when SQS has no configured endpoint (the SDK then sends each call to its queue URL's
 * host).
 */
export function plainHttpWarnings(endpoints: AwsEndpoints, queueRefs: readonly string[]): string[] {
  const warnings: string[] = [];
  for (const service of ['sqs', 'lambda', 'cloudwatch'] as const) {
    const url = endpoints[service].url;
    if (isPlainRemote(url)) warnings.push(`the ${service} endpoint ${url.origin} is plain http on a host that is not local: ${CLEAR_TEXT}`);
  }
  if (!endpoints.sqs.custom) {
    for (const ref of new Set(queueRefs)) {
      const url = parseUrl(ref);
      if (url && isPlainRemote(url)) warnings.push(`the queue URL ${ref} is plain http on a host that is not local: ${CLEAR_TEXT}`);
    }
  }
  return warnings;
}

const CLEAR_TEXT = 'the session token and the messages travel in clear text (use https)';

function isPlainRemote(url: URL): boolean {
  return url.protocol === 'http:' && !isLoopback(url.hostname);
}

/** localhost, *.localhost (RFC 6761 keeps them on this machine), 127.0.0.0/8 and ::1. */
function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1';
  return false;
}

function parseUrl(ref: string): URL | undefined {
  try {
    return /^https?:\/\//i.test(ref) ? new URL(ref) : undefined;
  } catch {
    return undefined;
  }
}
