import { STATUS_PAGE_CSP } from './status-page.ts';

/**
 * The headers every answer of the HTTP server carries, whatever its status. As headers, not as the page's <meta>
 * tags: a <meta> CSP cannot say `frame-ancestors` (CSP Level 3, section 6.4.2: it is ignored there), so only the
 * header can stop another site from framing the page.
 * - Content-Security-Policy: the page's own (only its script and style, by hash; fetches to its own origin), and
 *   for everything else nothing at all; both with `frame-ancestors 'none'`.
 * - X-Frame-Options DENY: the same for browsers older than frame-ancestors.
 * - X-Content-Type-Options nosniff: /metrics and /status.json are never read as script or style.
 * - Cross-Origin-Resource-Policy same-origin: another site cannot load them in a no-cors request either.
 * - Cross-Origin-Opener-Policy same-origin: a page that opens ours gets no handle on its window.
 * - Referrer-Policy no-referrer; Cache-Control no-store: what the endpoints show is live, and not for a cache.
 */
const COMMON: Readonly<Record<string, string>> = {
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'cross-origin-resource-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** For every answer but the page: nothing may load, nothing may frame it. */
const NOTHING_CSP = "default-src 'none'; frame-ancestors 'none'";

/** The headers for an answer; `page`: it is the status page (text/html), which runs its script. */
export function securityHeaders(page: boolean): Record<string, string> {
  return { ...COMMON, 'content-security-policy': page ? STATUS_PAGE_CSP : NOTHING_CSP };
}
