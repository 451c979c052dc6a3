/**
 * A function as `--function` names it, split as Lambda reads its name formats: `name`, `name:qualifier`,
 * `ACCOUNT:function:name[:qualifier]` or `arn:PARTITION:lambda:REGION:ACCOUNT:function:name[:qualifier]`
 * (https://docs.aws.amazon.com/lambda/latest/api/API_GetFunctionConfiguration.html). `function` is the
 * reference without its qualifier, in the form it was given: what GetFunctionConcurrency takes (reserved
 * concurrency belongs to the function, not to a version or alias).
 */
export interface FunctionRef {
  readonly function: string;
  /** The version or alias; undefined when the reference is unqualified. */
  readonly qualifier: string | undefined;
}

export function splitFunctionRef(ref: string): FunctionRef {
  const parts = ref.split(':');
  // The position of the name: after `function` in an ARN (6) or partial ARN (2), else first.
  const nameAt = parts[0] === 'arn' ? 6 : parts[1] === 'function' ? 2 : 0;
  const qualifier = parts[nameAt + 1];
  return { function: parts.slice(0, nameAt + 1).join(':'), qualifier };
}
