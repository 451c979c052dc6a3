// The servers of the TLS phase (scripts/test.sh tls), run as one process beside the tests:
//   node test/support/tls-phase-servers.ts <folder>
// It makes a private CA and a certificate for localhost and 127.0.0.1 (tls-ca.ts), terminates TLS with it in front
// of ElasticMQ and moto, and pins the self-signed certificate LocalStack serves on its own HTTPS port (the same
// port as its HTTP one), as a user who trusts such an endpoint puts it in AWS_CA_BUNDLE. It writes into <folder>
// the key, the certificate, the bundle (the CA and LocalStack's certificate) and `env`: the variables that point
// the tests at the HTTPS endpoints, written last, once everything listens. It runs until SIGTERM.
// Environment: LOCALSTACK_ENDPOINT (its plain endpoint, default http://127.0.0.1:4566), ELASTICMQ_PORT (9324),
// MOTO_PORT (5055).
import { X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { localstackEndpoint } from './aws.ts';
import { PHASE_FILES } from './phase-tls.ts';
import { createTestCa, startTlsTerminator } from './tls-ca.ts';

/** The certificate a TLS server presents for `localhost`, checked to name it (not trusted yet: that is the pin). */
async function presentedCertificate(host: string, port: number): Promise<string> {
  const der = await new Promise<Buffer>((resolve, reject) => {
    const socket = tls.connect({ host, port, servername: 'localhost', rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().raw);
      socket.end();
    });
    socket.once('error', reject);
    socket.setTimeout(5000, () => socket.destroy(new Error(`no TLS handshake from ${host}:${port} within 5 s`)));
  });
  const cert = new X509Certificate(der);
  if (cert.checkHost('localhost') === undefined)
    throw new Error(`the certificate at ${host}:${port} does not name localhost: ${cert.subjectAltName}`);
  return cert.toString();
}

const folder = process.argv[2];
if (folder === undefined) {
  console.error('usage: node test/support/tls-phase-servers.ts <folder>');
  process.exit(2);
}
const localstack = new URL(localstackEndpoint());
const ca = createTestCa('workerless TLS phase CA');
const server = ca.serverCert();
const localstackCert = await presentedCertificate(localstack.hostname, Number(localstack.port || 4566));
const terminators = {
  ELASTICMQ_ENDPOINT: await startTlsTerminator({ port: Number(process.env['ELASTICMQ_PORT'] ?? 9324) }, server),
  MOTO_ENDPOINT: await startTlsTerminator({ port: Number(process.env['MOTO_PORT'] ?? 5055) }, server),
};
writeFileSync(join(folder, PHASE_FILES.key), server.key);
writeFileSync(join(folder, PHASE_FILES.cert), server.cert);
writeFileSync(join(folder, PHASE_FILES.bundle), `${ca.certPem.trim()}\n${localstackCert.trim()}\n`);
const env = {
  WORKERLESS_TEST_TLS_DIR: folder,
  AWS_CA_BUNDLE: join(folder, PHASE_FILES.bundle),
  LOCALSTACK_ENDPOINT: `https://localhost:${localstack.port || 4566}`,
  ...Object.fromEntries(Object.entries(terminators).map(([name, t]) => [name, t.url])),
};
writeFileSync(
  join(folder, PHASE_FILES.env),
  Object.entries(env)
    .map(([k, v]) => `export ${k}=${v}\n`)
    .join(''),
);
console.log(
  `tls-phase-servers: ${Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')}`,
);

process.once('SIGTERM', () => {
  void Promise.all(Object.values(terminators).map((t) => t.close())).finally(() => {
    ca.remove();
    process.exit(0);
  });
});
