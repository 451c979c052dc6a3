import { spawn } from 'node:child_process';

/** What a finished command left behind. */
export interface RunResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly durationMs: number;
}

/**
 * Runs a command to completion and collects its output. Never rejects on a non-zero exit: callers assert
 * on the code. `echo` streams the output to this process's stderr as well (for long builds).
 */
export function run(
  command: string,
  args: readonly string[],
  options: { readonly timeoutMs?: number; readonly echo?: boolean; readonly env?: NodeJS.ProcessEnv; readonly cwd?: string } = {},
): Promise<RunResult> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: options.env ?? process.env,
      ...(options.cwd ? { cwd: options.cwd } : {}),
      ...(options.timeoutMs ? { timeout: options.timeoutMs, killSignal: 'SIGKILL' as const } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (options.echo) process.stderr.write(chunk);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      if (options.echo) process.stderr.write(chunk);
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, durationMs: performance.now() - started }));
  });
}

/** `docker ...`, failing with the command's output when it exits non-zero. */
export async function docker(args: readonly string[], timeoutMs = 60_000): Promise<string> {
  const result = await run('docker', args, { timeoutMs });
  if (result.code !== 0) {
    throw new Error(`docker ${args.join(' ')} exited with ${result.code ?? result.signal}: ${result.stderr.trim()}`);
  }
  return result.stdout.trim();
}

/** Environment flags for `docker run`: only the given variables reach the container. */
export function envArgs(env: Readonly<Record<string, string>>): string[] {
  return Object.entries(env).flatMap(([name, value]) => ['-e', `${name}=${value}`]);
}

export function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}
