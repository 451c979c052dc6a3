import type * as Http from 'node:http';
import { createRequire } from 'node:module';

/**
 * node:http, without the ~13 MiB that `import ... from 'node:http'` costs. An ES module import of a builtin builds
 * its namespace from every export, and node:http's lazy `WebSocket`, `CloseEvent` and `MessageEvent` exports then
 * load Node's bundled undici, and with it tls, http2, zlib and perf_hooks, none of which the daemon uses (its
 * HTTPS goes through node:https, which does not touch them). require() returns the CommonJS exports object, whose
 * lazy getters stay unread. bench/README.md has the measurement.
 */
export const nodeHttp = createRequire(import.meta.url)('node:http') as typeof Http;
