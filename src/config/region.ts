import { isValidHostLabel } from '@smithy/core/transport';

/** A region and where it came from, for the error that names a bad one and the start-up log. */
export interface RegionSetting {
  readonly value: string;
  /** `AWS_REGION`, `region of profile "default" in the shared config`, `AWS_DEFAULT_REGION`, `instance metadata`. */
  readonly origin: string;
}

/**
 * The region when --region is not given, found as the AWS SDK finds it: AWS_REGION, then `region` in the shared
 * config profile (AWS_PROFILE, else `default`; the credentials file first, as the SDK reads it), then the EC2
 * instance metadata. AWS_DEFAULT_REGION, which only the AWS CLI reads, is still accepted, before the instance
 * metadata (a variable someone set says more than the machine one runs on). Undefined when none gives one.
 * Reads process.env and the shared files through the SDK's own loaders; the metadata lookup (1 s at most, skipped
 * with AWS_EC2_METADATA_DISABLED) happens only when nothing else gives a region.
 */
export async function loadAwsRegion(env: NodeJS.ProcessEnv = process.env): Promise<RegionSetting | undefined> {
  const fromEnv = regionFromEnv(env);
  if (fromEnv?.origin === 'AWS_REGION') return fromEnv;
  const { loadConfig, getProfileName, NODE_REGION_CONFIG_OPTIONS, NODE_REGION_CONFIG_FILE_OPTIONS } = await import('@smithy/core/config');
  const fromProfile = await loadConfig(
    { environmentVariableSelector: () => undefined, configFileSelector: NODE_REGION_CONFIG_OPTIONS.configFileSelector, default: undefined },
    NODE_REGION_CONFIG_FILE_OPTIONS,
  )().catch(() => undefined);
  if (fromProfile) return { value: fromProfile, origin: `region of profile "${getProfileName({})}" in the shared config` };
  if (fromEnv) return fromEnv;
  const instance = NODE_REGION_CONFIG_OPTIONS.default;
  const fromInstance = typeof instance === 'function' ? await Promise.resolve(instance()).catch(() => undefined) : instance;
  return fromInstance ? { value: fromInstance, origin: 'instance metadata' } : undefined;
}

/** The part of the chain in the environment: AWS_REGION, else AWS_DEFAULT_REGION (an empty variable is unset). */
export function regionFromEnv(env: NodeJS.ProcessEnv): RegionSetting | undefined {
  if (env['AWS_REGION']) return { value: env['AWS_REGION'], origin: 'AWS_REGION' };
  if (env['AWS_DEFAULT_REGION']) return { value: env['AWS_DEFAULT_REGION'], origin: 'AWS_DEFAULT_REGION' };
  return undefined;
}

/**
 * The SDK's own check (checkRegion in @smithy/core/config): a region goes into host names, so it must be a valid
 * host label (letters, digits and inner hyphens, 1-63 characters). `fips-us-east-1` passes, as in the SDK.
 */
export function isValidRegion(region: string): boolean {
  return isValidHostLabel(region);
}
