import { describe, expect, it } from 'vitest';
import { describeCliFailure, runCliCommand, type CliCommandResult } from '../../../src/ollama/cli-command.js';

const spawnFailure = (code: string): CliCommandResult => ({
  stdout: '',
  stderr: '',
  exitCode: null,
  timedOut: false,
  spawnError: `could not start (${code})`,
  spawnErrorCode: code,
});

describe.skipIf(process.platform !== 'linux')('a short CLI command (list, ps, --version)', () => {
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
