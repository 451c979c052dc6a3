// A fleet (docs/fleet.md) with the construct: its table and grant, held to the daemon's own code: the key schema its
// start-up check accepts, the TTL attribute its heartbeat writes, and the four DynamoDB actions its replicas make.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { itemAttributes } from '../../src/aws/fleet-heartbeat.ts';
import { keySchemaProblem } from '../../src/aws/fleet-table.ts';
import type { WorkerlessProps } from '../src/index.ts';
import { FLEET_TABLE_ACTIONS } from '../src/task-policy.ts';
import { docsExample, taskStatements, testStack } from './support.ts';

const TABLE_ARN = 'arn:aws:dynamodb:us-east-1:123456789012:table/workerless-fleet';

type Resource = { Type: string; Properties: Record<string, unknown> };
type EnvEntry = { Name: string; Value: unknown };

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
