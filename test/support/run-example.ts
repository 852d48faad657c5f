/**
 * Runs one of examples/*.ts as a user would (`node --import tsx <file>`),
 * from the repo, so tsx maps the package's name to the sources through
 * tsconfig.json's paths; resolves with its exit code and output, killing it
 * after `timeoutMs`.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../', import.meta.url));

export function runExample(
  file: string,
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const script = fileURLToPath(new URL(`../../examples/${file}`, import.meta.url));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', script],
      { cwd: repo, env: { ...process.env, ...env }, timeout: timeoutMs, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr }),
    );
  });
}
