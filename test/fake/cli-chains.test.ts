// The fake's knobs for fallback chains and busy backoff (see fixtures/fake-ollama.md): the error
// lines must be the real CLI's (the shared notes, ollama-cli.md), byte for byte after the spinner.
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-dir.js';

const FAKE = fileURLToPath(new URL('../fixtures/fake-ollama.mjs', import.meta.url));
const BUSY = 'Error: 503 Service Unavailable: server busy, please try again.  maximum pending requests exceeded\n';
const TERMINATED = 'Error: 500 Internal Server Error: llama-server process has terminated: exit status 2\n';
const dir = tempDir('fake-ollama-chains-');

/** `ollama run MODEL` with the prompt on stdin; stderr from its `Error: ` on (after the spinner's escapes). */
async function run(model: string, env: Record<string, string>) {
  const r = await execa(FAKE, ['run', model, '--nowordwrap'], {
    input: 'hi',
    env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), ...env },
    extendEnv: false,
    reject: false,
    stripFinalNewline: false,
    timeout: 12_000,
  });
  const stderr = String(r.stderr);
  return { exitCode: r.exitCode, stdout: String(r.stdout), error: stderr.slice(stderr.indexOf('Error: ')) };
}

describe('fake-ollama: busy N times then free, across processes', () => {
  it('answers the real 503 for the first N runs (counted in the counter file), then answers', async () => {
    const env = { FAKE_OLLAMA_BUSY_TIMES: '2', FAKE_OLLAMA_COUNTER_FILE: path.join(dir, 'count') };
    const first = await Promise.all([run('llama3.2', env), run('llama3.2', env)]); // two processes at once
    for (const r of first) expect(r).toMatchObject({ exitCode: 1, stdout: '', error: BUSY });
    const third = await run('llama3.2', env);
    expect(third).toMatchObject({ exitCode: 0, stdout: 'fake answer from llama3.2: hi\n\n' });
  });

  it('is a misuse (exit 64) without a counter file', async () => {
    expect((await run('llama3.2', { FAKE_OLLAMA_BUSY_TIMES: '1' })).exitCode).toBe(64);
  });
});

describe('fake-ollama: broken models', () => {
  it('a listed model fails to load with the real 500; the others answer', async () => {
    const env = { FAKE_OLLAMA_BROKEN_MODELS: 'qwen3:8b' };
    expect(await run('library/qwen3:8b', env)).toMatchObject({ exitCode: 1, error: TERMINATED });
    expect((await run('llama3.2', env)).exitCode).toBe(0);
  });
});
