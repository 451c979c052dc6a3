// Preloaded into the test processes of the TLS phase (node --import, see scripts/test.sh): the tests' own SDK
// clients and fetch calls trust the phase's bundle beside Node's default CAs. Children the tests spawn (the daemon)
// do not inherit a preload: the daemon trusts the bundle only through AWS_CA_BUNDLE, as a user's would.
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { pemCertificates, phaseTls } from './phase-tls.ts';

const phase = phaseTls();
if (phase !== undefined) {
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), ...pemCertificates(readFileSync(phase.bundlePath, 'utf8'))]);
}
