// Proves that test/fixtures/fake-ollama.mjs behaves like the real `ollama` CLI as described in
// /work/shared/ollama-cli.md, and that its test controls (FAKE_OLLAMA_* env, @fake: directives) work.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';

const FAKE = fileURLToPath(new URL('./fixtures/fake-ollama.mjs', import.meta.url));

const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;
const strip = (s: string): string => s.replace(ANSI, '');
const FRAME = /\x1b\[\?2026h\x1b\[\?25l\x1b\[1G[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] \x1b\[K\x1b\[\?25h\x1b\[\?2026l/g;
const CLEAR = '\x1b[?25l\x1b[2K\x1b[1G\x1b[?25h';
const CLOUD_MSG = 'You need to be signed in to Ollama to run Cloud models.\n';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const tmpDirs: string[] = [];
function tmpDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-ollama-test-'));
  tmpDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of tmpDirs) fs.rmSync(dir, { recursive: true, force: true });
});

interface FakeOptions {
  /** text written to stdin, then stdin is closed; without it stdin is 'ignore' unless openStdin */
  input?: string;
  /** leave stdin as an open pipe nobody closes */
  openStdin?: boolean;
  env?: Record<string, string>;
}

/** Spawn the fake with a clean environment (no inherited FAKE_OLLAMA_*). */
function spawnFake(args: string[], opts: FakeOptions = {}) {
  const env = { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), ...opts.env };
  const common = { env, extendEnv: false, reject: false, stripFinalNewline: false, timeout: 12_000 } as const;
  if (opts.input !== undefined) return execa(FAKE, args, { ...common, input: opts.input });
  return execa(FAKE, args, { ...common, stdin: opts.openStdin ? 'pipe' : 'ignore' });
}

async function run(args: string[], opts: FakeOptions = {}) {
  const r = await spawnFake(args, opts);
  return { ...r, stdout: String(r.stdout), stderr: String(r.stderr) };
}

interface TraceLine {
  event: string;
  pid: number;
  t: number;
  argv?: string[];
  model?: string | null;
  prompt?: string | null;
  code?: number | null;
  signal?: string | null;
}

function readTrace(dir: string): TraceLine[] {
  const file = path.join(dir, 'trace.jsonl');
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as TraceLine);
}

async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error('waitFor: timed out');
    await sleep(20);
  }
}

/**
 * Replays output on a tiny terminal: ESC[nD moves left, ESC[nG moves to column n, ESC[A moves up,
 * ESC[K clears to the end of the line, ESC[2K clears the line; other escapes are ignored.
 */
