// An `OLLAMA_BIN` wrapper whose background helper outlives the command and holds its output pipes:
// users write such wrappers to start `ollama serve` when it is not running. Every CLI command (the
// model run, `list`, `ps`, `--version`) ends when its own process exits, not when the helper does.
// Before, `list`, `ps` and `--version` waited for the pipes until their timeout: the installed-model
// check never worked (with the real CLI a missing model was then pulled), `ollama ps` was never read,
// and `ollama_health` and `doctor` said the server state was unknown.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { HealthReport } from '../../src/health/health-report-schema.js';
import { FAKE_OLLAMA, readTrace, SERVER_ENTRY, serverEnv, startTestServer, type Sandbox, makeSandbox } from './harness.js';

/**
 * A wrapper that starts a helper holding stdout and stderr (for 20 s), then runs the fake CLI. Each
 * helper's pid goes to `helpers.pid`, and every helper is killed when the test ends.
 */
function wrapperIn(sandbox: Sandbox): string {
  const wrapper = path.join(sandbox.fakeStateDir, 'ollama-wrapper');
  const pids = path.join(sandbox.fakeStateDir, 'helpers.pid');
  writeFileSync(
    wrapper,
    `#!/bin/sh\nsleep 20 &\necho $! >> ${JSON.stringify(pids)}\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(FAKE_OLLAMA)} "$@"\n`,
  );
  chmodSync(wrapper, 0o755);
  onTestFinished(() => {
    if (!existsSync(pids)) return;
    for (const pid of readFileSync(pids, 'utf8').split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
  return wrapper;
}

const commandsStarted = (sandbox: Sandbox, command: string) =>
  readTrace(sandbox).filter((e) => e.event === 'start' && e.argv?.[0] === command).length;

describe.skipIf(process.platform === 'win32')('an OLLAMA_BIN wrapper whose helper holds the pipes', () => {
  it('the installed-model check works: a missing model is refused before any `ollama run`', async () => {
    const sandbox = makeSandbox();
    const server = await startTestServer({ OLLAMA_BIN: wrapperIn(sandbox) }, sandbox);
    const missing = await server.run({ model: 'not-pulled:7b', prompt: 'x', task_id: 'wrapper-missing' });
    expect(missing.metadata).toMatchObject({ status: 'model_not_found', escalate: true });
    expect(missing.metadata.error?.message).toMatch(/not installed/);
    expect(commandsStarted(sandbox, 'list')).toBeGreaterThan(0);
    expect(commandsStarted(sandbox, 'run')).toBe(0); // the real CLI would have started pulling it

    const ok = await server.run({ model: 'llama3.2', prompt: 'hello', task_id: 'wrapper-ok' });
    expect(ok.metadata.status).toBe('ok');
  });

  it('`ollama ps` is read: a model another client loaded is known to the dispatcher', async () => {
    const sandbox = makeSandbox();
    const env = { OLLAMA_BIN: wrapperIn(sandbox), OLLAMA_MAX_LOADED_MODELS: '' }; // learned from `ollama ps`
    // Another client of the same Ollama loads qwen2.5-coder:7b.
    execFileSync(process.execPath, [FAKE_OLLAMA, 'run', 'qwen2.5-coder:7b', '--nowordwrap'], {
      env: serverEnv(sandbox),
      input: 'hi',
      stdio: 'pipe',
    });
    const server = await startTestServer(env, sandbox);
    expect((await server.run({ model: 'llama3.2', prompt: 'hello' })).metadata.status).toBe('ok');
    await expect
      .poll(
        async () => {
          const health = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
          return (health.structuredContent as HealthReport).runs.loaded_models;
        },
        { timeout: 15_000, interval: 500 },
      )
      .toContain('qwen2.5-coder:7b');
    expect(server.stderr()).not.toContain('cannot read which models Ollama has loaded');
  });

  it('ollama_health and doctor report the server, its version and the models', async () => {
    const sandbox = makeSandbox();
    const wrapper = wrapperIn(sandbox);
    const server = await startTestServer({ OLLAMA_BIN: wrapper }, sandbox);
    const health = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    const report = health.structuredContent as HealthReport;
    expect(report).toMatchObject({ ok: true, problems: [] });
    expect(report.cli).toMatchObject({ found: true, version: '0.12.0' });
    expect(report.server).toMatchObject({ reachable: true, version: '0.12.0' });
    expect(report.models.installed).toContain('llama3.2:latest');

    const doctor = spawnSync(process.execPath, [SERVER_ENTRY, 'doctor'], {
      env: serverEnv(sandbox, { OLLAMA_BIN: wrapper }),
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(doctor.stdout).toContain('✓ Ollama server: reachable');
    expect(doctor.stdout).toMatch(/✓ ollama CLI: .* \(version 0\.12\.0\)/);
    expect(doctor.status).toBe(0);
  });
});
