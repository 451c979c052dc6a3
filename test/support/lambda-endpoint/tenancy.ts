// Lambda's tenant isolation mode, as the test endpoint models it (server.ts hooks it in). From AWS's pages:
// - TenancyConfig (API reference, "TenancyConfig"): TenantIsolationMode, valid value PER_TENANT, set when the
//   function is created and never changed;
// - the tenant id on every Invoke (Developer Guide, "Invoking Lambda functions with tenant isolation"): "When
//   invoking a function that has tenant isolation enabled, you must provide a tenant-id parameter", sent as the
//   X-Amz-Tenant-Id header (the SDK's Lambda model: InvokeCommand's TenantId);
// - environments per tenant (Developer Guide, "Tenant isolation"): "a function's execution environments are only
//   used to serve invocations from the specified end-user or tenant";
// - the tenant id in the handler's context (Developer Guide, "Accessing tenant identifier in Lambda function
//   code"): `context.tenantId` in Node.js.
// AWS's pages do not name the error of an Invoke without a tenant id. The model answers what the Invoke API
// reference lists for a request parameter that is not valid: 400 InvalidParameterValueException (which the SDK
// maps to its class of that name); the message is the model's own wording.

/** A function's TenancyConfig. */
export interface TenancyConfig {
  readonly TenantIsolationMode: 'PER_TENANT';
}

/** Why the endpoint refuses an Invoke, before anything runs. */
export interface TenantRefusal {
  readonly statusCode: 400;
  readonly errorType: 'InvalidParameterValueException';
  readonly message: string;
}

/**
 * The tenant of one Invoke (DryRun included: it validates the parameters) from its X-Amz-Tenant-Id header, or
 * the refusal of a tenant-isolated function invoked without one. A function without tenancy runs what it is sent.
 */
export function tenantOf(
  tenancy: TenancyConfig | undefined,
  header: string | string[] | undefined,
): { tenantId: string | undefined } | { refusal: TenantRefusal } {
  const tenantId = typeof header === 'string' && header !== '' ? header : undefined;
  if (tenancy?.TenantIsolationMode === 'PER_TENANT' && tenantId === undefined) {
    return {
      refusal: {
        statusCode: 400,
        errorType: 'InvalidParameterValueException',
        message: 'A tenant ID (X-Amz-Tenant-Id) is required to invoke a function in tenant isolation mode PER_TENANT.',
      },
    };
  }
  return { tenantId };
}

/**
 * Takes an idle execution environment that may serve `tenantId`: with tenant isolation only one made for that
 * tenant; without it any (`tenantId` is then undefined, as is every environment's).
 */
export function takeIdle<T extends { tenantId?: string | undefined }>(idle: T[], tenantId: string | undefined): T | undefined {
  const i = idle.findLastIndex((s) => s.tenantId === tenantId);
  return i < 0 ? undefined : idle.splice(i, 1)[0];
}
