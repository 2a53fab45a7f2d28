// test/fixtures/fake-ollama.mjs alone (per-process mode) behaves like the real `ollama` CLI as the
// shared notes (ollama-cli.md) describe it, and its test controls (FAKE_OLLAMA_* env, @fake: directives) work.
// This file: signals, the other commands, the @fake: directives and the trace.
import { describe, expect, it } from 'vitest';
import { CLOUD_MSG, sleep, tmpDir, spawnFake, run, readTrace, waitFor, errorLines, lastErrLine, NO_WRAP } from './cli-harness.js';

// ----------------------------------------------------------------------------------------- signals

describe('signals', () => {
  it('SIGTERM is not handled: the process dies by the signal', async () => {
    const sub = spawnFake(['run', 'llama3.2'], { input: 'x @fake:hang' });
    await sleep(400);
    sub.kill('SIGTERM');
    const r = await sub;
    expect(r.signal).toBe('SIGTERM');
    expect(r.exitCode).toBeUndefined();
  });

  it('SIGTERM with tracing on: the exit is traced, and it still dies by the signal', async () => {
    const dir = tmpDir();
    const sub = spawnFake(['run', 'llama3.2'], { input: 'x @fake:hang', env: { FAKE_OLLAMA_TRACE_DIR: dir } });
    await waitFor(() => readTrace(dir).some((l) => l.event === 'prompt'));
    sub.kill('SIGTERM');
    const r = await sub;
    expect(r.signal).toBe('SIGTERM');
    expect(readTrace(dir).find((l) => l.event === 'exit')).toMatchObject({ pid: sub.pid, code: null, signal: 'SIGTERM' });
    expect(() => process.kill(sub.pid ?? -1, 0)).toThrow();
  });

  it('SIGINT during generation stops it: exit 0 with the partial output', async () => {
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    const sub = spawnFake(['run', 'llama3.2', ...NO_WRAP], { input: `${words} @fake:sleep_ms=2000` });
    await new Promise<void>((resolve) => sub.stdout?.once('data', () => resolve()));
    await sleep(100);
    sub.kill('SIGINT');
    const r = await sub;
    expect(r.exitCode).toBe(0);
    expect(r.signal).toBeUndefined();
    const stdout = String(r.stdout);
    expect(stdout.startsWith('fake answer from llama3.2:')).toBe(true);
    expect(stdout).not.toContain('w59');
    expect(stdout.endsWith('\n\n')).toBe(false);
  });

  it('SIGINT while the model is still loading exits 0 with nothing on stdout', async () => {
    const sub = spawnFake(['run', 'llama3.2'], { input: 'x @fake:hang' });
    // The SIGINT handler is installed in the tick that draws the first spinner frame: wait for the
    // second frame, drawn 100 ms later in a later tick (a fixed sleep raced a slow start on a loaded
    // machine, when SIGINT still killed the process).
    await new Promise<void>((resolve) => {
      let frames = 0;
      sub.stderr?.on('data', (chunk: Buffer) => {
        frames += (chunk.toString('utf8').match(/\x1b\[\?2026h/g) ?? []).length;
        if (frames >= 2) resolve();
      });
    });
    sub.kill('SIGINT');
    const r = await sub;
    expect(r.exitCode).toBe(0);
    expect(String(r.stdout)).toBe('');
  });
});

// --------------------------------------------------------------------------------- other commands

describe.concurrent('other commands', () => {
  it('list / ls print the installed models in an aligned table', async ({ expect }) => {
    for (const cmd of ['list', 'ls']) {
      const r = await run([cmd]);
      expect(r.exitCode).toBe(0);
      const lines = r.stdout.trimEnd().split('\n');
      const header = lines[0] ?? '';
      expect(header).toMatch(/^NAME +ID +SIZE +MODIFIED +$/);
      expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([
        'llama3.2:latest',
        'qwen2.5-coder:7b',
        'qwen3:8b',
        'deepseek-r1:7b',
      ]);
      for (const col of ['ID', 'SIZE', 'MODIFIED']) {
        const at = header.indexOf(col);
        for (const row of lines.slice(1)) {
          expect(row[at - 1]).toBe(' ');
          expect(row[at]).not.toBe(' ');
        }
      }
      expect(lines[1]).toMatch(/^llama3\.2:latest +[0-9a-f]{12} +2\.0 GB +\S/);
    }
  });

  it('list follows FAKE_OLLAMA_MODELS', async ({ expect }) => {
    const r = await run(['list'], { env: { FAKE_OLLAMA_MODELS: 'phi3:mini' } });
    expect(r.stdout.split('\n')[1]).toMatch(/^phi3:mini +[0-9a-f]{12} /);
  });

  it('ps prints the running-models table header (CONTEXT column from v0.10)', async ({ expect }) => {
    const a = await run(['ps']);
    expect(a.exitCode).toBe(0);
    expect(a.stdout).toBe('NAME    ID    SIZE    PROCESSOR    CONTEXT    UNTIL \n');
    const b = await run(['ps'], { env: { FAKE_OLLAMA_VERSION: '0.9.0' } });
    expect(b.stdout).toBe('NAME    ID    SIZE    PROCESSOR    UNTIL \n');
  });

  it('--version and -v', async ({ expect }) => {
    for (const flag of ['--version', '-v']) {
      const r = await run([flag]);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toBe('ollama version is 0.12.0\n');
    }
    expect((await run(['-v'], { env: { FAKE_OLLAMA_VERSION: '0.9.2' } })).stdout).toBe('ollama version is 0.9.2\n');
  });

  it('--version with the server down warns and still exits 0', async ({ expect }) => {
    const r = await run(['--version'], { env: { FAKE_OLLAMA_SERVER: 'down' } });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('Warning: could not connect to a running Ollama instance\nWarning: client version is 0.12.0\n');
  });

  it('list, ps and show fail with the connect error when the server is down', async ({ expect }) => {
    for (const args of [['list'], ['ps'], ['show', 'llama3.2']]) {
      const r = await run(args, { env: { FAKE_OLLAMA_SERVER: 'down' } });
      expect(r.exitCode).toBe(1);
      expect(r.stderr).toMatch(/^Error: .*could not connect to ollama/);
    }
  });

  it('show prints model info for an installed model and fails (without pulling) otherwise', async ({ expect }) => {
    const a = await run(['show', 'llama3.2']);
    expect(a.exitCode).toBe(0);
    expect(a.stdout).toMatch(/^ {2}Model\n {4}architecture +llama/);
    expect(a.stdout).toContain('  Capabilities\n');
    const b = await run(['show', 'nope']);
    expect(b.exitCode).toBe(1);
    expect(b.stderr).toBe("Error: model 'nope' not found\n");
  });

  it('an unknown command fails like cobra', async ({ expect }) => {
    const r = await run(['frobnicate']);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toBe('Error: unknown command "frobnicate" for "ollama"\n');
  });
});

// ------------------------------------------------------------------------------------- directives

describe.concurrent('directives', () => {
  it('sleep_ms=N takes about N ms; directives are removed from the echoed prompt', async ({ expect }) => {
    const t0 = Date.now();
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: 'slow @fake:sleep_ms=600 one' });
    const took = Date.now() - t0;
    expect(r.stdout).toBe('fake answer from llama3.2: slow one\n\n');
    expect(took).toBeGreaterThanOrEqual(600);
    expect(took).toBeLessThan(2500);
  });

  it('answer=TEXT is URL-decoded', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: '@fake:answer=hello%20world%0Aline%202 ignored' });
    expect(r.stdout).toBe('hello world\nline 2\n\n');
  });

  it('empty: an empty answer is just the two newlines', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: 'hi @fake:empty' });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('\n\n');
  });

  it('hang: never finishes until killed', async ({ expect }) => {
    const sub = spawnFake(['run', 'llama3.2'], { input: 'x @fake:hang' });
    await sleep(400);
    expect(sub.exitCode).toBeNull();
    sub.kill('SIGKILL');
    expect((await sub).signal).toBe('SIGKILL');
  });

  it('ignore_sigterm: survives SIGTERM, so callers must escalate to SIGKILL', async ({ expect }) => {
    const dir = tmpDir();
    const sub = spawnFake(['run', 'llama3.2'], {
      input: 'x @fake:hang @fake:ignore_sigterm',
      env: { FAKE_OLLAMA_TRACE_DIR: dir },
    });
    await waitFor(() => readTrace(dir).some((l) => l.event === 'prompt'));
    sub.kill('SIGTERM');
    // Wait for the fake to have handled the signal (slow on a loaded machine), then check it lived on.
    await waitFor(() => readTrace(dir).some((l) => l.event === 'signal' && l.signal === 'SIGTERM'));
    await sleep(200);
    expect(sub.exitCode).toBeNull();
    sub.kill('SIGKILL');
    expect((await sub).signal).toBe('SIGKILL');
  });

  it('FAKE_OLLAMA_IGNORE_SIGTERM=1 ignores SIGTERM from the very start', async ({ expect }) => {
    const dir = tmpDir();
    const sub = spawnFake(['run', 'llama3.2'], {
      openStdin: true,
      env: { FAKE_OLLAMA_IGNORE_SIGTERM: '1', FAKE_OLLAMA_TRACE_DIR: dir },
    });
    // The handler is installed before the start line is traced; a fixed sleep raced a slow start under load.
    await waitFor(() => readTrace(dir).some((e) => e.event === 'start'));
    sub.kill('SIGTERM');
    await sleep(300);
    expect(sub.exitCode).toBeNull();
    sub.kill('SIGKILL');
    expect((await sub).signal).toBe('SIGKILL');
  });

  it('flood_bytes=N writes exactly N bytes of answer, then the trailing newlines', async ({ expect }) => {
    const n = 3_000_123;
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: `@fake:flood_bytes=${n}` });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.length).toBe(n + 2);
    expect(r.stdout.endsWith('\n\n')).toBe(true);
    expect(r.stdout).not.toContain('\x1b');
  });

  it('exit=N with stderr=TEXT', async ({ expect }) => {
    const a = await run(['run', 'llama3.2'], { input: 'x @fake:exit=3 @fake:stderr=model%20crashed' });
    expect(a.exitCode).toBe(3);
    expect(lastErrLine(a.stderr)).toBe('Error: model crashed');
    expect(errorLines(a.stderr)).toHaveLength(1);
    const b = await run(['run', 'llama3.2'], { input: 'x @fake:exit=1' });
    expect(b.exitCode).toBe(1);
    expect(lastErrLine(b.stderr)).toBe('Error: something went wrong');
  });

  it('error=unreachable|busy|not_found|signin force those failures', async ({ expect }) => {
    const unreachable = await run(['run', 'llama3.2'], { input: '@fake:error=unreachable' });
    expect(unreachable.exitCode).toBe(1);
    expect(lastErrLine(unreachable.stderr)).toContain('could not connect to ollama');
    const busy = await run(['run', 'llama3.2'], { input: '@fake:error=busy' });
    expect(busy.exitCode).toBe(1);
    expect(lastErrLine(busy.stderr)).toBe(
      'Error: 503 Service Unavailable: server busy, please try again.  maximum pending requests exceeded',
    );
    const notFound = await run(['run', 'llama3.2'], { input: '@fake:error=not_found' });
    expect(notFound.exitCode).toBe(1);
    expect(lastErrLine(notFound.stderr)).toBe('Error: pull model manifest: file does not exist');
    const signin = await run(['run', 'llama3.2'], { input: '@fake:error=signin', env: { FAKE_OLLAMA_SIGNED_IN: '1' } });
    expect(signin.exitCode).toBe(0);
    expect(signin.stdout.startsWith(CLOUD_MSG)).toBe(true);
  });

  it('crash_signal=SIGSEGV dies by the signal after partial output', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: 'a b c d e f g h @fake:crash_signal=SIGSEGV' });
    expect(r.signal).toBe('SIGSEGV');
    expect(r.stdout.startsWith('fake answer')).toBe(true);
    expect(r.stdout).not.toContain(' h');
  });

  it('fail_times=N with key=K fails the first N invocations, then succeeds', async ({ expect }) => {
    const env = { FAKE_OLLAMA_STATE_DIR: tmpDir() };
    const input = 'q @fake:fail_times=2 @fake:key=job-1';
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await run(['run', 'llama3.2', ...NO_WRAP], { input, env }));
    expect(results.map((r) => r.exitCode)).toEqual([1, 1, 0, 0]);
    expect(lastErrLine(results[0]?.stderr ?? '')).toBe('Error: fake failure 1');
    expect(lastErrLine(results[1]?.stderr ?? '')).toBe('Error: fake failure 2');
    expect(results[2]?.stdout).toBe('fake answer from llama3.2: q\n\n');
    // another key has its own counter
    expect((await run(['run', 'llama3.2'], { input: 'q @fake:fail_times=1 @fake:key=job-2', env })).exitCode).toBe(1);
  });

  it('fail_times counts correctly across concurrent fakes', async ({ expect }) => {
    const env = { FAKE_OLLAMA_STATE_DIR: tmpDir() };
    const input = 'q @fake:fail_times=3 @fake:key=par';
    const results = await Promise.all(Array.from({ length: 8 }, () => run(['run', 'llama3.2', ...NO_WRAP], { input, env })));
    expect(results.filter((r) => r.exitCode === 1)).toHaveLength(3);
    expect(results.filter((r) => r.exitCode === 0)).toHaveLength(5);
    expect(
      results
        .map((r) => lastErrLine(r.stderr))
        .filter((l) => l.startsWith('Error:'))
        .sort(),
    ).toEqual(['Error: fake failure 1', 'Error: fake failure 2', 'Error: fake failure 3']);
  });

  it('a misused directive exits 64', async ({ expect }) => {
    expect((await run(['run', 'llama3.2'], { input: '@fake:fail_times=1' })).exitCode).toBe(64);
    expect((await run(['run', 'llama3.2'], { input: '@fake:nonsense' })).exitCode).toBe(64);
    expect((await run(['run', 'llama3.2'], { input: '@fake:sleep_ms=soon' })).exitCode).toBe(64);
  });

  it('FAKE_OLLAMA_DELAY_MS adds a delay before every answer', async ({ expect }) => {
    const t0 = Date.now();
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: 'hi', env: { FAKE_OLLAMA_DELAY_MS: '400' } });
    expect(r.stdout).toBe('fake answer from llama3.2: hi\n\n');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(400);
  });

  it('--format makes the default answer a JSON object', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', '--format', 'json', ...NO_WRAP], { input: 'hi' });
    expect(JSON.parse(r.stdout)).toEqual({ answer: 'fake answer from llama3.2: hi' });
  });
});

