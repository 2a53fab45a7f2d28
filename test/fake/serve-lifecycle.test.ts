// The fake `ollama serve` as a process: where it listens, how it stops, what it refuses; and the
// test helper that starts it (test/helpers/fake-serve.ts).

import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { isRunning } from '../helpers/proc-state.js';
import { FAKE_OLLAMA, startFakeServe } from '../helpers/fake-serve.js';
import { cli, errorText, run, useServe, waitFor, waitForEvent } from './shared-mode.js';
import { tempDir } from '../helpers/temp-dir.js';

/** `fake-ollama.mjs serve` with exactly `env` (plus PATH), for the cases that must fail to start. */
function serveWith(env: Record<string, string>) {
  return execa(FAKE_OLLAMA, ['serve'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    extendEnv: false,
    reject: false,
    timeout: 10_000,
  });
}

describe('starting', () => {
  it('prints the address it listens on first; port 0 picks a free one; it answers the heartbeat', async () => {
    const serve = await useServe();
    expect(serve.host).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(serve.host).not.toBe('127.0.0.1:0');
    const res = await fetch(`http://${serve.host}/`);
    expect([res.status, await res.text()]).toEqual([200, 'Ollama is running']);
    const ps = await fetch(`http://${serve.host}/api/ps`);
    expect(await ps.json()).toEqual({ models: [] });
  });

  it('refuses an address that is not loopback, and a misused FAKE_OLLAMA_* knob (exit 64)', async () => {
    const open = await serveWith({ OLLAMA_HOST: '0.0.0.0:0' });
    expect(open.exitCode).toBe(64);
    expect(open.stderr).toContain('Error: fake-ollama: OLLAMA_HOST must be a loopback address');
    const bad = await serveWith({ OLLAMA_HOST: '127.0.0.1:0', FAKE_OLLAMA_LOAD_MS: 'llama3.2=soon' });
    expect(bad.exitCode).toBe(64);
    expect(bad.stderr).toContain('Error: fake-ollama: FAKE_OLLAMA_LOAD_MS needs model=N,... or one number');
  });

  it('reads OLLAMA_* as Ollama does: an invalid value falls back to the default', async () => {
    const serve = await useServe({ OLLAMA_NUM_PARALLEL: 'many', FAKE_OLLAMA_LOAD_MS: '50' });
    expect((await run(serve, 'llama3.2', 'hi')).exitCode).toBe(0);
  });
});

describe('stopping', () => {
  it('stopped with requests in flight, it closes their connections: the CLIs fail as Go reports it', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50', OLLAMA_NUM_PARALLEL: '2' });
    const waiting = run(serve, 'llama3.2', 'x @fake:hang');
    const streaming = run(serve, 'llama3.2', 'one two three four @fake:sleep_ms=4000');
    await waitForEvent(serve, (e) => e.event === 'request_start', 'the generation');
    await new Promise((resolve) => streaming.stdout?.once('data', resolve));
    await serve.stop();
    const [before, during] = await Promise.all([waiting, streaming]);
    // Before the first token the server had sent nothing: Go's client sees EOF; during the stream, a cut body.
    expect(errorText(before.stderr)).toBe(`Error: Post "http://${serve.host}/api/generate": EOF`);
    expect(errorText(during.stderr)).toBe('Error: unexpected EOF');
    expect([before.exitCode, during.exitCode]).toEqual([1, 1]);
    expect(during.stdout.startsWith('fake')).toBe(true); // the tokens printed before the cut, no trailing newlines
    expect(during.stdout.endsWith('\n')).toBe(false);
  });

  it.each(['SIGTERM', 'SIGINT'] as const)('%s stops it with exit 0', async (signal) => {
    const sub = execa(FAKE_OLLAMA, ['serve'], {
      env: { PATH: process.env.PATH ?? '', OLLAMA_HOST: '127.0.0.1:0' },
      extendEnv: false,
      reject: false,
    });
    await new Promise((resolve) => sub.stdout?.once('data', resolve));
    sub.kill(signal);
    const r = await sub;
    expect([r.exitCode, r.signal]).toEqual([0, undefined]);
  });

  it('exits by itself when the process that started it dies', async () => {
    // The starter prints the server's pid, then the server's own first line (it shares the stdout).
    const starter = execa(
      process.execPath,
      [
        '-e',
        `const c = require('node:child_process').spawn(process.execPath, [${JSON.stringify(FAKE_OLLAMA)}, 'serve'], { stdio: ['ignore', 'inherit', 'ignore'], env: { PATH: process.env.PATH, OLLAMA_HOST: '127.0.0.1:0' } });
         console.log(c.pid); setInterval(() => {}, 1000);`,
      ],
      { reject: false },
    );
    let out = '';
    starter.stdout?.on('data', (d: Buffer) => (out += String(d)));
    await waitFor(() => out.includes('listening on'), 'the server to listen');
    const pid = Number(out.split('\n')[0]);
    expect(isRunning(pid)).toBe(true);
    starter.kill('SIGKILL');
    await starter;
    await waitFor(() => !isRunning(pid), 'the orphaned server to exit', 5000);
  });
});

describe('test/helpers/fake-serve.ts', () => {
  it('gives the env a server under test needs, counts loads per model, and stops once', async () => {
    const traceDir = tempDir('fake-serve-helper-');
    const serve = await startFakeServe({ env: { FAKE_OLLAMA_LOAD_MS: '50' }, traceDir });
    expect(serve.env).toEqual({ OLLAMA_HOST: serve.host, FAKE_OLLAMA_SERVE: '1', FAKE_OLLAMA_TRACE_DIR: traceDir });
    await run(serve, 'llama3.2', 'hi');
    await run(serve, 'qwen2.5-coder:7b', 'hi');
    expect([serve.loads(), serve.loads('llama3.2:latest'), serve.loads('qwen3:8b:latest')]).toEqual([2, 1, 0]);
    expect(serve.events()[0]).toMatchObject({ event: 'received', id: 'r1', model: 'llama3.2:latest' });
    await serve.stop();
    await serve.stop();
    expect((await cli(serve, ['ps'])).exitCode).toBe(1);
  });

  it('without a trace dir: no trace, and the env says nothing of one', async () => {
    const serve = await startFakeServe();
    expect(serve.env).toEqual({ OLLAMA_HOST: serve.host, FAKE_OLLAMA_SERVE: '1' });
    expect(serve.events()).toEqual([]);
    await serve.stop();
  });
});
