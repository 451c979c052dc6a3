/**
 * The endpoint the SDK would use for `service`: --endpoint-url, then AWS_ENDPOINT_URL_<SERVICE>, then
 * AWS_ENDPOINT_URL (unless AWS_IGNORE_CONFIGURED_ENDPOINT_URLS), then the service's regional endpoint
 * (CloudWatch's host is monitoring.<region>). `custom` says whether one was configured (SQS then sends every
 * call there, not to the queue URL's host).
 */
export function serviceEndpoint(
  service: 'sqs' | 'lambda' | 'cloudwatch',
  region: string,
  endpointUrl: string | undefined,
  env: NodeJS.ProcessEnv,
): { url: URL; custom: boolean } {
  const ignoreEnv = env['AWS_IGNORE_CONFIGURED_ENDPOINT_URLS']?.toLowerCase() === 'true';
  const configured =
    endpointUrl || (ignoreEnv ? undefined : env[`AWS_ENDPOINT_URL_${service.toUpperCase()}`] || env['AWS_ENDPOINT_URL']) || undefined;
  if (configured) return { url: new URL(configured), custom: true };
  const suffix = region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
  const host = service === 'cloudwatch' ? 'monitoring' : service;
  return { url: new URL(`https://${host}.${region}.${suffix}`), custom: false };
}