function renderTerminal(s: string): string[] {
  const lines: string[][] = [[]];
  let row = 0;
  let col = 0;
  for (const m of s.matchAll(/\x1b\[([?0-9;]*)([A-Za-z])|\n|[\s\S]/gu)) {
    const line = lines[row] ?? [];
    const param = m[1] ?? '';
    if (m[0] === '\n') {
      row++;
      if (lines.length <= row) lines.push([]);
      col = 0;
    } else if (m[2] === 'D') {
      col = Math.max(0, col - Number(param || '1'));
    } else if (m[2] === 'G') {
      col = Math.max(0, Number(param || '1') - 1);
    } else if (m[2] === 'A') {
      row = Math.max(0, row - Number(param || '1'));
    } else if (m[2] === 'K') {
      if (param === '2') line.length = 0;
      else line.length = Math.min(line.length, col);
    } else if (m[2] === undefined) {
      for (let i = line.length; i < col; i++) line[i] = ' ';
      line[col] = m[0];
      col++;
    }
  }
  return lines.map((l) => l.join(''));
}

/** What a terminal would show for stderr (spinner frames drawn and cleared). */
const screen = (stderr: string): string[] => renderTerminal(stderr);

function errorLines(stderr: string): string[] {
  return screen(stderr).filter((l) => l.includes('Error:'));
}

/** The last non-empty line a terminal would show for stderr. */
function lastErrLine(stderr: string): string {
  const lines = screen(stderr).filter((l) => l.trim() !== '');
  return lines[lines.length - 1] ?? '';
}

const NO_WRAP = ['--nowordwrap'];

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

// ---------------------------------------------------------------------------------------- failures

describe.concurrent('errors: one "Error:" line on stderr, exit 1', () => {
  const cases: Array<{ name: string; args: string[]; env?: Record<string, string>; input?: string; line: string }> = [
    {
      name: '--keepalive without a unit',
      args: ['run', 'llama3.2', '--keepalive', '10'],
      line: 'Error: time: missing unit in duration "10"',
    },
    {
      name: '--keepalive=10 (= form)',
      args: ['run', 'llama3.2', '--keepalive=10'],
      line: 'Error: time: missing unit in duration "10"',
    },
    {
      name: '--keepalive unknown unit',
      args: ['run', 'llama3.2', '--keepalive', '5x'],
      line: 'Error: time: unknown unit "x" in duration "5x"',
    },
    {
      name: '--keepalive garbage',
      args: ['run', 'llama3.2', '--keepalive', 'soon'],
      line: 'Error: time: invalid duration "soon"',
    },
    { name: '--system does not exist', args: ['run', 'llama3.2', '--system', 'be brief'], line: 'Error: unknown flag: --system' },
    {
      name: '--temperature does not exist',
      args: ['run', 'llama3.2', '--temperature=0.2'],
      line: 'Error: unknown flag: --temperature',
    },
    { name: 'unknown shorthand', args: ['run', 'llama3.2', '-x'], line: "Error: unknown shorthand flag: 'x' in -x" },
    { name: 'flag missing its value', args: ['run', 'llama3.2', '--format'], line: 'Error: flag needs an argument: --format' },
    {
      name: '--dimensions not an int',
      args: ['run', 'llama3.2', '--dimensions', 'abc'],
      line: 'Error: invalid argument "abc" for "--dimensions" flag: strconv.ParseInt: parsing "abc": invalid syntax',
    },
    { name: 'run without a model', args: ['run'], line: 'Error: requires at least 1 arg(s), only received 0' },
    {
      name: 'run without a model, flags only',
      args: ['run', '--nowordwrap'],
      line: 'Error: requires at least 1 arg(s), only received 0',
    },
    {
      name: 'server down (0.12.0 wording)',
      args: ['run', 'llama3.2'],
      env: { FAKE_OLLAMA_SERVER: 'down' },
      line: "Error: ollama server not responding - could not connect to ollama server, run 'ollama serve' to start it",
    },
    {
      name: 'server down (before 0.7.1)',
      args: ['run', 'llama3.2'],
      env: { FAKE_OLLAMA_SERVER: 'down', FAKE_OLLAMA_VERSION: '0.7.0' },
      line: 'Error: could not connect to ollama app, is it running?',
    },
    {
      name: 'server down (0.16.0 and later)',
      args: ['run', 'llama3.2'],
      env: { FAKE_OLLAMA_SERVER: 'down', FAKE_OLLAMA_VERSION: '0.16.0' },
      line: "Error: could not connect to ollama server, run 'ollama serve' to start it",
    },
    {
      name: 'server busy',
      args: ['run', 'llama3.2'],
      input: 'hi',
      env: { FAKE_OLLAMA_SERVER: 'busy' },
      line: 'Error: 503 Service Unavailable: server busy, please try again.  maximum pending requests exceeded',
    },
    {
      name: 'model not installed: auto-pull fails',
      args: ['run', 'no-such-model'],
      input: 'hi',
      line: 'Error: pull model manifest: file does not exist',
    },
    {
      name: 'invalid --format',
      args: ['run', 'llama3.2', '--format', 'yaml'],
      input: 'hi',
      line: "Error: json: error calling MarshalJSON for type json.RawMessage: invalid character 'y' looking for beginning of value",
    },
  ];
  for (const c of cases) {
    it(c.name, async ({ expect }) => {
      const r = await run(c.args, { input: c.input ?? '', env: c.env });
      expect(r.exitCode).toBe(1);
      expect(lastErrLine(r.stderr)).toBe(c.line);
      expect(errorLines(r.stderr)).toEqual([c.line]);
      expect(r.stderr.endsWith('\n')).toBe(true);
      expect(r.stdout).toBe('');
    });
  }

  it('flag and server errors happen before stdin is read (no hang with an open pipe)', async ({ expect }) => {
    for (const [args, env] of [
      [['run', 'llama3.2', '--keepalive', '10'], {}],
      [['run', 'llama3.2', '--bogus'], {}],
      [['run', 'llama3.2'], { FAKE_OLLAMA_SERVER: 'down' }],
    ] as const) {
      const r = await run([...args], { openStdin: true, env: { ...env } });
      expect(r.exitCode).toBe(1);
    }
  });

  it('the failed auto-pull shows "pulling manifest" progress on stderr first', async ({ expect }) => {
    const r = await run(['run', 'no-such-model'], { input: 'hi' });
    expect(r.stderr).toContain('pulling manifest');
    expect(r.stderr).toContain('\x1b[?2026h');
  });

  it('valid --keepalive values are accepted', async ({ expect }) => {
    for (const v of ['5m', '1h30m', '0', '-1m', '1.5s', '300ms']) {
      const r = await run(['run', 'llama3.2', '--keepalive', v, ...NO_WRAP], { input: 'hi' });
      expect(r.exitCode, v).toBe(0);
    }
  });

  it('flags may come anywhere, in both --flag=value and --flag value forms', async ({ expect }) => {
    const r = await run(
      ['run', '--keepalive=5m', 'llama3.2', 'a', '--format', 'json', 'b', '--nowordwrap', '--verbose=false', 'c'],
      {
        input: '',
      },
    );
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('{"answer":"fake answer from llama3.2: a b c"}\n\n');
  });
});

describe.concurrent('cloud models', () => {
  for (const model of ['gpt-oss:120b-cloud', 'qwen3-coder:480b-cloud', 'x:cloud']) {
    it(`${model} without sign-in prints the sign-in message on stdout and exits 0`, async ({ expect }) => {
      const r = await run(['run', model, ...NO_WRAP], { input: 'hi' });
      expect(r.exitCode).toBe(0);
      expect(r.stdout.startsWith(CLOUD_MSG)).toBe(true);
      expect(r.stdout).not.toContain('fake answer');
      expect(errorLines(r.stderr)).toEqual([]);
    });
  }

  it('with FAKE_OLLAMA_SIGNED_IN=1 the cloud model answers', async ({ expect }) => {
    const r = await run(['run', 'qwen3-coder:480b-cloud', ...NO_WRAP], { input: 'hi', env: { FAKE_OLLAMA_SIGNED_IN: '1' } });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('fake answer from qwen3-coder:480b-cloud: hi\n\n');
  });
});

describe.concurrent('model names and installation', () => {
  for (const name of [
    'llama3.2',
    'llama3.2:latest',
    'library/llama3.2',
    'library/llama3.2:latest',
    'registry.ollama.ai/library/llama3.2',
    'LLAMA3.2',
  ]) {
    it(`${name} is the installed llama3.2:latest (no pull)`, async ({ expect }) => {
      const r = await run(['run', name, ...NO_WRAP], { input: 'hi' });
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toBe(`fake answer from ${name}: hi\n\n`);
      expect(r.stderr).not.toContain('pulling');
    });
  }

  it('FAKE_OLLAMA_MODELS decides what is installed', async ({ expect }) => {
    const env = { FAKE_OLLAMA_MODELS: 'qwen2.5-coder:7b,library/mistral' };
    expect((await run(['run', 'mistral', ...NO_WRAP], { input: 'hi', env })).exitCode).toBe(0);
    const r = await run(['run', 'llama3.2', ...NO_WRAP], { input: 'hi', env });
    expect(r.exitCode).toBe(1);
    expect(lastErrLine(r.stderr)).toBe('Error: pull model manifest: file does not exist');
  });

  it('a tag other than the installed one is not installed', async ({ expect }) => {
    const r = await run(['run', 'qwen3', ...NO_WRAP], { input: 'hi' });
    expect(lastErrLine(r.stderr)).toBe('Error: pull model manifest: file does not exist');
  });

  it('FAKE_OLLAMA_PULLABLE models are pulled (progress on stderr), run, and not kept', async ({ expect }) => {
    const env = { FAKE_OLLAMA_PULLABLE: 'mistral:7b' };
    const r = await run(['run', 'mistral:7b', ...NO_WRAP], { input: 'hi', env });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('fake answer from mistral:7b: hi\n\n');
    const err = strip(r.stderr);
    for (const s of ['pulling manifest', 'verifying sha256 digest', 'writing manifest', 'success']) expect(err).toContain(s);
    expect((await run(['list'], { env })).stdout).not.toContain('mistral');
    expect(strip((await run(['run', 'mistral:7b', ...NO_WRAP], { input: 'hi', env })).stderr)).toContain('pulling manifest');
  });
});

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

describe.concurrent('real-world failures (ollama-cli.md "Errors and exit codes")', () => {
  const BUSY = 'Error: 503 Service Unavailable: server busy, please try again.  maximum pending requests exceeded';
  const cases: Array<{ name: string; args?: string[]; env?: Record<string, string>; input: string; lines: string[] }> = [
    {
      name: 'remote host: no route to host',
      env: { OLLAMA_HOST: 'http://10.0.0.5:11434', FAKE_OLLAMA_SERVER: 'no_route' },
      input: 'hi',
      lines: ['Error: Head "http://10.0.0.5:11434/": dial tcp 10.0.0.5:11434: connect: no route to host'],
    },
    {
      name: 'remote host: no such host (bare host name gets http and the default port)',
      env: { OLLAMA_HOST: 'gpu-box', FAKE_OLLAMA_SERVER: 'no_such_host' },
      input: 'hi',
      lines: ['Error: Head "http://gpu-box:11434/": dial tcp: lookup gpu-box on 127.0.0.53:53: no such host'],
    },
    {
      name: 'remote host: i/o timeout',
      env: { OLLAMA_HOST: '10.0.0.5:11434', FAKE_OLLAMA_SERVER: 'io_timeout' },
      input: 'hi',
      lines: ['Error: Head "http://10.0.0.5:11434/": dial tcp 10.0.0.5:11434: i/o timeout'],
    },
    {
      name: 'remote host: connection timed out',
      env: { OLLAMA_HOST: 'http://10.0.0.5:11434', FAKE_OLLAMA_SERVER: 'connect_timeout' },
      input: 'hi',
      lines: ['Error: Head "http://10.0.0.5:11434/": dial tcp 10.0.0.5:11434: connect: connection timed out'],
    },
    {
      name: 'remote host: network is unreachable (directive)',
      env: { OLLAMA_HOST: 'http://10.0.0.5:11434' },
      input: 'hi @fake:error=net_unreachable',
      lines: ['Error: Head "http://10.0.0.5:11434/": dial tcp 10.0.0.5:11434: connect: network is unreachable'],
    },
    { name: 'server busy (directive)', input: 'hi @fake:error=busy', lines: [BUSY] },
    {
      name: 'registry unreachable during the auto-pull (DNS)',
      args: ['run', 'mistral'],
      env: { FAKE_OLLAMA_REGISTRY: 'offline' },
      input: 'hi',
      lines: [
        'Error: pull model manifest: Get "https://registry.ollama.ai/v2/library/mistral/manifests/latest": dial tcp: lookup registry.ollama.ai on 127.0.0.53:53: no such host',
      ],
    },
    {
      name: 'registry refuses the connection, namespaced model',
      args: ['run', 'team/coder:7b'],
      env: { FAKE_OLLAMA_REGISTRY: 'refused', FAKE_OLLAMA_PULLABLE: 'team/coder:7b' },
      input: 'hi',
      lines: [
        'Error: pull model manifest: Get "https://registry.ollama.ai/v2/team/coder/manifests/7b": dial tcp 104.21.75.227:443: connect: connection refused',
      ],
    },
    {
      name: 'cloud: subscription required',
      args: ['run', 'gpt-oss:120b-cloud'],
      env: { FAKE_OLLAMA_SIGNED_IN: '1', FAKE_OLLAMA_CLOUD: 'subscription' },
      input: 'hi',
      lines: ['Error: 403 Forbidden: this model requires a subscription, upgrade for access: https://ollama.com/upgrade'],
    },
    {
      name: 'cloud: disabled',
      args: ['run', 'gpt-oss:120b-cloud'],
      env: { FAKE_OLLAMA_CLOUD: 'disabled' },
      input: 'hi',
      lines: ['Error: 403 Forbidden: ollama cloud is disabled: remote model is unavailable'],
    },
    {
      name: 'cloud: weekly usage limit',
      args: ['run', 'gpt-oss:120b-cloud'],
      env: { FAKE_OLLAMA_SIGNED_IN: '1', FAKE_OLLAMA_CLOUD: 'weekly_limit' },
      input: 'hi',
      lines: ["Error: 429 Too Many Requests: you've reached your weekly usage limit, please upgrade to continue"],
    },
    {
      name: 'cloud: hourly usage limit (directive)',
      input: 'hi @fake:error=usage_limit',
      lines: ["Error: 429 Too Many Requests: you've reached your hourly usage limit, please upgrade to continue"],
    },
    {
      name: 'prompt longer than the context',
      input: 'hi @fake:error=context_length',
      lines: [
        'Error: 400 Bad Request: the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length',
      ],
    },
    {
      name: 'prompt longer than the context (MLX runner)',
      input: 'hi @fake:error=context_length_mlx',
      lines: [
        "Error: 500 Internal Server Error: input length (19 tokens) exceeds the model's maximum context length (4096 tokens)",
      ],
    },
    {
      name: 'model cannot generate',
      input: 'hi @fake:error=no_generate',
      lines: ['Error: 400 Bad Request: "llama3.2" does not support generate'],
    },
    {
      name: 'image generation model',
      args: ['run', 'x/flux2-klein'],
      env: { FAKE_OLLAMA_MODELS: 'x/flux2-klein:latest' },
      input: 'a cat',
      lines: ['Error: image generation models are not currently supported'],
    },
    {
      name: 'runner terminated',
      input: 'hi @fake:error=runner_terminated',
      lines: ['Error: 500 Internal Server Error: llama-server process has terminated: exit status 2'],
    },
    {
      name: 'runner stopped',
      input: 'hi @fake:error=runner_stopped',
      lines: [
        'Error: 500 Internal Server Error: model runner has unexpectedly stopped, this may be due to resource limitations or an internal error, check ollama server logs for details',
      ],
    },
    {
      name: 'out of memory while loading',
      input: 'hi @fake:error=oom',
      lines: [
        'Error: 500 Internal Server Error: llama-server reported out-of-memory during startup: cudaMalloc failed: out of memory',
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, async ({ expect }) => {
      const r = await run(c.args ?? ['run', 'llama3.2', ...NO_WRAP], { input: c.input, env: c.env });
      expect(r.exitCode).toBe(1);
      expect(r.stdout).toBe('');
      expect(errorLines(r.stderr)).toEqual(c.lines);
      expect(lastErrLine(r.stderr)).toBe(c.lines.at(-1));
    });
  }

  it('a missing model whose :cloud variant exists: a multi-line error with the hint', async ({ expect }) => {
    const r = await run(['run', 'glm-5'], { input: 'hi', env: { FAKE_OLLAMA_CLOUD_AVAILABLE: 'glm-5' } });
    expect(r.exitCode).toBe(1);
    expect(
      r.stderr.endsWith(
        'Error: pull model manifest: file does not exist\n\n"glm-5:cloud" is available as a cloud model. Try:\n  ollama run glm-5:cloud\n',
      ),
    ).toBe(true);
  });

  it('an embedding model answers with a JSON vector on stdout and exit 0', async ({ expect }) => {
    const env = { FAKE_OLLAMA_MODELS: 'nomic-embed-text:latest' };
    const r = await run(['run', 'nomic-embed-text', ...NO_WRAP], { input: 'hello', env });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^\[-?0\.\d+(,-?0\.\d+)*\]\n$/);
    expect(JSON.parse(r.stdout)).toHaveLength(768);
    const small = await run(['run', 'nomic-embed-text', '--dimensions', '4'], { input: 'hello', env });
    expect(JSON.parse(small.stdout)).toHaveLength(4);
  });

  it('sign-in wording: "If your browser did not open" from v0.16, "To sign in" before', async ({ expect }) => {
    const now = await run(['run', 'gpt-oss:120b-cloud', ...NO_WRAP], { input: 'hi', env: { FAKE_OLLAMA_VERSION: '0.33.0' } });
    expect(now.exitCode).toBe(0);
    expect(now.stdout).toMatch(
      /^You need to be signed in to Ollama to run Cloud models\.\n\nIf your browser did not open, navigate to:\n {4}https:\/\/ollama\.com\/connect\?\S+\n\n$/,
    );
    const old = await run(['run', 'gpt-oss:120b-cloud', ...NO_WRAP], { input: 'hi', env: { FAKE_OLLAMA_VERSION: '0.14.0' } });
    expect(old.stdout).toMatch(
      /^You need to be signed in to Ollama to run Cloud models\.\n\nTo sign in, navigate to:\n {4}\S+\n\n$/,
    );
  });

  it('--version: the server version first, then the client version when it differs', async ({ expect }) => {
    const env = { FAKE_OLLAMA_VERSION: '0.33.0', FAKE_OLLAMA_CLIENT_VERSION: '0.13.1' };
    expect((await run(['--version'], { env })).stdout).toBe('ollama version is 0.33.0\nWarning: client version is 0.13.1\n');
    const down = await run(['--version'], { env: { ...env, FAKE_OLLAMA_SERVER: 'down' } });
    expect(down.exitCode).toBe(0);
    expect(down.stdout).toBe('Warning: could not connect to a running Ollama instance\nWarning: client version is 0.13.1\n');
  });

  it('list: registry hosts with ports, hf.co names and a leading _, case kept, cloud size "-", padded cells', async ({
    expect,
  }) => {
    const env = { FAKE_OLLAMA_MODELS: 'localhost:5000/team/Model:v1,hf.co/Org/Repo:Q4_K_M,_private,gpt-oss:120b-cloud' };
    const r = await run(['list'], { env });
    const lines = r.stdout.split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines[0]).toBe(`${'NAME'.padEnd(32)}${'ID'.padEnd(16)}${'SIZE'.padEnd(10)}${'MODIFIED'.padEnd(18)} `);
    expect(lines.slice(1, -1).map((l) => l.split(/\s+/)[0])).toEqual([
      'localhost:5000/team/Model:v1',
      'hf.co/Org/Repo:Q4_K_M',
      '_private:latest',
      'gpt-oss:120b-cloud',
    ]);
    // each column is as wide as its longest cell plus 4 spaces, trailing spaces included
    for (const row of lines.slice(1, -1)) expect(row).toHaveLength(lines[1]!.length);
    expect(lines[1]).toMatch(/^localhost:5000\/team\/Model:v1 {4}[0-9a-f]{12} {4}\S+ GB {4}2 weeks ago {4}\s+$/);
    expect(lines[4]).toMatch(/^gpt-oss:120b-cloud {14}[0-9a-f]{12} {4}- {9}About a minute ago {4}$/);
  });
});

