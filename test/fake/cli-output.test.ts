// test/fixtures/fake-ollama.mjs alone (per-process mode) behaves like the real `ollama` CLI as the
// shared notes (ollama-cli.md) describe it, and its test controls (FAKE_OLLAMA_* env, @fake: directives) work.
// This file: the prompt, stderr (spinner) and stdout (word wrap, thinking, the answer, --verbose).
import { describe, expect, it } from 'vitest';
import {
  strip,
  FRAME,
  CLEAR,
  sleep,
  tmpDir,
  spawnFake,
  run,
  readTrace,
  waitFor,
  renderTerminal,
  screen,
  lastErrLine,
  NO_WRAP,
} from './cli-harness.js';

// ------------------------------------------------------------------------------------ the prompt

describe.concurrent('prompt: stdin vs argv', () => {
  it('reads the prompt from stdin to EOF', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: 'hello from stdin' });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('fake answer from llama3.2: hello from stdin\n\n');
  });

  it('puts stdin in front of the argument words, joined by one space', async ({ expect }) => {
    const dir = tmpDir();
    const r = await run(['run', 'llama3.2', ...NO_WRAP, 'and', 'argv'], {
      input: 'stdin text',
      env: { FAKE_OLLAMA_TRACE_DIR: dir },
    });
    expect(r.stdout).toBe('fake answer from llama3.2: stdin text and argv\n\n');
    expect(readTrace(dir).find((l) => l.event === 'prompt')?.prompt).toBe('stdin text and argv');
  });

  it('takes the prompt from argv when stdin is empty (/dev/null)', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', 'only', 'argv', ...NO_WRAP]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('fake answer from llama3.2: only argv\n\n');
  });

  it('with no prompt at all only loads the model and prints nothing', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', ...NO_WRAP]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('');
  });

  it('keeps a multi-line, non-ASCII prompt intact', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: 'línea uno\nzweite Zeile 日本' });
    expect(r.stdout).toBe('fake answer from llama3.2: línea uno\nzweite Zeile 日本\n\n');
  });
});

describe('prompt: an open stdin pipe', () => {
  it('hangs until stdin is closed, like the real CLI', async () => {
    const dir = tmpDir();
    const sub = spawnFake(['run', 'llama3.2', ...NO_WRAP], { openStdin: true, env: { FAKE_OLLAMA_TRACE_DIR: dir } });
    await waitFor(() => readTrace(dir).some((l) => l.event === 'start'));
    await sleep(500);
    expect(sub.exitCode).toBeNull();
    expect(readTrace(dir).some((l) => l.event === 'prompt')).toBe(false);
    sub.stdin?.end('late prompt');
    const r = await sub;
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('fake answer from llama3.2: late prompt\n\n');
  });

  it('stays alive with the pipe open until killed', async () => {
    const sub = spawnFake(['run', 'llama3.2'], { openStdin: true });
    await sleep(500);
    expect(sub.exitCode).toBeNull();
    sub.kill('SIGKILL');
    const r = await sub;
    expect(r.signal).toBe('SIGKILL');
  });
});

// ---------------------------------------------------------------------------------- stderr, stdout

describe.concurrent('spinner on stderr', () => {
  it('draws braille frames with the exact escapes every ~100 ms, then clears', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: 'hi @fake:sleep_ms=400' });
    expect(r.exitCode).toBe(0);
    expect(r.stderr.match(FRAME)?.length ?? 0).toBeGreaterThanOrEqual(2);
    expect(r.stderr).toContain(CLEAR);
    expect(r.stdout).not.toContain('\x1b');
  });

  it('an error follows the cleared spinner on the same line: naive ANSI stripping leaves the glyph', async ({ expect }) => {
    const r = await run(['run', 'llama3.2'], { input: 'x', env: { FAKE_OLLAMA_SERVER: 'busy' } });
    const raw = r.stderr.trimEnd().split('\n');
    const last = raw[raw.length - 1] ?? '';
    expect(
      last.endsWith('Error: 503 Service Unavailable: server busy, please try again.  maximum pending requests exceeded'),
    ).toBe(true);
    expect(strip(last)).toMatch(/^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Error: 503 Service Unavailable: server busy/);
    expect(lastErrLine(r.stderr)).toBe(
      'Error: 503 Service Unavailable: server busy, please try again.  maximum pending requests exceeded',
    );
  });

  it('draws at least one frame even for an instant answer', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: 'hi' });
    expect(r.stderr.match(FRAME)?.length ?? 0).toBeGreaterThanOrEqual(1);
    expect(r.stderr).toContain(CLEAR);
  });
});

