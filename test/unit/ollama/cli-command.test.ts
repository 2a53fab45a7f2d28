import { describe, expect, it } from 'vitest';
import { describeCliFailure, runCliCommand, type CliCommandResult } from '../../../src/ollama/cli-command.js';
import { isRunning } from '../../helpers/proc-state.js';

const sh = (script: string, timeoutMs = 60_000) =>
  runCliCommand({ bin: 'sh', args: ['-c', script], env: { PATH: process.env.PATH }, timeoutMs });

/** The pid the script printed on its first line: a helper it started. */
const helperPid = (stdout: string) => Number(stdout.split('\n')[0]);

const spawnFailure = (code: string): CliCommandResult => ({
  stdout: '',
  stderr: '',
  exitCode: null,
  timedOut: false,
  spawnError: `could not start (${code})`,
  spawnErrorCode: code,
});

describe.skipIf(process.platform !== 'linux')('a short CLI command (list, ps, --version)', () => {
  // A helper that outlives the command by far: waiting for the pipes would outlast the test's own limit.
  it('ends with the CLI, not with a helper it started that still holds its output pipes', async () => {
    const result = await sh('setsid sleep 45 & echo $!; echo "NAME  ID"; echo "warning" >&2');
    const helper = helperPid(result.stdout);
    try {
      expect(result).toMatchObject({ exitCode: 0, timedOut: false, spawnError: null });
      expect(result.stdout).toContain('NAME  ID');
      expect(result.stderr).toBe('warning\n');
      expect(isRunning(helper)).toBe(true); // left alone
    } finally {
      process.kill(helper, 'SIGKILL');
    }
  });

  it('a timeout ends it even while a helper holds the pipes', async () => {
    const result = await sh('setsid sleep 45 & echo $!; exec sleep 45', 300);
    try {
      expect(result).toMatchObject({ timedOut: true, spawnError: null });
    } finally {
      process.kill(helperPid(result.stdout), 'SIGKILL');
    }
  });

  it('a CLI that cannot be found is said so, with its code', async () => {
    const result = await runCliCommand({ bin: '/nonexistent/ollama', args: ['list'], env: {}, timeoutMs: 5_000 });
    expect(result).toMatchObject({ spawnErrorCode: 'ENOENT', exitCode: null });
    expect(describeCliFailure('/nonexistent/ollama', ['list'], result, 5_000).cause).toBe('cli_not_found');
  });
});

describe('describeCliFailure of a spawn error', () => {
  it('a machine out of descriptors, processes or memory is spawn_failed, never "CLI not found"', () => {
    for (const code of ['EMFILE', 'ENFILE', 'EAGAIN', 'ENOMEM']) {
      expect(describeCliFailure('ollama', ['list'], spawnFailure(code), 5_000).cause, code).toBe('spawn_failed');
    }
  });

  it('a CLI that is missing or not executable is cli_not_found; another spawn error is only an error', () => {
    for (const code of ['ENOENT', 'EACCES', 'ENOEXEC']) {
      expect(describeCliFailure('ollama', ['list'], spawnFailure(code), 5_000).cause, code).toBe('cli_not_found');
    }
    expect(describeCliFailure('ollama', ['list'], spawnFailure('EINVAL'), 5_000).cause).toBe('error');
  });
});
