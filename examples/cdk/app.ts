import { App } from 'aws-cdk-lib';
import { WorkerlessExampleStack } from './stack.ts';

const app = new App();
new WorkerlessExampleStack(app, 'WorkerlessExample', {
  env: { account: process.env['CDK_DEFAULT_ACCOUNT'], region: process.env['CDK_DEFAULT_REGION'] },
});