// ------------------------------------------------------------------------------------------ trace

describe('trace', () => {
  it('writes start, prompt and exit lines; argv carries the flags but never the stdin prompt', async () => {
    const dir = tmpDir();
    const sub = spawnFake(['run', 'llama3.2', '--nowordwrap'], {
      input: 'secret prompt text',
      env: { FAKE_OLLAMA_TRACE_DIR: dir },
    });
    const r = await sub;
    expect(r.exitCode).toBe(0);
    const lines = readTrace(dir);
    expect(lines.map((l) => l.event)).toEqual(['start', 'prompt', 'exit']);
    const [start, prompt, exit] = lines;
    expect(start).toMatchObject({ pid: sub.pid, argv: ['run', 'llama3.2', '--nowordwrap'], model: 'llama3.2', prompt: null });
    expect(start?.argv).toContain('--nowordwrap');
    expect(JSON.stringify(start?.argv)).not.toContain('secret');
    expect(prompt).toMatchObject({ pid: sub.pid, model: 'llama3.2', prompt: 'secret prompt text' });
    expect(exit).toMatchObject({ pid: sub.pid, code: 0, signal: null });
    for (const l of lines) expect(typeof l.t).toBe('number');
    expect((start?.t ?? 0) <= (exit?.t ?? 0)).toBe(true);
  });

  it('records failures with their exit code', async () => {
    const dir = tmpDir();
    await run(['run', 'llama3.2', '--bogus'], { env: { FAKE_OLLAMA_TRACE_DIR: dir } });
    const lines = readTrace(dir);
    expect(lines.map((l) => l.event)).toEqual(['start', 'exit']);
    expect(lines[1]).toMatchObject({ code: 1, signal: null });
  });

  it('lets a test count concurrent fakes', async () => {
    const dir = tmpDir();
    await Promise.all(
      Array.from({ length: 4 }, () =>
        run(['run', 'llama3.2', ...NO_WRAP], { input: 'x @fake:sleep_ms=400', env: { FAKE_OLLAMA_TRACE_DIR: dir } }),
      ),
    );
    const events = readTrace(dir)
      .filter((l) => l.event === 'start' || l.event === 'exit')
      .sort((a, b) => a.t - b.t || (a.event === 'exit' ? -1 : 1));
    let live = 0;
    let max = 0;
    for (const e of events) {
      live += e.event === 'start' ? 1 : -1;
      max = Math.max(max, live);
    }
    expect(live).toBe(0);
    expect(max).toBe(4);
  });
});
