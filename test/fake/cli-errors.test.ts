// test/fixtures/fake-ollama.mjs alone (per-process mode) behaves like the real `ollama` CLI as the
// shared notes (ollama-cli.md) describe it, and its test controls (FAKE_OLLAMA_* env, @fake: directives) work.
// This file: the error lines and exit codes.
import { describe, it } from 'vitest';
import { run, errorLines, lastErrLine, NO_WRAP } from './cli-harness.js';

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
    {
      name: '--keepalive with a non-ASCII unit: Go quotes its bytes',
      args: ['run', 'llama3.2', '--keepalive', '5é'],
      line: 'Error: time: unknown unit "\\xc3\\xa9" in duration "5\\xc3\\xa9"',
    },
    {
      name: '--keepalive with a quote and a tab: Go escapes the one, quotes the other as a byte',
      args: ['run', 'llama3.2', '--keepalive', '5"\t'],
      line: 'Error: time: unknown unit "\\"\\x09" in duration "5\\"\\x09"',
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
