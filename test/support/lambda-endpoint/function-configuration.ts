// The test Lambda endpoint's model of the two read calls `workerless check` makes of a function, as AWS's API
// reference describes them and @aws-sdk/client-lambda (3.1162) expects them:
// - GetFunctionConfiguration, GET /2015-03-31/functions/{FunctionName}/configuration[?Qualifier=...]
//   (https://docs.aws.amazon.com/lambda/latest/api/API_GetFunctionConfiguration.html): the version's settings,
//   with `CapacityProviderConfig` for a Lambda Managed Instances function
//   (https://docs.aws.amazon.com/lambda/latest/api/API_LambdaManagedInstancesCapacityProviderConfig.html) and its
//   `$LATEST.PUBLISHED` version, the one an unqualified invoke of such a function runs
//   (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-version-publishing.html);
// - GetFunctionConcurrency, GET /2019-09-30/functions/{FunctionName}/concurrency
//   (https://docs.aws.amazon.com/lambda/latest/api/API_GetFunctionConcurrency.html): `ReservedConcurrentExecutions`,
//   left out when the function has none.
// Either call can be denied per function, answered as IAM answers a missing permission: 403 AccessDeniedException.
// Versions and aliases are not modelled beyond `$LATEST.PUBLISHED`: any other qualifier reads `$LATEST`, as the
// endpoint's Invoke runs `$LATEST` for any qualifier.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** The version an unqualified invoke of a Managed Instances function runs. */
export const LATEST_PUBLISHED = '$LATEST.PUBLISHED';

/** What a function's configuration reads answer beyond its timeout and reserved concurrency (FunctionSpec's own). */
export interface ConfigurationSpec {
  /** A Lambda Managed Instances function: GetFunctionConfiguration answers with its CapacityProviderConfig. */
  readonly managedInstances?: ManagedInstancesSpec;
  /** Read calls answered 403 AccessDeniedException, as for a role without the permission. */
  readonly deny?: readonly FunctionRead[];
}

export interface ManagedInstancesSpec {
  /** `arn:aws:lambda:REGION:ACCOUNT:capacity-provider:NAME`. */
  readonly capacityProviderArn: string;
  /** 1-1600; left out of the answer when not given, as Lambda leaves out a setting that was not set. */
  readonly perExecutionEnvironmentMaxConcurrency?: number;
  /**
   * `$LATEST.PUBLISHED`: default published from `$LATEST` as it is (CloudFormation and the console publish it on
   * creation); a different timeout or code to model `$LATEST` changed since; null: never published.
   */
  readonly published?: { readonly timeoutSec?: number; readonly codeSha256?: string } | null;
}

export type FunctionRead = 'GetFunctionConfiguration' | 'GetFunctionConcurrency';

/** One read call as it arrived, for tests to assert what the check asked. */
export interface FunctionReadCall {
  readonly operation: FunctionRead;
  readonly functionName: string;
  readonly qualifier: string | undefined;
  readonly statusCode: number;
}

/** What the model needs of the endpoint: its functions and how it names them. */
export interface FunctionReadContext {
  /** The function's settings, or undefined when there is no such function. */
  find(name: string): FunctionView | undefined;
  functionArn(name: string, qualifier?: string): string;
  /** server.ts's parseFunctionRef: throws an error with statusCode, errorType and message for an invalid name. */
  parseRef(raw: string, queryQualifier: string | null): { name: string; qualifier: string | undefined };
}

/** A function of the endpoint as the model reads it (server.ts's FunctionState). */
export interface FunctionView {
  readonly spec: {
    readonly handler: string;
    /** Default 3 s, as in Lambda. */
    readonly timeoutSec?: number | undefined;
    /** Default 128. */
    readonly memoryMb?: number | undefined;
    readonly configuration?: ConfigurationSpec | undefined;
  };
  /** The reserved concurrency now (setReservedConcurrency changes it). */
  readonly reserved: number | undefined;
}

const ROUTES: readonly { readonly operation: FunctionRead; readonly path: RegExp }[] = [
  { operation: 'GetFunctionConfiguration', path: /^\/2015-03-31\/functions\/([^/]+)\/configuration$/ },
  { operation: 'GetFunctionConcurrency', path: /^\/2019-09-30\/functions\/([^/]+)\/concurrency$/ },
];

