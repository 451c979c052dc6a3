/**
 * Where SQS, Lambda and CloudWatch calls go (and DynamoDB's, for a fleet), resolved once at start-up by the AWS SDK's own rules, so that the
 * lean path never sends traffic to an endpoint the SDK would not use:
 * - the region and the FIPS / dual-stack switches through the SDK's config loaders (AWS_USE_FIPS_ENDPOINT,
 *   AWS_USE_DUALSTACK_ENDPOINT, `use_fips_endpoint` / `use_dualstack_endpoint` in the shared config profile,
 *   a `fips-` region), with the SDK's own region check;
 * - a configured endpoint as the SDK finds it: --endpoint-url (the clients' `endpoint`), else
 *   AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL, the profile's `services` section and `endpoint_url`, unless
 *   AWS_IGNORE_CONFIGURED_ENDPOINT_URLS / `ignore_configured_endpoint_urls`;
 * - the host from the endpoint rule set each SDK client ships (every partition: aws, aws-cn, aws-us-gov, the
 *   ISO partitions, the European Sovereign Cloud), with the SDK's partition data.
 * Only the rule sets are loaded, not the clients (15-30 MiB each): the hot path pays nothing.
 * test/unit/aws/endpoints.test.ts proves that every region of the partition data resolves as the SDK clients do.
 * DynamoDB's endpoint is resolved for the start-up line only: the fleet's own client (src/aws/fleet-store.ts) lets the
 * SDK resolve it again, by these same rules, for each call.
 */

import { resolveAwsNetwork, type AwsNetwork } from './network.ts';

export type AwsService = 'sqs' | 'lambda' | 'cloudwatch' | 'dynamodb';

/** Where one service's calls go. */
export interface ServiceEndpoint {
  readonly url: URL;
  /**
   * Configured (--endpoint-url, AWS_ENDPOINT_URL*, `endpoint_url` in the profile) rather than AWS's own: SQS then
   * sends every call there, not to the queue URL's host (LocalStack's queue URLs may name a host that does not
   * resolve).
   */
  readonly custom: boolean;
}

export interface AwsEndpoints {
  /** The region the calls are signed for: the configured one, without a `fips-` prefix or `-fips` suffix. */
  readonly region: string;
  readonly useFips: boolean;
  readonly useDualStack: boolean;
  readonly sqs: ServiceEndpoint;
  readonly lambda: ServiceEndpoint;
  readonly cloudwatch: ServiceEndpoint;
  /**
   * Where the fleet's DynamoDB calls go (with --fleet-table only), for the start-up line: the endpoint of
   * credentials that do not name their account. Credentials that do (AWS_ACCOUNT_ID, SSO, an assumed role) take
   * the SDK to the account's endpoint, https://<account>.ddb.<region>.amazonaws.com, unless
   * AWS_ACCOUNT_ID_ENDPOINT_MODE is disabled.
   */
  readonly dynamodb?: ServiceEndpoint | undefined;
  /** How the calls get there: the proxy (HTTPS_PROXY, HTTP_PROXY, NO_PROXY) and the CA bundle (src/aws/network.ts). */
  readonly network: AwsNetwork;
}

/**
 * A region, switch or endpoint setting the SDK refuses: a configuration error (exit 2). One line per problem,
 * each naming the setting; `services`: the services whose calls the SDK would refuse (all three for the region
 * and the switches; one for an endpoint the rule set refuses, e.g. a custom SQS endpoint with dual-stack on).
 */
export class EndpointConfigError extends Error {
  override readonly name = 'EndpointConfigError';
  readonly problems: readonly string[];
  readonly services: ReadonlySet<AwsService>;
  /** The services that did resolve. */
  readonly resolved: Readonly<Partial<Record<AwsService, ServiceEndpoint>>>;

  constructor(
    problems: readonly string[],
    services: readonly AwsService[] = ['sqs', 'lambda', 'cloudwatch'],
    resolved: Partial<Record<AwsService, ServiceEndpoint>> = {},
  ) {
    super(problems.join('; '));
    this.problems = problems;
    this.services = new Set(services);
    this.resolved = resolved;
  }
}

/** The SDK's service ids: they name AWS_ENDPOINT_URL_<ID> and the `services` section's keys. */
const SERVICE_IDS: Readonly<Record<AwsService, string>> = { sqs: 'SQS', lambda: 'Lambda', cloudwatch: 'CloudWatch', dynamodb: 'DynamoDB' };

