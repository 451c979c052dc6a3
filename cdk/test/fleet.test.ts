// A fleet (docs/fleet.md) with the construct, with the ECS recipe (deploy/ecs/fleet.json) and with the chart's fleet
// values (deploy/helm/workerless/ci/fleet-values.yaml), each held to the daemon's own code: the key schema its
// start-up check accepts, the TTL attribute its heartbeat writes, the configuration it compiles from the
// environment, and the four DynamoDB actions its replicas make; and the section "A fleet of 3" of
// docs/deployment.md held to them. The chart's part needs helm, as test/deploy/chart.test.ts does, and is skipped
// without it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { parse, parseAllDocuments } from 'yaml';
import { itemAttributes } from '../../src/aws/fleet-heartbeat.ts';
import { keySchemaProblem } from '../../src/aws/fleet-table.ts';
import { collectOptions } from '../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../src/config/config.ts';
import type { WorkerlessProps } from '../src/index.ts';
import { FLEET_TABLE_ACTIONS } from '../src/task-policy.ts';
import { cfnLint, docsExample, taskStatements, testStack, type Statement } from './support.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const TABLE_ARN = 'arn:aws:dynamodb:us-east-1:123456789012:table/workerless-fleet';

type Resource = { Type: string; Properties: Record<string, unknown>; DependsOn?: string | string[] };
type EnvEntry = { Name: string; Value: unknown };

/** The daemon's fleet settings compiled from an environment, as it does at start-up (exit 2 on any problem). */
function fleetConfigOf(env: Record<string, string>) {
  const collected = collectOptions([], env, OPTIONS);
  assert.deepEqual(collected.problems, []);
  const result = resolveConfig(collected.raw, env);
  assert.ok(result.ok, JSON.stringify(result));
  return { fleet: result.config.fleet, concurrency: result.config.routes.map((r) => r.concurrency) };
}

/** The layout the daemon reads the table by: DescribeTable's KeySchema and AttributeDefinitions, and the TTL. */
function layoutOf(properties: Record<string, unknown>) {
  return {
    BillingMode: properties['BillingMode'],
    KeySchema: properties['KeySchema'],
    AttributeDefinitions: properties['AttributeDefinitions'],
    TimeToLiveSpecification: properties['TimeToLiveSpecification'],
  };
}

/** Whether 2 replicas left of 3, each at most its own --concurrency, can still take the whole fleet budget. */
function survivorsTakeTheBudget(concurrency: readonly number[], budget: number | undefined): boolean {
  const own = concurrency[0];
  return own !== undefined && budget !== undefined && own * 2 >= budget;
}

function fleetStack(props: Partial<WorkerlessProps>) {
  const stack = testStack();
  const workerless = docsExample(stack, { desiredCount: 3, fleetConcurrency: 30, fleetName: 'orders', ...props });
  return { stack, workerless, template: Template.fromStack(stack) };
}

function environmentOf(template: Template): Map<string, unknown> {
  const [definition] = Object.values(template.findResources('AWS::ECS::TaskDefinition')) as {
    Properties: { ContainerDefinitions: { Environment: EnvEntry[] }[] };
  }[];
  assert.ok(definition);
  return new Map(definition.Properties.ContainerDefinitions[0]!.Environment.map((e) => [e.Name, e.Value]));
}

/** The first block of `lang` in docs/deployment.md's section "A fleet of 3". */
function docsFleetBlock(lang: 'json' | 'yaml'): string {
  const page = readFileSync(join(ROOT, 'docs/deployment.md'), 'utf8');
  const start = page.indexOf('\n## A fleet of 3\n');
  assert.ok(start >= 0, 'docs/deployment.md has the section "A fleet of 3"');
  const end = page.indexOf('\n## ', start + 1);
  const block = new RegExp('```' + lang + '\\n([\\s\\S]*?)```').exec(page.slice(start, end === -1 ? undefined : end));
  assert.ok(block?.[1], `the section shows a ${lang} block`);
  return block[1];
}

