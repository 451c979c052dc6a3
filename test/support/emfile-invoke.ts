// Run by test/unit/aws/local-failures.test.ts under a low `ulimit -n`: uses up every file descriptor, then invokes
// through the lean transport, and prints the InvokeResult as JSON. argv[2]: the Lambda endpoint's origin.
import { openSync } from 'node:fs';
import { SignedHttp } from '../../src/aws/signed-http.ts';
import { LambdaHttpInvoker } from '../../src/aws/lambda-http-invoker.ts';

const http = new SignedHttp({
  service: 'lambda',
  region: 'us-east-1',
  credentials: () => Promise.resolve({ accessKeyId: 'a', secretAccessKey: 's' }),
  maxSockets: 1,
});
const invoker = new LambdaHttpInvoker(http, new URL(process.argv[2] ?? ''), 'fn');
const held: number[] = [];
try {
  for (;;) held.push(openSync('/dev/null', 'r'));
} catch {
  // every descriptor is taken
}
const result = await invoker.invoke('{}', AbortSignal.timeout(5_000));
process.stdout.write(JSON.stringify({ held: held.length, result }));
http.destroy();