type RuleSet = import('@smithy/core/endpoints').BinaryDecisionDiagram;
type RuleParams = import('@smithy/core/endpoints').EndpointParameterInstructions;

/**
 * A client's rule set and its parameter instructions, without the client: these modules import only
 * @smithy/core/endpoints (the packages have no `exports` map; the parity test holds the paths).
 */
async function loadRules(service: AwsService): Promise<{ bdd: RuleSet; params: RuleParams }> {
  const [{ bdd }, { commonParams }] = await (service === 'sqs'
    ? Promise.all([
        import('@aws-sdk/client-sqs/dist-es/endpoint/bdd.js'),
        import('@aws-sdk/client-sqs/dist-es/endpoint/EndpointParameters.js'),
      ])
    : service === 'lambda'
      ? Promise.all([
          import('@aws-sdk/client-lambda/dist-es/endpoint/bdd.js'),
          import('@aws-sdk/client-lambda/dist-es/endpoint/EndpointParameters.js'),
        ])
      : service === 'cloudwatch'
        ? Promise.all([
            import('@aws-sdk/client-cloudwatch/dist-es/endpoint/bdd.js'),
            import('@aws-sdk/client-cloudwatch/dist-es/endpoint/EndpointParameters.js'),
          ])
        : Promise.all([
            import('@aws-sdk/client-dynamodb/dist-es/endpoint/bdd.js'),
            import('@aws-sdk/client-dynamodb/dist-es/endpoint/EndpointParameters.js'),
          ]));
  return { bdd, params: commonParams };
}

/**
 * Resolves the three endpoints for `region` (as configured: --region or the SDK's chain) and `endpointUrl`
 * (--endpoint-url). Reads the environment and the shared config files through the SDK's loaders, as the SDK
 * clients do. Throws an EndpointConfigError for a setting the SDK refuses (an invalid region, FIPS or dual-stack
 * in a partition without it, FIPS or dual-stack with a custom endpoint), and for a proxy or CA bundle setting that
 * cannot be used (resolveAwsNetwork). `options.dynamodb` (a fleet table is set) resolves DynamoDB's too, which the
 * SDK may refuse the same way.
 */
