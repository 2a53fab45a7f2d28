import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeSandbox, ROOT } from './harness.js';

// A model process must not outlive the server, even when the server dies without its shutdown (an
// uncaught error). execa's per-spawn `cleanup` is off on the hot path; one exit hook replaces it.
// The child here is silent (a CLI writing its spinner to a closed pipe would die of SIGPIPE anyway).
function crashingServer(pidFile: string): string {
  return `
    const { runModelProcess } = await import(${JSON.stringify(path.join(ROOT, 'dist/ollama/model-process.js'))});
    void runModelProcess({
      bin: '/bin/sh', args: ['-c', 'echo $$ > ${pidFile}; cat > /dev/null; exec sleep 30'], prompt: 'a prompt',
      env: process.env, timeoutMs: 60_000, startTimeoutMs: 60_000, killGraceMs: 5_000, maxOutputBytes: 1 << 20,
    });
    process.stdin.once('data', () => { throw new Error('simulated crash'); });
  `;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => boolean, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('model processes and the server exiting', () => {
  it.skipIf(process.platform === 'win32')('a server that crashes mid-run leaves no model process running', async () => {
    const pidFile = path.join(makeSandbox().traceDir, 'model.pid');
    const server = spawn(process.execPath, ['--input-type=module', '-e', crashingServer(pidFile)], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    server.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
    let pid = 0;
    try {
      await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'), 'the model process', 10_000);
      pid = Number(readFileSync(pidFile, 'utf8'));
      expect(isAlive(pid)).toBe(true);

      server.stdin.write('crash\n');
      expect(await exited).toBe(1);
      expect(stderr).toContain('simulated crash');
      await until(() => !isAlive(pid), `the model process ${pid} to be gone`, 5_000);
    } finally {
      if (pid > 0 && isAlive(pid)) process.kill(pid, 'SIGKILL');
      server.kill('SIGKILL');
    }
  });
});
