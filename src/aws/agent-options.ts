/**
 * The keep-alive socket pool of the SDK's SQS and Lambda clients (`--aws-client sdk`; the lean path's own pool,
 * src/aws/http1-pool.ts, keeps every free socket the same way): up to `maxSockets` per host,
 * and every one of them kept for reuse once its call is answered, not only Node's default of 256 free ones.
 * At high concurrency thousands of invocations end together and start again at once; a socket closed after its
 * answer costs the next call a connect and a close (and, against AWS, a TLS handshake). Idle sockets are closed
 * by the server's keep-alive timeout.
 */
export function keepAliveAgentOptions(maxSockets: number): { keepAlive: true; maxSockets: number; maxFreeSockets: number } {
  return { keepAlive: true, maxSockets, maxFreeSockets: maxSockets };
}
