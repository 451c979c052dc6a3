// The command line the SDK peers share: --queue-url URL --function NAME [--concurrency C] [--batch-size B].
import { parseArgs } from 'node:util';

export interface PeerArgs {
  readonly queueUrl: string;
  readonly functionName: string;
  readonly concurrency: number;
  /** 1-10 messages per receive and per invocation. */
  readonly batchSize: number;
}

/** Parses the peer's arguments, or prints the usage line for `script` and exits 2. */
export function peerArgs(script: string): PeerArgs {
  const { values } = parseArgs({
    options: {
      'queue-url': { type: 'string' },
      function: { type: 'string' },
      concurrency: { type: 'string', default: '10' },
      'batch-size': { type: 'string', default: '1' },
    },
  });
  const queueUrl = values['queue-url'] ?? '';
  const functionName = values.function ?? '';
  const concurrency = Number(values.concurrency);
  const batchSize = Number(values['batch-size']);
  if (
    !queueUrl ||
    !functionName ||
    !Number.isInteger(concurrency) ||
    concurrency < 1 ||
    !Number.isInteger(batchSize) ||
    batchSize < 1 ||
    batchSize > 10
  ) {
    process.stderr.write(`usage: node bench/peers/${script} --queue-url URL --function NAME [--concurrency C] [--batch-size B]\n`);
    process.exit(2);
  }
  return { queueUrl, functionName, concurrency, batchSize };
}
