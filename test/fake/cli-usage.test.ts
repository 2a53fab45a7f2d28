// The fake's --verbose stats, context window, `ps` and `show`, checked against what the real CLI
// prints (api.Metrics.Summary, cmd.ListRunningHandler, cmd.showInfo) and read by the server's parsers.
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { parsePsContext, parseShowContext } from '../../src/ollama/context-window.js';
import { parseUsage } from '../../src/ollama/verbose-stats.js';
import { tempDir } from '../helpers/temp-dir.js';

const FAKE = path.resolve(__dirname, '../fixtures/fake-ollama.mjs');

async function fake(args: string[], env: Record<string, string> = {}, input?: string) {
  const r = await execa(FAKE, args, {
    env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), ...env },
    extendEnv: false,
    reject: false,
    stripFinalNewline: false,
    timeout: 12_000,
    ...(input !== undefined ? { input } : { stdin: 'ignore' as const }),
  });
  return { stdout: String(r.stdout), stderr: String(r.stderr), exitCode: r.exitCode };
}

const RUN = ['run', 'llama3.2', '--nowordwrap', '--verbose'];
/** The stats lines as a terminal shows them: what follows the last `ESC[1G` (column 1) of a line, escapes stripped. */
const statsOf = (stderr: string) =>
  stderr
    .split('\n')
    .map((line) =>
      line
        .split('\u001b[1G')
        .pop()!
        .replace(/\u001b\[[0-9;?]*[A-Za-z]/g, ''),
    )
    .filter((l) => /^[a-z ]+: {1,}\S/.test(l));

describe.concurrent('fake --verbose stats', () => {
  it('prints the knobs exactly as Metrics.Summary would, µs for tiny durations, after the answer', async ({ expect }) => {
    const r = await fake(
      RUN,
      {
        FAKE_OLLAMA_PROMPT_TOKENS: '26',
        FAKE_OLLAMA_EVAL_TOKENS: '291',
        FAKE_OLLAMA_LOAD_MS: '0.054',
        FAKE_OLLAMA_PROMPT_EVAL_MS: '812.3',
        FAKE_OLLAMA_EVAL_MS: '2353.478',
        FAKE_OLLAMA_TOTAL_MS: '62500',
      },
      'hi',
    );
    expect(r.stdout).toBe('fake answer from llama3.2: hi\n\n');
    expect(statsOf(r.stderr)).toEqual([
      'total duration:       1m2.5s',
      'load duration:        54µs',
      'prompt eval count:    26 token(s)',
      'prompt eval duration: 812.3ms',
      'prompt eval rate:     32.01 tokens/s',
      'eval count:           291 token(s)',
      'eval duration:        2.353478s',
      'eval rate:            123.65 tokens/s',
    ]);
    // The spinner's deferred StopAndClear follows the stats.
    expect(r.stderr.endsWith('tokens/s\n\u001b[?25l\u001b[?25h')).toBe(true);
    expect(parseUsage(r.stderr)).toEqual({
      prompt_tokens: 26,
      output_tokens: 291,
      tokens_per_second: 123.65,
      prompt_tokens_per_second: 32.01,
      load_ms: 0.054,
      total_ms: 62500,
    });
  });

  it('omits the lines whose value is zero, each on its own', async ({ expect }) => {
    const r = await fake(RUN, { FAKE_OLLAMA_EVAL_TOKENS: '0', FAKE_OLLAMA_EVAL_MS: '0', FAKE_OLLAMA_LOAD_MS: '0' }, 'hi');
    const labels = statsOf(r.stderr).map((l) => l.slice(0, l.indexOf(':')));
    expect(labels).toEqual(['total duration', 'prompt eval count', 'prompt eval duration', 'prompt eval rate']);
    expect(parseUsage(r.stderr)).toMatchObject({ output_tokens: 0, tokens_per_second: null, load_ms: 0 });
  });

  it('cuts the prompt count to the context as the server does: num_ctx, OLLAMA_CONTEXT_LENGTH, version defaults', async ({
    expect,
  }) => {
    const count = async (env: Record<string, string>) =>
      parseUsage((await fake(RUN, env, 'x @fake:prompt_tokens=50000')).stderr).prompt_tokens;
    expect(await count({})).toBe(4096); // v0.12 default, runners keep exactly num_ctx
    expect(await count({ FAKE_OLLAMA_VERSION: '0.6.0' })).toBe(2048);
    expect(await count({ FAKE_OLLAMA_CONTEXT_LENGTH: '8192' })).toBe(8192);
    expect(await count({ FAKE_OLLAMA_NUM_CTX: 'llama3.2=16384', FAKE_OLLAMA_CONTEXT_LENGTH: '8192' })).toBe(16384);
    expect(await count({ FAKE_OLLAMA_VERSION: '0.31.0' })).toBe(2051); // llama-server keeps room to generate
    const huge = await fake(RUN, { FAKE_OLLAMA_NUM_CTX: 'llama3.2=999999' }, 'x @fake:prompt_tokens=500000');
    expect(parseUsage(huge.stderr).prompt_tokens).toBe(131072); // num_ctx capped to the model's maximum
  });
});

describe('fake ps and show', () => {
  it('ps lists a model loaded by a run for its keep-alive, with CONTEXT from v0.10', async () => {
    const dir = tempDir('fake-ps-');
    const env = { FAKE_OLLAMA_STATE_DIR: dir, FAKE_OLLAMA_NUM_CTX: 'qwen3:8b=8192' };
    expect((await fake(['ps'], env)).stdout).toBe('NAME    ID    SIZE    PROCESSOR    CONTEXT    UNTIL \n');
    await fake(['run', 'qwen3:8b', '--nowordwrap'], env, 'hi');
    await fake(['run', 'llama3.2', '--nowordwrap', '--keepalive=0'], env, 'hi'); // unloaded at once
    const ps = (await fake(['ps'], env)).stdout;
    expect(ps.split('\n')[1]).toMatch(/^qwen3:8b {4,}[0-9a-f]{12} {4,}5\.2 GB {4,}100% CPU {4,}8192 {4,}5 minutes from now {4}$/);
    expect(parsePsContext(ps, 'qwen3:8b')).toEqual({ hasColumn: true, context: 8192 });
    expect(parsePsContext(ps, 'llama3.2')).toEqual({ hasColumn: true, context: null });
    const old = (await fake(['ps'], { ...env, FAKE_OLLAMA_VERSION: '0.9.0' })).stdout;
    expect(parsePsContext(old, 'qwen3:8b')).toEqual({ hasColumn: false, context: null });
  });

  it("show prints the model's context length and a num_ctx parameter in a Parameters section", async () => {
    const plain = (await fake(['show', 'qwen3:8b'])).stdout;
    expect(parseShowContext(plain)).toEqual({ modelMax: 40960, numCtx: null });
    const withParam = (await fake(['show', 'qwen3:8b'], { FAKE_OLLAMA_NUM_CTX: 'qwen3:8b=8192' })).stdout;
    expect(withParam).toContain('  Parameters\n    num_ctx    8192    \n\n');
    expect(parseShowContext(withParam)).toEqual({ modelMax: 40960, numCtx: 8192 });
  });
});
