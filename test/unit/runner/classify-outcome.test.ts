import { describe, expect, it } from 'vitest';
import { classifyOutcome } from '../../../src/runner/classify-outcome.js';
import { processOutcome } from '../../helpers/process-outcome.js';

const exited = processOutcome;
const failedWith = (line: string) =>
  exited({ exitCode: 1, stderrTail: `\u001b[?25l\u001b[1G\u2819 \u001b[K\u001b[2K\u001b[1GError: ${line}\n` });

describe('classifyOutcome', () => {
  it.each([
    ['ok', exited({ stdout: 'fine\n\n' })],
    ['empty_output', exited({ stdout: '\n\n' })],
    ['empty_output', exited({ stdout: 'Thinking...\nall thought\n...done thinking.\n\n\n\n' })],
    ['signin_required', exited({ stdout: 'You need to be signed in to Ollama to run Cloud models.\n' })],
    ['timeout', exited({ exitCode: null, signal: 'SIGTERM', timedOut: true, stdout: 'partial' })],
    ['output_limit', exited({ exitCode: null, signal: 'SIGTERM', truncated: true })],
    ['cancelled', exited({ exitCode: null, signal: 'SIGTERM', cancelled: true })],
    ['cli_not_found', exited({ exitCode: null, spawnError: 'cannot run `ollama`: not found' })],
    ['ollama_unreachable', failedWith("could not connect to ollama server, run 'ollama serve' to start it")],
    ['ollama_unreachable', failedWith('could not connect to ollama app, is it running?')],
    [
      'ollama_unreachable',
      failedWith("ollama server not responding - could not connect to ollama server, run 'ollama serve' to start it"),
    ],
    [
      'ollama_unreachable',
      failedWith('Post "http://127.0.0.1:11434/api/generate": dial tcp 127.0.0.1:11434: connect: connection refused'),
    ],
    ['server_busy', failedWith('server busy, please try again.  maximum pending requests exceeded')],
    ['model_not_found', failedWith('pull model manifest: file does not exist')],
    ['model_not_found', failedWith('model "nope" not found, try pulling it first')],
    ['unsupported_option', failedWith('"llama3.2" does not support thinking')],
    ['unsupported_option', failedWith('time: missing unit in duration "10"')],
    ['crashed', failedWith('something else broke')],
    ['crashed', exited({ exitCode: null, signal: 'SIGSEGV', stdout: 'half' })],
    ['crashed', exited({ exitCode: 2 })],
  ] as const)('%s <- %#', (status, outcome) => {
    expect(classifyOutcome(outcome).status).toBe(status);
  });

  it('carries the CLI error line as the error text', () => {
    expect(classifyOutcome(failedWith('server busy, please try again.  maximum pending requests exceeded')).error).toBe(
      'server busy, please try again.  maximum pending requests exceeded',
    );
    expect(classifyOutcome(exited({ exitCode: null, signal: 'SIGSEGV' })).error).toBe('the ollama CLI was killed by SIGSEGV');
  });

  it('a timeout keeps the partial answer', () => {
    expect(classifyOutcome(exited({ timedOut: true, exitCode: null, stdout: 'partial answ' })).answer).toBe('partial answ');
  });
});