describe.concurrent('word wrap', () => {
  // 25 words: under the 200-character cut of the echoed prompt
  const words = Array.from({ length: 25 }, (_, i) => `word${String(i + 1).padStart(2, '0')}`).join(' ');
  const answer = `fake answer from llama3.2: ${words}`;

  it('is on by default: backs up over the word with ESC[nD, ESC[K, newline, and reprints it', async ({ expect }) => {
    const r = await run(['run', 'llama3.2'], { input: words });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/\x1b\[\d+D\x1b\[K\n/);
    const lines = renderTerminal(r.stdout.slice(0, -2));
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(75);
    expect(lines.map((l) => l.trimEnd()).join(' ')).toBe(answer);
  });

  it('follows ollama displayResponse exactly (80 columns: wraps past column 75)', async ({ expect }) => {
    const r = await run(['run', 'llama3.2'], { input: `@fake:answer=${'a'.repeat(70)}%20bbbbbbbbbb` });
    expect(r.stdout).toBe(`${'a'.repeat(70)} bbbb\x1b[4D\x1b[K\nbbbbbbbbbb\n\n`);
  });

  it('--nowordwrap writes no escapes into stdout at all', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', '--nowordwrap'], { input: words });
    expect(r.stdout).toBe(`${answer}\n\n`);
    expect(r.stdout).not.toContain('\x1b');
  });

  it('wraps the thinking block too', async ({ expect }) => {
    const r = await run(['run', 'qwen3:8b'], { input: words });
    expect(r.stdout).toMatch(/^Thinking\.\.\.\n/);
    const thinking = r.stdout.slice(0, r.stdout.indexOf('...done thinking.'));
    expect(thinking).toMatch(/\x1b\[\d+D\x1b\[K\n/);
  });
});

describe.concurrent('thinking models', () => {
  const thinkingRe = (model: string) =>
    new RegExp(
      `^Thinking\\.\\.\\.\\n[^\\n]+\\n\\.\\.\\.done thinking\\.\\n\\nfake answer from ${model.replace(/[.:]/g, '\\$&')}: hi\\n\\n$`,
    );

  for (const model of ['qwen3:8b', 'deepseek-r1:7b']) {
    it(`${model} prints the thinking block on stdout before the answer`, async ({ expect }) => {
      const r = await run(['run', model, ...NO_WRAP], { input: 'hi' });
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toMatch(thinkingRe(model));
    });
  }

  it('gpt-oss thinks too (signed-in cloud model)', async ({ expect }) => {
    const r = await run(['run', 'gpt-oss:120b-cloud', ...NO_WRAP], { input: 'hi', env: { FAKE_OLLAMA_SIGNED_IN: '1' } });
    expect(r.stdout).toMatch(thinkingRe('gpt-oss:120b-cloud'));
  });

  it('--hidethinking hides it', async ({ expect }) => {
    const r = await run(['run', 'qwen3:8b', '--hidethinking', ...NO_WRAP], { input: 'hi' });
    expect(r.stdout).toBe('fake answer from qwen3:8b: hi\n\n');
  });

  it('--think=false turns it off', async ({ expect }) => {
    const r = await run(['run', 'qwen3:8b', '--think=false', ...NO_WRAP], { input: 'hi' });
    expect(r.stdout).toBe('fake answer from qwen3:8b: hi\n\n');
  });

  it('--think=high on a thinking model thinks', async ({ expect }) => {
    const r = await run(['run', 'qwen3:8b', '--think=high', ...NO_WRAP], { input: 'hi' });
    expect(r.stdout).toMatch(thinkingRe('qwen3:8b'));
  });

  it('--think without "=" takes no value: the next word is part of the prompt (pflag NoOptDefVal)', async ({ expect }) => {
    const r = await run(['run', 'qwen3:8b', '--think', 'high', '--hidethinking', ...NO_WRAP], { input: 'hi' });
    expect(r.stdout).toBe('fake answer from qwen3:8b: hi high\n\n');
  });

  for (const flag of ['--think', '--think=true', '--think=low']) {
    it(`${flag} on a model that cannot think fails`, async ({ expect }) => {
      const r = await run(['run', 'llama3.2', flag, ...NO_WRAP], { input: 'hi' });
      expect(r.exitCode).toBe(1);
      expect(r.stdout).toBe('');
      expect(lastErrLine(r.stderr)).toBe('Error: 400 Bad Request: "llama3.2" does not support thinking');
    });
  }

  it('--think=false on a model that cannot think is fine', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', '--think=false', ...NO_WRAP], { input: 'hi' });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('fake answer from llama3.2: hi\n\n');
  });

  it('an invalid --think value fails before stdin is read', async ({ expect }) => {
    const r = await run(['run', 'qwen3:8b', '--think=banana'], { openStdin: true });
    expect(r.exitCode).toBe(1);
    expect(lastErrLine(r.stderr)).toMatch(/^Error: invalid value for --think: "banana"/);
  });

  it('before v0.9.0 --think and --hidethinking are unknown flags, and thinking is inline <think> text', async ({ expect }) => {
    const env = { FAKE_OLLAMA_VERSION: '0.8.0' };
    const a = await run(['run', 'qwen3:8b', '--think'], { input: 'hi', env });
    expect(a.exitCode).toBe(1);
    expect(a.stderr).toBe('Error: unknown flag: --think\n');
    const b = await run(['run', 'qwen3:8b', '--hidethinking'], { input: 'hi', env });
    expect(b.stderr).toBe('Error: unknown flag: --hidethinking\n');
    const c = await run(['run', 'qwen3:8b', ...NO_WRAP], { input: 'hi', env });
    expect(c.stdout).toMatch(/^<think>\n[^\n]+\n<\/think>\n\nfake answer from qwen3:8b: hi\n\n$/);
  });
});

describe.concurrent('answer and --verbose', () => {
  for (const model of ['llama3.2', 'qwen2.5-coder:7b', 'qwen3:8b']) {
    it(`the answer of ${model} ends with two newlines`, async ({ expect }) => {
      const r = await run(['run', model, ...NO_WRAP], { input: 'x' });
      expect(r.stdout.endsWith('x\n\n')).toBe(true);
    });
  }

  it('--verbose prints Go-formatted timing stats on stderr, values at column 23', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', '--verbose', ...NO_WRAP], { input: 'count these words please' });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('fake answer from llama3.2: count these words please\n\n');
    const stats = screen(r.stderr).filter((l) => /^[a-z ]+:\s/.test(l));
    const labels = stats.map((l) => l.slice(0, l.indexOf(':') + 1));
    expect(labels).toEqual([
      'total duration:',
      'load duration:',
      'prompt eval count:',
      'prompt eval duration:',
      'prompt eval rate:',
      'eval count:',
      'eval duration:',
      'eval rate:',
    ]);
    const goDuration = /^(\d+(\.\d+)?(ns|µs|ms)|(\d+h)?(\d+m)?\d+(\.\d+)?s)$/;
    for (const line of stats) {
      expect(line[21]).toBe(' ');
      expect(line[22]).not.toBe(' ');
      const value = line.slice(22);
      if (line.includes('duration')) expect(value).toMatch(goDuration);
      else if (line.includes('count')) expect(value).toMatch(/^\d+ token\(s\)$/);
      else expect(value).toMatch(/^\d+\.\d\d tokens\/s$/);
    }
  });

  it('without --verbose there are no stats', async ({ expect }) => {
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: 'hi' });
    expect(strip(r.stderr)).not.toContain('duration');
  });
});
