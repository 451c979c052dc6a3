import { readFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';

/**
 * The CA bundle that AWS's certificates are checked against, as the AWS CLI finds it: `AWS_CA_BUNDLE`, else
 * `ca_bundle` in the shared config profile (AWS_PROFILE, else `default`; AWS_CONFIG_FILE moves the file), read
 * through the SDK's own config loader. botocore declares it so (botocore/configprovider.py: 'ca_bundle':
 * ('ca_bundle', 'AWS_CA_BUNDLE', None, None), the variable before the profile) and refuses an empty value
 * (botocore/endpoint.py _validate_verify_value: "Invalid CA bundle: ... resolved to an empty or whitespace-only
 * string"). As in botocore (urllib3's ca_certs) and the Go SDK (a new x509.CertPool), the bundle replaces the
 * default CAs for these calls rather than adding to them: a TLS-inspecting proxy's CA is the only one its
 * certificates can be checked against anyway.
 */
export interface CaBundle {
  readonly path: string;
  /** `AWS_CA_BUNDLE`, or `ca_bundle of profile "prod" in the shared config`. */
  readonly from: string;
  /** The bundle's certificates, PEM. */
  readonly pem: string;
}

/** Where the bundle is configured, or undefined when it is not. */
export async function caBundleSetting(env: NodeJS.ProcessEnv): Promise<{ path: string; from: string } | undefined> {
  const fromEnv = env['AWS_CA_BUNDLE'];
  if (fromEnv !== undefined) return { path: fromEnv, from: 'AWS_CA_BUNDLE' };
  const { loadConfig, getProfileName } = await import('@smithy/core/config');
  const profile = getProfileName(env['AWS_PROFILE'] ? { profile: env['AWS_PROFILE'] } : {});
  const files = {
    profile,
    ...(env['AWS_CONFIG_FILE'] !== undefined ? { configFilepath: env['AWS_CONFIG_FILE'] } : {}),
    ...(env['AWS_SHARED_CREDENTIALS_FILE'] !== undefined ? { filepath: env['AWS_SHARED_CREDENTIALS_FILE'] } : {}),
  };
  const fromProfile = await loadConfig<string | undefined>(
    { environmentVariableSelector: () => undefined, configFileSelector: (p) => p['ca_bundle'], default: undefined },
    files,
  )();
  return fromProfile !== undefined ? { path: fromProfile, from: `ca_bundle of profile "${profile}" in the shared config` } : undefined;
}

/**
 * The configured bundle, read and checked, or a problem (exit 2, before any call): an empty setting, a file that
 * cannot be read, a file without a PEM certificate or with one that does not parse.
 */
export async function loadCaBundle(env: NodeJS.ProcessEnv): Promise<CaBundle | { problem: string } | undefined> {
  const setting = await caBundleSetting(env);
  if (setting === undefined) return undefined;
  const { path, from } = setting;
  if (path.trim() === '') return { problem: `${from} is empty: name a CA bundle file (PEM), or leave it unset` };
  let pem: string;
  try {
    pem = await readFile(path, 'utf8');
  } catch (err) {
    return { problem: `${from} ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}` };
  }
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return { problem: `${from} ${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)` };
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (err) {
      return { problem: `${from} ${path}: certificate ${i + 1} does not parse: ${(err as Error).message}` };
    }
  }
  return { path, from, pem: blocks.join('\n') };
}