describe.concurrent('files named in the prompt (multimodal models)', () => {
  const env = { FAKE_OLLAMA_MODELS: 'llava:7b,llama3.2' };
  const PNG = Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), Buffer.alloc(64, 1)]);

  it('a vision model reads an image the prompt names: "Added image" on stderr, the path leaves the prompt', async ({
    expect,
  }) => {
    const dir = tmpDir();
    const file = path.join(dir, 'cat.png');
    fs.writeFileSync(file, PNG);
    const r = await run(['run', 'llava:7b', ...NO_WRAP], { input: `what is in ${file} ?`, env });
    expect(r.exitCode).toBe(0);
    expect(strip(r.stderr)).toContain(`Added image '${file}'\n`);
    expect(r.stdout).toBe('fake answer from llava:7b: what is in  ?\n\n');
    const wav = path.join(dir, 'note.wav');
    fs.writeFileSync(wav, Buffer.concat([Buffer.from('RIFF\0\0\0\0WAVEfmt ', 'latin1'), Buffer.alloc(32, 1)]));
    expect(strip((await run(['run', 'llava:7b'], { input: `hear ${wav}`, env })).stderr)).toContain(`Added audio '${wav}'\n`);
  });

  it('a text model does not read it; a path that does not exist is left alone', async ({ expect }) => {
    const dir = tmpDir();
    const file = path.join(dir, 'cat.png');
    fs.writeFileSync(file, 'not an image');
    const text = await run(['run', 'llama3.2', ...NO_WRAP], { input: `see ${file}`, env });
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toBe(`fake answer from llama3.2: see ${file}\n\n`);
    const missing = await run(['run', 'llava:7b', ...NO_WRAP], { input: `see ${dir}/none.jpg`, env });
    expect(missing.exitCode).toBe(0);
    expect(missing.stdout).toBe(`fake answer from llava:7b: see ${dir}/none.jpg\n\n`);
  });

  it('a file that is not an image fails with "invalid file type", after a "Couldn\'t process file" line', async ({ expect }) => {
    const dir = tmpDir();
    const file = path.join(dir, 'notes.jpg');
    fs.writeFileSync(file, 'just text\n');
    const r = await run(['run', 'llava:7b', ...NO_WRAP], { input: `look at ${file}`, env });
    expect(r.exitCode).toBe(1);
    expect(r.stdout).toBe('');
    expect(strip(r.stderr)).toContain('Couldn\'t process file: "invalid file type: text/plain; charset=utf-8"\n');
    expect(lastErrLine(r.stderr)).toBe('Error: invalid file type: text/plain; charset=utf-8');
  });

  it("a directory named like an image fails with Go's read error", async ({ expect }) => {
    const dir = tmpDir();
    const file = path.join(dir, 'album.png');
    fs.mkdirSync(file);
    const r = await run(['run', 'llava:7b'], { input: `open ${file}`, env });
    expect(r.exitCode).toBe(1);
    expect(lastErrLine(r.stderr)).toBe(`Error: read ${file}: is a directory`);
  });

  // root opens any file, so EACCES cannot be produced here as root
  it.skipIf(process.getuid?.() === 0)('an unreadable file fails with "permission denied"', async ({ expect }) => {
    const dir = tmpDir();
    const file = path.join(dir, 'secret.png');
    fs.writeFileSync(file, PNG);
    fs.chmodSync(file, 0o000);
    const r = await run(['run', 'llava:7b'], { input: `open ${file}`, env });
    expect(r.exitCode).toBe(1);
    expect(lastErrLine(r.stderr)).toBe(`Error: open ${file}: permission denied`);
  });
});
