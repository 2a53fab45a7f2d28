// A server whose machine cannot start the CLI just now: its open-file limit is reached (EMFILE), or
// its user's process limit (EAGAIN). Node reports EMFILE as an 'error' event nobody listens to, which
// used to end the server (and every session and run in flight); any spawn error was `cli_not_found`,
// which escalates at once. Both pass by themselves: the call is retried, then answered `spawn_failed`,
// never escalated at once, and the model's circuit is left alone.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import type { HealthReport } from '../../src/health/health-report-schema.js';
import type { RunMetadata } from '../../src/app/reply/run-result.js';
import { makeSandbox, readRuns, serverEnv, SERVER_ENTRY, startTestServer, type RunningServer } from '../e2e/harness.js';
import { cannotReach, NOBODY, serverFor } from '../helpers/other-user.js';
import { isRunning } from '../helpers/proc-state.js';

const HAS_PRLIMIT = process.platform === 'linux' && spawnSync('prlimit', ['--version']).status === 0;

/** Soft and hard limit of `resource` (`Max open files`, `Max processes`) from /proc/PID/limits. */
function limits(pid: number, resource: string): { soft: string; hard: string } {
  const line = readFileSync(`/proc/${pid}/limits`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(resource));
  const [soft, hard] = line!.slice(resource.length).trim().split(/\s+/);
  return { soft: soft!, hard: hard! };
}

/** Set the soft limit of a running process (its hard limit unchanged, so it can be raised again). */
function setSoftLimit(pid: number, flag: '--nofile' | '--nproc', soft: string, hard: string, as: string[] = []): void {
  const [command, ...args] = [...as, 'prlimit', '--pid', String(pid), `${flag}=${soft}:${hard}`];
  execFileSync(command!, args);
}

async function health(server: RunningServer): Promise<HealthReport> {
  const result = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
  return result.structuredContent as HealthReport;
}

describe.skipIf(!HAS_PRLIMIT)('the server out of open files (EMFILE)', () => {
  it('answers spawn_failed without escalating, stays up, leaves the circuit alone, and recovers', async () => {
    const server = await startTestServer({ OLLAMA_MCP_MAX_RETRIES: '3' });
    const pid = server.transport.pid!;
    // A first run opens what every run needs (the state and log files, the modules).
    expect((await server.run({ model: 'llama3.2', prompt: 'warm up', task_id: 'emfile-warm' })).metadata.status).toBe('ok');

    const { soft, hard } = limits(pid, 'Max open files');
    // A few descriptors to spare: enough for the ledger and the log, not for the pipes of a spawn.
    setSoftLimit(pid, '--nofile', String(readdirSync(`/proc/${pid}/fd`).length + 3), hard);
    try {
      const pressed = await server.run({ model: 'llama3.2', prompt: 'under pressure', task_id: 'emfile' });
      expect(pressed.metadata).toMatchObject({
        status: 'spawn_failed',
        escalate: false,
        escalation_reason: null,
        retryable: true,
        retry_count: 0,
        duration_ms: 0,
      });
      expect(pressed.metadata.busy_retries).toBeGreaterThan(0); // retried inside the call first
      expect(pressed.metadata.error?.message).toMatch(/could not start .* just now \(EMFILE/);
      expect(pressed.next).toMatch(/^Retry with the same task_id \(3 tries left\) later/);

      const report = await health(server);
      expect(report.cli.found).toBe(true);
      expect(report.problems.join('\n')).toMatch(/could not start .* \(EMFILE/);
      expect(report.problems.join('\n')).not.toMatch(/cannot be run/);
      expect(report.circuits.find((c) => c.model === 'llama3.2:latest')?.consecutive_failures ?? 0).toBe(0);
    } finally {
      setSoftLimit(pid, '--nofile', soft, hard);
    }
    expect(isRunning(pid)).toBe(true);

    const lines = readRuns(server.sandbox).filter((line) => line.task_id === 'emfile');
    expect(lines.map((line) => [line.status, line.will_retry])).toEqual([
      ...lines.slice(0, -1).map(() => ['spawn_failed', true]),
      ['spawn_failed', false],
    ]);

    const recovered = await server.run({ model: 'llama3.2', prompt: 'after', task_id: 'emfile' });
    // The failed call counted once for the task, however many tries it made.
    expect(recovered.metadata).toMatchObject({ status: 'ok', escalate: false, retry_count: 1 });
    expect(server.stderr()).not.toMatch(/Uncaught|TypeError|subprocess\.stdio/);
  });
});

// RLIMIT_NPROC does not hold root back: as root, the server runs as nobody, the only processes of
// that account being the server's (and anyone's running as nobody: any count above 1 will do).
const AS_ROOT = process.getuid?.() === 0;
const AS_NOBODY = ['setpriv', `--reuid=${NOBODY.uid}`, `--regid=${NOBODY.gid}`, '--clear-groups'];

describe.skipIf(!HAS_PRLIMIT)('the server out of processes (EAGAIN)', () => {
  it('answers spawn_failed without escalating, stays up, and recovers', async ({ skip, onTestFinished }) => {
    const sandbox = makeSandbox();
    const env = serverEnv(sandbox, { OLLAMA_MCP_MAX_RETRIES: '3' });
    let command = [process.execPath, SERVER_ENTRY];
    let as: string[] = [];
    if (AS_ROOT) {
      const nobody = serverFor(NOBODY);
      onTestFinished(nobody.dispose);
      chmodSync(path.dirname(sandbox.telemetryDir), 0o755);
      for (const dir of [sandbox.telemetryDir, sandbox.traceDir, sandbox.fakeStateDir]) chmodSync(dir, 0o777);
      const unusable = nobody.unusable ?? cannotReach(NOBODY, [sandbox.telemetryDir, sandbox.traceDir]);
      if (unusable !== null) return skip(unusable);
      command = [...AS_NOBODY, process.execPath, nobody.entry];
      env.OLLAMA_BIN = nobody.fake;
      as = AS_NOBODY;
    }
    // As nobody, in a directory it may enter: a clone in a private dir is not one, and the CLI it spawns starts there.
    const cwd = AS_ROOT ? '/' : undefined;
    const transport = new StdioClientTransport({ command: command[0]!, args: command.slice(1), env, stderr: 'pipe', cwd });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    const client = new Client({ name: 'faults', version: '1.0.0' });
    await client.connect(transport);
    onTestFinished(() => client.close());
    const run = async (task: string) => {
      const result = await client.callTool({
        name: 'ollama_run',
        arguments: { model: 'llama3.2', prompt: 'x', task_id: task, response_format: 'detailed' },
      });
      return (result.structuredContent as { metadata: RunMetadata }).metadata;
    };
    const pid = transport.pid!;
    expect((await run('eagain-warm')).status).toBe('ok'); // its threads are all started by now

    const { soft, hard } = limits(pid, 'Max processes');
    setSoftLimit(pid, '--nproc', '1', hard, as);
    try {
      const pressed = await run('eagain');
      expect(pressed).toMatchObject({ status: 'spawn_failed', escalate: false, escalation_reason: null, retryable: true });
      expect(pressed.error?.message).toMatch(/could not start .* just now \(EAGAIN/);
      expect(pressed.busy_retries).toBeGreaterThan(0);
    } finally {
      setSoftLimit(pid, '--nproc', soft, hard, as);
    }
    expect(isRunning(pid)).toBe(true);
    expect(await run('eagain')).toMatchObject({ status: 'ok', retry_count: 1 });
    expect(stderr).not.toMatch(/Uncaught|TypeError/);
  });
});