describe('a fleet with the construct (fleetTable)', () => {
  it("creates the table in the daemon's layout: fleet + member strings, on demand, TTL on the attribute its heartbeat writes", () => {
    const { workerless, template } = fleetStack({ fleetTable: {} });
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    const [table] = Object.values(template.findResources('AWS::DynamoDB::Table')) as Resource[];
    assert.ok(table);
    const p = table.Properties;
    assert.equal(p['BillingMode'], 'PAY_PER_REQUEST');
    assert.equal(p['ProvisionedThroughput'], undefined);
    assert.deepEqual(p['KeySchema'], [
      { AttributeName: 'fleet', KeyType: 'HASH' },
      { AttributeName: 'member', KeyType: 'RANGE' },
    ]);
    assert.deepEqual(p['AttributeDefinitions'], [
      { AttributeName: 'fleet', AttributeType: 'S' },
      { AttributeName: 'member', AttributeType: 'S' },
    ]);
    // What the daemon's DescribeTable check at start-up (and `workerless check`) accepts.
    assert.equal(keySchemaProblem('t', p as Parameters<typeof keySchemaProblem>[1]), undefined);
    // TTL on the expiry attribute the heartbeat writes, a number of epoch seconds.
    const ttl = p['TimeToLiveSpecification'] as { AttributeName: string; Enabled: boolean };
    assert.equal(ttl.Enabled, true);
    assert.equal(itemAttributes('orders', { id: 'm', heartbeat: 1, expiresAtEpochSeconds: 1 })[ttl.AttributeName]?.N, '1');
    assert.equal(workerless.fleetTable?.node.path, `${workerless.node.path}/FleetTable`);
  });

  it('grants exactly DescribeTable, PutItem, Query and DeleteItem on the table ARN, and no other DynamoDB action anywhere', () => {
    const { stack, template } = fleetStack({ fleetTable: {} });
    const [tableId] = Object.keys(template.findResources('AWS::DynamoDB::Table'));
    const statements = taskStatements(stack);
    const fleet = statements.filter((s) => JSON.stringify(s).includes('dynamodb'));
    assert.deepEqual(fleet, [
      {
        Sid: 'FleetTable',
        Effect: 'Allow',
        Action: ['dynamodb:DescribeTable', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:DeleteItem'],
        Resource: { 'Fn::GetAtt': [tableId, 'Arn'] },
      },
    ]);
    // A grantReadWriteData (or any other grant) on the table would add dynamodb:* actions to some policy.
    const actions = JSON.stringify(template.findResources('AWS::IAM::Policy')).match(/"dynamodb:[A-Za-z*]+"/g);
    assert.deepEqual(
      actions,
      FLEET_TABLE_ACTIONS.map((a) => `"${a}"`),
    );
  });

  it("passes the table and the fleet's options to 3 tasks", () => {
    const { template } = fleetStack({ fleetTable: { tableName: 'workerless-fleet' } });
    const [tableId] = Object.keys(template.findResources('AWS::DynamoDB::Table'));
    template.hasResourceProperties('AWS::DynamoDB::Table', { TableName: 'workerless-fleet' });
    template.hasResourceProperties('AWS::ECS::Service', { DesiredCount: 3 });
    const env = environmentOf(template);
    assert.deepEqual(env.get('WORKERLESS_FLEET_TABLE'), { Ref: tableId });
    assert.equal(env.get('WORKERLESS_FLEET_NAME'), 'orders');
    assert.equal(env.get('WORKERLESS_FLEET_CONCURRENCY'), '30');
  });

  it('takes an existing table: none created, its name to the tasks, its ARN in the grant', () => {
    const stack = testStack();
    const table = dynamodb.Table.fromTableArn(stack, 'Fleet', TABLE_ARN);
    docsExample(stack, { fleetTable: table, desiredCount: 3 });
    const template = Template.fromStack(stack);
    template.resourceCountIs('AWS::DynamoDB::Table', 0);
    assert.equal(environmentOf(template).get('WORKERLESS_FLEET_TABLE'), 'workerless-fleet');
    assert.deepEqual(
      taskStatements(stack).find((s) => s['Sid'] === 'FleetTable'),
      { Sid: 'FleetTable', Effect: 'Allow', Action: [...FLEET_TABLE_ACTIONS], Resource: TABLE_ARN },
    );
  });

  it('is the policy of docs/deployment.md, "A fleet of 3", statement for statement', () => {
    const stack = testStack();
    docsExample(stack, { fleetTable: dynamodb.Table.fromTableArn(stack, 'Fleet', TABLE_ARN), desiredCount: 3 });
    assert.deepEqual(taskStatements(stack), (JSON.parse(docsFleetBlock('json')) as { Statement: Statement[] }).Statement);
  });

  it("refuses what the daemon would refuse: a table's name where a table is wanted, a fleet option without a table", () => {
    assert.throws(
      () => fleetStack({ fleetTable: 'workerless-fleet' as unknown as dynamodb.ITable }),
      /fleetTable takes a dynamodb\.ITable \(dynamodb\.Table\.fromTableName for one by name\) or \{\} to create one/,
    );
    assert.throws(
      () => docsExample(testStack(), { fleetConcurrency: 30 }),
      /fleetConcurrency: --fleet-concurrency is only used with --fleet-table/,
    );
  });
});

describe('a fleet with the ECS recipe (deploy/ecs/fleet.json)', () => {
  const path = join(ROOT, 'deploy/ecs/fleet.json');
  const cfn = JSON.parse(readFileSync(path, 'utf8')) as {
    Parameters: Record<string, { Default?: string | number }>;
    Resources: Record<string, Resource>;
  };
  /** The template's one resource of `type`: its logical id and itself. */
  const one = (type: string): [string, Resource] => {
    const found = Object.entries(cfn.Resources).filter(([, r]) => r.Type === type);
    assert.equal(found.length, 1, `one ${type}`);
    return found[0]!;
  };

  it("creates the construct's table and grants the construct's statement on its ARN, and no other IAM", () => {
    const construct = fleetStack({ fleetTable: {} }).template;
    const [constructTable] = Object.values(construct.findResources('AWS::DynamoDB::Table')) as Resource[];
    const [tableId, table] = one('AWS::DynamoDB::Table');
    assert.ok(constructTable);
    assert.deepEqual(layoutOf(table.Properties), layoutOf(constructTable.Properties));
    const iam = Object.values(cfn.Resources).filter((r) => r.Type.startsWith('AWS::IAM::'));
    assert.equal(iam.length, 1);
    assert.equal(iam[0]!.Type, 'AWS::IAM::RolePolicy');
    assert.deepEqual((iam[0]!.Properties['PolicyDocument'] as { Statement: Statement[] }).Statement, [
      { Sid: 'FleetTable', Effect: 'Allow', Action: [...FLEET_TABLE_ACTIONS], Resource: { 'Fn::GetAtt': [tableId, 'Arn'] } },
    ]);
    assert.equal(readFileSync(path, 'utf8').match(/"dynamodb:/g)?.length, FLEET_TABLE_ACTIONS.length);
  });

  it("runs 3 tasks of task-definition.json's container, each started after the grant, with an environment the daemon takes as a fleet", () => {
    const [, service] = one('AWS::ECS::Service');
    assert.deepEqual(service.Properties['DesiredCount'], { Ref: 'DesiredCount' });
    assert.equal(cfn.Parameters['DesiredCount']?.Default, 3);
    // A task started before the grant exists exits 1 at its DescribeTable.
    const [policyId] = one('AWS::IAM::RolePolicy');
    assert.ok([service.DependsOn].flat().includes(policyId));

    const [, definition] = one('AWS::ECS::TaskDefinition');
    const container = (definition.Properties['ContainerDefinitions'] as Record<string, unknown>[])[0]!;
    const recipe = (
      JSON.parse(readFileSync(join(ROOT, 'deploy/ecs/task-definition.json'), 'utf8')) as {
        containerDefinitions: Record<string, unknown>[];
      }
    ).containerDefinitions[0]!;
    assert.deepEqual((container['HealthCheck'] as { Command: string[] }).Command, (recipe['healthCheck'] as { command: string[] }).command);
    assert.equal(container['StopTimeout'], recipe['stopTimeout']);
    assert.equal(container['ReadonlyRootFilesystem'], true);
    assert.deepEqual(container['LinuxParameters'], { Capabilities: { Drop: ['ALL'] } });
    assert.deepEqual(container['MountPoints'], [{ SourceVolume: 'tmp', ContainerPath: '/tmp', ReadOnly: false }]);

    const env = container['Environment'] as EnvEntry[];
    const names = env.map((e) => e.Name);
    for (const e of recipe['environment'] as { name: string }[])
      assert.ok(names.includes(e.name), `${e.name} is set as in task-definition.json`);
    // The values CloudFormation gives the tasks with the parameters' defaults.
    const value = (v: unknown): string => {
      if (typeof v === 'string') return v;
      const ref = (v as { Ref?: string }).Ref;
      if (ref === 'AWS::Region') return 'us-east-1';
      if (ref !== undefined && cfn.Resources[ref]?.Type === 'AWS::DynamoDB::Table') {
        return value(cfn.Resources[ref].Properties['TableName']);
      }
      const param = ref !== undefined ? cfn.Parameters[ref]?.Default : undefined;
      assert.ok(param !== undefined, `no default for ${JSON.stringify(v)}`);
      return String(param);
    };
    const { fleet, concurrency } = fleetConfigOf(Object.fromEntries(env.map((e) => [e.Name, value(e.Value)])));
    assert.deepEqual(fleet, { table: 'workerless-fleet', name: 'my-app-production', concurrency: 30, heartbeatMs: 4_000 });
    // Each task's own cap lets 2 survivors of 3 still take the whole budget.
    assert.ok(survivorsTakeTheBudget(concurrency, fleet?.concurrency), `--concurrency ${concurrency[0]} x 2 < ${fleet?.concurrency}`);
  });

  it('passes cfn-lint', () => {
    const lint = cfnLint(path);
    assert.equal(lint.status, 0, lint.out);
  });
});

const CACHE = process.env['WORKERLESS_CACHE_DIR'] ?? join(process.env['HOME'] ?? '', '.cache/workerless');
const HELM = process.env['WORKERLESS_HELM'] ?? join(CACHE, 'bin/helm');
const noHelm = existsSync(HELM) ? false : `helm not found at ${HELM}: run scripts/helm.sh ensure (or scripts/test.sh deploy)`;

describe('a fleet with the Helm chart (deploy/helm/workerless/ci/fleet-values.yaml)', { skip: noHelm }, () => {
  const chart = join(ROOT, 'deploy/helm/workerless');
  const values = join(chart, 'ci/fleet-values.yaml');
  const helm = (args: string[]) => spawnSync(HELM, args, { encoding: 'utf8', timeout: 60_000 });

  it('lints (strict) and renders 3 replicas with the IRSA role, and a pod environment the daemon takes as a fleet', () => {
    const lint = helm(['lint', '--strict', chart, '-f', values]);
    assert.equal(lint.status, 0, `${lint.stdout}${lint.stderr}`);
    const r = helm(['template', 'orders', chart, '-f', values]);
    assert.equal(r.status, 0, r.stderr);
    const docs = parseAllDocuments(r.stdout)
      .map((d) => d.toJS() as { kind: string; metadata: { annotations?: Record<string, string> }; spec?: unknown } | null)
      .filter((d) => d !== null);
    const deployment = docs.find((d) => d.kind === 'Deployment')?.spec as
      { replicas: number; template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } } | undefined;
    assert.ok(deployment);
    assert.equal(deployment.replicas, 3);
    assert.match(
      docs.find((d) => d.kind === 'ServiceAccount')?.metadata.annotations?.['eks.amazonaws.com/role-arn'] ?? '',
      /^arn:aws:iam::\d{12}:role\//,
    );
    const env = Object.fromEntries(
      deployment.template.spec.containers[0]!.env.flatMap((e) => (e.value !== undefined ? [[e.name, e.value]] : [])),
    );
    const { fleet, concurrency } = fleetConfigOf(env);
    assert.deepEqual(fleet, { table: 'workerless-fleet', name: 'orders', concurrency: 30, heartbeatMs: 4_000 });
    assert.ok(survivorsTakeTheBudget(concurrency, fleet?.concurrency), `--concurrency ${concurrency[0]} x 2 < ${fleet?.concurrency}`);
  });

  it('is what docs/deployment.md, "A fleet of 3", shows of it', () => {
    const file = parse(readFileSync(values, 'utf8')) as Record<string, Record<string, unknown>>;
    const shown = parse(docsFleetBlock('yaml')) as Record<string, unknown>;
    for (const [key, value] of Object.entries(shown)) {
      if (typeof value !== 'object' || value === null) assert.equal(file[key], value, key);
      else for (const [k, v] of Object.entries(value)) assert.equal(file[key]?.[k], v, `${key}.${k}`);
    }
  });
});