/** The read calls: `answer` takes a request and says whether it was one of them; `calls` records each. */
export function functionReads(ctx: FunctionReadContext): {
  answer(req: IncomingMessage, url: URL, res: ServerResponse, requestId: string): boolean;
  readonly calls: FunctionReadCall[];
} {
  const calls: FunctionReadCall[] = [];
  return {
    calls,
    answer(req, url, res, requestId) {
      const route = req.method === 'GET' ? ROUTES.find((r) => r.path.test(url.pathname)) : undefined;
      if (route === undefined) return false;
      const raw = decodeURIComponent(route.path.exec(url.pathname)?.[1] ?? '');
      const { status, body, errorType } = read(ctx, route.operation, raw, url.searchParams.get('Qualifier'));
      calls.push({
        operation: route.operation,
        functionName: raw,
        qualifier: url.searchParams.get('Qualifier') ?? undefined,
        statusCode: status,
      });
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'Content-Type': 'application/json',
        'Content-Length': String(Buffer.byteLength(text)),
        'x-amzn-RequestId': requestId,
        ...(errorType !== undefined ? { 'x-amzn-ErrorType': errorType } : {}),
      });
      res.end(text);
      return true;
    },
  };
}

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly errorType?: string;
}

function read(ctx: FunctionReadContext, operation: FunctionRead, raw: string, queryQualifier: string | null): Answer {
  let ref: { name: string; qualifier: string | undefined };
  try {
    ref = ctx.parseRef(raw, queryQualifier);
  } catch (error) {
    const e = error as { statusCode?: unknown; errorType?: unknown; message?: unknown };
    if (typeof e.statusCode !== 'number' || typeof e.errorType !== 'string') throw error;
    return failure(e.statusCode, e.errorType, String(e.message));
  }
  const fn = ctx.find(ref.name);
  if (fn === undefined) return failure(404, 'ResourceNotFoundException', `Function not found: ${ctx.functionArn(ref.name, ref.qualifier)}`);
  if (fn.spec.configuration?.deny?.includes(operation)) {
    // IAM's wording for an identity policy that does not allow the action (the role is the endpoint's own fiction).
    return failure(
      403,
      'AccessDeniedException',
      `User: arn:aws:sts::000000000000:assumed-role/workerless/check is not authorized to perform: lambda:${operation} on resource: ${ctx.functionArn(ref.name)} because no identity-based policy allows the lambda:${operation} action`,
    );
  }
  if (operation === 'GetFunctionConcurrency') {
    // A qualifier is not accepted: reserved concurrency belongs to the function, not to a version.
    if (ref.qualifier !== undefined) return failure(400, 'InvalidParameterValueException', 'Unsupported parameter: qualifier');
    return { status: 200, body: fn.reserved === undefined ? {} : { ReservedConcurrentExecutions: fn.reserved } };
  }
  return configuration(ctx, ref.name, ref.qualifier, fn);
}

function configuration(ctx: FunctionReadContext, name: string, qualifier: string | undefined, fn: FunctionView): Answer {
  const managed = fn.spec.configuration?.managedInstances;
  const codeSha256 = createHash('sha256').update(readFileSync(fn.spec.handler)).digest('base64');
  let version = '$LATEST';
  let timeoutSec = fn.spec.timeoutSec ?? 3;
  let code = codeSha256;
  if (qualifier === LATEST_PUBLISHED) {
    // Only Managed Instances functions have this version; it exists once published.
    if (managed === undefined || managed.published === null) {
      return failure(404, 'ResourceNotFoundException', `Function not found: ${ctx.functionArn(name, qualifier)}`);
    }
    version = LATEST_PUBLISHED;
    timeoutSec = managed.published?.timeoutSec ?? timeoutSec;
    code = managed.published?.codeSha256 ?? code;
  }
  return {
    status: 200,
    body: {
      FunctionName: name,
      FunctionArn: ctx.functionArn(name, qualifier),
      Runtime: 'nodejs24.x',
      Role: `arn:aws:iam::000000000000:role/${name}`,
      Handler: 'index.handler',
      CodeSize: 1024,
      Description: '',
      Timeout: timeoutSec,
      MemorySize: fn.spec.memoryMb ?? 128,
      LastModified: '2026-11-24T00:00:00.000+0000',
      CodeSha256: code,
      Version: version,
      State: 'Active',
      LastUpdateStatus: 'Successful',
      PackageType: 'Zip',
      Architectures: ['x86_64'],
      ...(managed !== undefined
        ? {
            CapacityProviderConfig: {
              LambdaManagedInstancesCapacityProviderConfig: {
                CapacityProviderArn: managed.capacityProviderArn,
                ...(managed.perExecutionEnvironmentMaxConcurrency !== undefined
                  ? { PerExecutionEnvironmentMaxConcurrency: managed.perExecutionEnvironmentMaxConcurrency }
                  : {}),
              },
            },
          }
        : {}),
    },
  };
}

/** Lambda's REST-JSON error: the code in x-amzn-ErrorType, `Type` and `Message` in the body. */
function failure(status: number, errorType: string, message: string): Answer {
  return { status, errorType, body: { Type: 'User', Message: message } };
}