export async function resolveAwsEndpoints(
  region: string,
  endpointUrl: string | undefined,
  options: { readonly dynamodb?: boolean } = {},
): Promise<AwsEndpoints> {
  const network = await resolveAwsNetwork();
  if ('problems' in network) throw new EndpointConfigError(network.problems);
  const [endpoints, { awsEndpointFunctions }, config, sqs, lambda, cloudwatch, dynamodb] = await Promise.all([
    import('@smithy/core/endpoints'),
    import('@aws-sdk/core/client'),
    import('@smithy/core/config'),
    loadRules('sqs'),
    loadRules('lambda'),
    loadRules('cloudwatch'),
    options.dynamodb === true ? loadRules('dynamodb') : undefined,
  ]);
  // The rule sets call aws.partition(); every SDK client registers the same functions when it is loaded.
  endpoints.customEndpointFunctions['aws'] ??= awsEndpointFunctions;
  const fipsFlag = 'AWS_USE_FIPS_ENDPOINT or use_fips_endpoint in the profile';
  const dualStackFlag = 'AWS_USE_DUALSTACK_ENDPOINT or use_dualstack_endpoint in the profile';
  // What the clients do with `region` and `useFipsEndpoint` (resolveRegionConfig): a `fips-` region means FIPS,
  // and the region without it must be a valid host label.
  const regionConfig = config.resolveRegionConfig({
    region,
    useFipsEndpoint: config.loadConfig(config.NODE_USE_FIPS_ENDPOINT_CONFIG_OPTIONS),
  });
  let signingRegion: string;
  let useFips: boolean;
  let useDualStack: boolean;
  try {
    signingRegion = await regionConfig.region();
  } catch (err) {
    throw new EndpointConfigError([`--region ${region} is refused by the AWS SDK: ${messageOf(err)}`]);
  }
  try {
    useFips = await regionConfig.useFipsEndpoint();
  } catch (err) {
    throw new EndpointConfigError([`${fipsFlag}: ${messageOf(err)}`]);
  }
  try {
    useDualStack = await config.loadConfig(config.NODE_USE_DUALSTACK_ENDPOINT_CONFIG_OPTIONS)();
  } catch (err) {
    throw new EndpointConfigError([`${dualStackFlag}: ${messageOf(err)}`]);
  }
  const resolve = async (service: AwsService, rules: { bdd: RuleSet; params: RuleParams }): Promise<ServiceEndpoint | string> => {
    // The client configuration the SDK's endpoint middleware reads; it sets isCustomEndpoint when it finds a
    // configured endpoint (env or profile).
    const clientConfig = {
      serviceId: SERVICE_IDS[service],
      ...(endpointUrl !== undefined ? { endpoint: () => Promise.resolve(endpoints.toEndpointV1(endpointUrl)) } : {}),
      isCustomEndpoint: endpointUrl !== undefined,
      region: signingRegion,
      useFipsEndpoint: () => Promise.resolve(useFips),
      useDualstackEndpoint: () => Promise.resolve(useDualStack),
      endpointProvider: (params: Parameters<typeof endpoints.decideEndpoint>[1]['endpointParams']) =>
        endpoints.decideEndpoint(rules.bdd, { endpointParams: params }),
    };
    let endpoint: Awaited<ReturnType<typeof endpoints.getEndpointFromInstructions>>;
    try {
      endpoint = await endpoints.getEndpointFromInstructions({}, { getEndpointParameterInstructions: () => rules.params }, clientConfig);
    } catch (err) {
      const settings = [
        `region ${signingRegion}`,
        ...(endpointUrl !== undefined
          ? ['--endpoint-url']
          : clientConfig.isCustomEndpoint
            ? [`AWS_ENDPOINT_URL_${SERVICE_IDS[service].toUpperCase()}, AWS_ENDPOINT_URL or endpoint_url in the profile`]
            : []),
        ...(useFips ? [fipsFlag] : []),
        ...(useDualStack ? [dualStackFlag] : []),
      ];
      return `no ${SERVICE_IDS[service]} endpoint for ${settings.join(', ')}: ${messageOf(err)}`;
    }
    return { url: endpoint.url, custom: clientConfig.isCustomEndpoint };
  };
  const resolved = {
    sqs: await resolve('sqs', sqs),
    lambda: await resolve('lambda', lambda),
    cloudwatch: await resolve('cloudwatch', cloudwatch),
    dynamodb: dynamodb !== undefined ? await resolve('dynamodb', dynamodb) : undefined,
  };
  if (
    typeof resolved.sqs === 'string' ||
    typeof resolved.lambda === 'string' ||
    typeof resolved.cloudwatch === 'string' ||
    typeof resolved.dynamodb === 'string'
  ) {
    const problems: string[] = [];
    const refused: AwsService[] = [];
    const ok: Partial<Record<AwsService, ServiceEndpoint>> = {};
    for (const service of ['sqs', 'lambda', 'cloudwatch', 'dynamodb'] as const) {
      const r = resolved[service];
      if (r === undefined) continue;
      if (typeof r === 'string') {
        problems.push(r);
        refused.push(service);
      } else ok[service] = r;
    }
    throw new EndpointConfigError(problems, refused, ok);
  }
  return {
    region: signingRegion,
    useFips,
    useDualStack,
    sqs: resolved.sqs,
    lambda: resolved.lambda,
    cloudwatch: resolved.cloudwatch,
    ...(resolved.dynamodb !== undefined ? { dynamodb: resolved.dynamodb } : {}),
    network,
  };
}

function messageOf(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
}

/**
 * Where an SQS call goes, as both clients route it: the configured endpoint for every call, else the queue URL's
 * own host (the SDK's useQueueUrlAsEndpoint), and the regional endpoint for a call without a queue URL
 * (GetQueueUrl). For the errors that name the endpoint that was tried.
 */
export function sqsCallOrigin(endpoint: ServiceEndpoint, queueUrl?: string): string {
  if (endpoint.custom || queueUrl === undefined) return endpointName(endpoint.url);
  try {
    return new URL(queueUrl).origin;
  } catch {
    return endpointName(endpoint.url);
  }
}

/** An endpoint as the errors and the log name it: its origin, and its path when it has one. */
export function endpointName(url: URL): string {
  return url.pathname === '/' ? url.origin : `${url.origin}${url.pathname}`;
}
