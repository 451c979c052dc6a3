// The task role's policy, exactly, and the docs' IAM section held to it (docs/deployment.md, "IAM permissions").
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { docsExample, taskStatements, testStack, type Statement } from './support.ts';

/** The JSON blocks of the IAM section of docs/deployment.md, in order. */
function docsBlocks(): unknown[] {
  const page = readFileSync(new URL('../../docs/deployment.md', import.meta.url), 'utf8');
  const section = page.slice(page.indexOf('## IAM permissions'), page.indexOf('\n## ', page.indexOf('## IAM permissions') + 1));
  return [...section.matchAll(/```json\n([\s\S]*?)```/g)].map(
    (m) => JSON.parse(m[1]!.includes('"Version"') ? m[1]! : `[${m[1]}]`) as unknown,
  );
}

describe('the task role (docs/deployment.md, "IAM permissions")', () => {
  it("is the docs' example policy, statement for statement: queues, the function's qualified ARN, the metrics namespace", () => {
    const stack = testStack();
    docsExample(stack);
    const doc = docsBlocks()[0] as { Statement: Statement[] };
    assert.deepEqual(taskStatements(stack), doc.Statement);
  });

  it("grants a failure destination queue the docs' statement, and nothing more", () => {
    const stack = testStack();
    docsExample(stack, { failureDestination: sqs.Queue.fromQueueArn(stack, 'Dest', 'arn:aws:sqs:us-east-1:123456789012:payments-failed') });
    const destination = docsBlocks().find(
      (b) => Array.isArray(b) && (b as Statement[])[0]?.['Sid'] === 'FailureDestination',
    ) as Statement[];
    assert.ok(destination, 'the docs show the failure destination statement');
    assert.deepEqual(taskStatements(stack).slice(3), destination);
  });

  it('grants an SNS destination sns:Publish, and the encrypted queues and topic their keys', () => {
    const stack = testStack();
    const queueKey = kms.Key.fromKeyArn(stack, 'QueueKey', 'arn:aws:kms:us-east-1:123456789012:key/11111111-1111-1111-1111-111111111111');
    const topicKey = kms.Key.fromKeyArn(stack, 'TopicKey', 'arn:aws:kms:us-east-1:123456789012:key/22222222-2222-2222-2222-222222222222');
    docsExample(stack, {
      queues: [
        sqs.Queue.fromQueueAttributes(stack, 'Enc', { queueArn: 'arn:aws:sqs:us-east-1:123456789012:secret', keyArn: queueKey.keyArn }),
      ],
      failureDestination: sns.Topic.fromTopicAttributes(stack, 'Topic', {
        topicArn: 'arn:aws:sns:us-east-1:123456789012:failed',
        keyArn: topicKey.keyArn,
      }),
      metrics: false,
    });
    assert.deepEqual(taskStatements(stack), [
      {
        Sid: 'ReceiveAndSettle',
        Effect: 'Allow',
        Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueUrl', 'sqs:GetQueueAttributes'],
        Resource: 'arn:aws:sqs:us-east-1:123456789012:secret',
      },
      {
        Sid: 'InvokeTheFunction',
        Effect: 'Allow',
        Action: 'lambda:InvokeFunction',
        Resource: 'arn:aws:lambda:us-east-1:123456789012:function:my-fn:live',
      },
      { Sid: 'FailureDestination', Effect: 'Allow', Action: 'sns:Publish', Resource: 'arn:aws:sns:us-east-1:123456789012:failed' },
      { Sid: 'DecryptQueues', Effect: 'Allow', Action: 'kms:Decrypt', Resource: queueKey.keyArn },
      { Sid: 'EncryptFailureDestination', Effect: 'Allow', Action: ['kms:GenerateDataKey', 'kms:Decrypt'], Resource: topicKey.keyArn },
    ]);
  });

  it('names the metrics namespace after --name, and adds the Temporal worker function to the invoke grant', () => {
    const stack = testStack();
    docsExample(stack, {
      name: 'orders',
      temporalTaskQueues: 'orders',
      temporalFunction: lambda.Function.fromFunctionArn(stack, 'Worker', 'arn:aws:lambda:us-east-1:123456789012:function:worker:7'),
    });
    const statements = taskStatements(stack);
    assert.deepEqual(statements[1]?.['Resource'], [
      'arn:aws:lambda:us-east-1:123456789012:function:my-fn:live',
      'arn:aws:lambda:us-east-1:123456789012:function:worker:7',
    ]);
    assert.deepEqual(statements[2]?.['Condition'], { StringEquals: { 'cloudwatch:namespace': 'Workerless-orders' } });
  });
});
