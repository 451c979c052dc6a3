// Prebuilds the workflow bundle so that a cold start does not run webpack (10-30 s on a small function):
//   node examples/temporal-lambda-worker/bundle.ts dist/workflow-bundle.js
// then ship the file with the function and set TEMPORAL_WORKFLOW_BUNDLE to its path.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';

/** Bundles workflows.ts into one file at `outPath`. */
export async function buildWorkflowBundle(outPath: string): Promise<void> {
  const { code } = await bundleWorkflowCode({ workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)) });
  await writeFile(outPath, code);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const outPath = process.argv[2];
  if (outPath === undefined) {
    console.error('usage: node bundle.ts <output.js>');
    process.exit(2);
  }
  await buildWorkflowBundle(outPath);
}
