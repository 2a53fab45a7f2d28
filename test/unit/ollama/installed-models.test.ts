import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { lastErrorLine } from '../../../src/ollama/cli-errors.js';
import { InstalledModels, MIN_REFRESH_INTERVAL_MS, parseModelList } from '../../../src/ollama/installed-models.js';
import { tempDir } from '../../helpers/temp-dir.js';

const FAKE_OLLAMA = path.resolve(__dirname, '../../fixtures/fake-ollama.mjs');

describe('parseModelList', () => {
  it('reads the first column of the table the CLI prints, header first, rows padded with trailing spaces', () => {
    const table = [
      'NAME                ID              SIZE      MODIFIED           ',
      'llama3.2:latest     17177962e713    2.0 GB    2 weeks ago           ',
      'qwen2.5-coder:7b    49b7701263a8    4.7 GB    3 days ago            ',
      'library/mistral:latest    aaaaaaaaaaaa    4.1 GB    About a minute ago    ',
      'hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M    bbbbbbbbbbbb    0.8 GB    1 hour ago    ',
      '',
    ].join('\n');
    expect(parseModelList(table)).toEqual([
      'llama3.2:latest',
      'qwen2.5-coder:7b',
      'library/mistral:latest',
      'hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M',
    ]);
  });

  it('returns nothing for an empty table, an empty output, or lines that are not model names', () => {
    expect(parseModelList('NAME    ID    SIZE    MODIFIED \n')).toEqual([]);
    expect(parseModelList('')).toEqual([]);
    expect(parseModelList('NAME ID SIZE MODIFIED\r\nllama3.2:latest  x  1 GB  now\r\n')).toEqual(['llama3.2:latest']);
    expect(parseModelList('Warning: client version is 0.12.0\nNAME  ID\n-rf  x\nok:1 y\n')).toEqual(['ok:1']);
  });
});

describe("parseModelList on the fake CLI's real table", () => {
  it('keeps names with a registry host and port, hf.co names, a leading _, and cloud models', async () => {
    const models = new InstalledModels({
      bin: FAKE_OLLAMA,
      env: {
        PATH: process.env.PATH,
        FAKE_OLLAMA_MODELS: 'localhost:5000/team/model:v1,hf.co/org/repo:Q4_K_M,_private,gpt-oss:120b-cloud,llama3.2',
      },
      ttlMs: 0,
    });
    const list = await models.list();
    expect(list.ok && list.models).toEqual([
      'localhost:5000/team/model:v1',
      'hf.co/org/repo:q4_k_m',
      '_private:latest',
      'gpt-oss:120b-cloud',
      'llama3.2:latest',
    ]);
    expect(await models.check('localhost:5000/team/model:v1')).toEqual({ kind: 'installed' });
    expect(await models.check('_private')).toEqual({ kind: 'installed' });
    expect(await models.check('hf.co/org/repo:Q4_K_M')).toEqual({ kind: 'installed' });
  });

  it('a remote OLLAMA_HOST that cannot be reached is "unreachable", not an unknown error', async () => {
    const models = new InstalledModels({
      bin: FAKE_OLLAMA,
      env: { PATH: process.env.PATH, OLLAMA_HOST: 'gpu-box', FAKE_OLLAMA_SERVER: 'no_such_host' },
      ttlMs: 0,
    });
    const list = await models.list();
    expect(list).toMatchObject({ ok: false, cause: 'unreachable' });
    expect(!list.ok && list.reason).toBe('Head "http://gpu-box:11434/": dial tcp: lookup gpu-box on 127.0.0.53:53: no such host');
  });
});

describe('lastErrorLine', () => {
  it('drops the spinner escapes and the Error: prefix (the spinner leaves no newline before the error)', () => {
    const stderr =
      "\u001b[?2026h\u001b[?25l\u001b[1G⠋ \u001b[K\u001b[?25h\u001b[?2026l\u001b[?25l\u001b[2K\u001b[1G\u001b[?25hError: could not connect to ollama server, run 'ollama serve' to start it\n";
    expect(lastErrorLine(stderr)).toBe("could not connect to ollama server, run 'ollama serve' to start it");
    expect(lastErrorLine('  \n')).toBeNull();
  });
});

describe('InstalledModels against the fake CLI', () => {
  let traceDir: string;
  let env: Record<string, string | undefined>;
  let now: number;
  const clock = () => now;
  const listSpawns = () => {
    const file = path.join(traceDir, 'trace.jsonl');
    if (!existsSync(file)) return 0;
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as { event: string; argv?: string[] })
      .filter((event) => event.event === 'start' && event.argv?.[0] === 'list').length;
  };
  const make = (options: { ttlMs?: number; bin?: string; timeoutMs?: number } = {}) =>
    new InstalledModels({
      bin: options.bin ?? FAKE_OLLAMA,
      env,
      ttlMs: options.ttlMs ?? 60_000,
      clock,
      timeoutMs: options.timeoutMs ?? 10_000,
    });

  beforeEach(() => {
    traceDir = tempDir('installed-models-');
    env = { PATH: process.env.PATH, HOME: process.env.HOME, FAKE_OLLAMA_TRACE_DIR: traceDir };
    now = 1_000_000;
  });

  it('lists canonical names, and answers from the cache while it is fresh (no new `ollama list`)', async () => {
    const models = make();
    const first = await models.list();
    expect(first).toMatchObject({ ok: true, models: ['llama3.2:latest', 'qwen2.5-coder:7b', 'qwen3:8b', 'deepseek-r1:7b'] });
    now += 30_000;
    expect(await models.check('llama3.2')).toEqual({ kind: 'installed' });
    expect(await models.check('library/llama3.2:latest')).toEqual({ kind: 'installed' });
    expect(await models.check('Qwen2.5-Coder:7b')).toEqual({ kind: 'installed' });
    expect(listSpawns()).toBe(1);
    now += 30_001; // past the TTL
    expect(await models.check('qwen3:8b')).toEqual({ kind: 'installed' });
    expect(listSpawns()).toBe(2);
  });

  it('shares one in-flight `ollama list` between concurrent callers', async () => {
    const models = make();
    const results = await Promise.all([
      models.check('llama3.2'),
      models.check('qwen3:8b'),
      models.list(),
      models.check('deepseek-r1:7b'),
    ]);
    expect(results.map((r) => ('kind' in r ? r.kind : r.ok))).toEqual(['installed', 'installed', true, 'installed']);
    expect(listSpawns()).toBe(1);
  });

  it('on a miss against the cache asks again once, so a model pulled since is found', async () => {
    env.FAKE_OLLAMA_MODELS = 'llama3.2:latest';
    const models = make();
    await models.list();
    env.FAKE_OLLAMA_MODELS = 'llama3.2:latest,mistral:latest'; // someone ran `ollama pull mistral`
    now += 5_000;
    expect(await models.check('mistral')).toEqual({ kind: 'installed' });
    expect(listSpawns()).toBe(2);
  });

  it('answers missing with the installed models, and does not ask again more than every ~2 s for repeated misses', async () => {
    env.FAKE_OLLAMA_MODELS = 'llama3.2:latest,qwen3:8b';
    const models = make();
    await models.list();
    now += 5_000;
    expect(await models.check('mistral')).toEqual({ kind: 'missing', installed: ['llama3.2:latest', 'qwen3:8b'] });
    expect(listSpawns()).toBe(2);
    for (let i = 0; i < 5; i += 1) {
      now += 100;
      expect((await models.check('mistral')).kind).toBe('missing');
    }
    expect(listSpawns()).toBe(2);
    now += MIN_REFRESH_INTERVAL_MS;
    expect((await models.check('mistral')).kind).toBe('missing');
    expect(listSpawns()).toBe(3);
  });

  it('a miss on a list it just fetched is answered at once (no second spawn)', async () => {
    const models = make();
    expect(await models.check('nope:1b')).toMatchObject({ kind: 'missing' });
    expect(listSpawns()).toBe(1);
  });

  it('with ttlMs 0 every call asks the CLI', async () => {
    const models = make({ ttlMs: 0 });
    await models.check('llama3.2');
    await models.check('llama3.2');
    expect(listSpawns()).toBe(2);
  });

  it('server down: unknown, with the connect error, remembered only briefly', async () => {
    env.FAKE_OLLAMA_SERVER = 'down';
    const models = make();
    const check = await models.check('llama3.2');
    expect(check).toMatchObject({ kind: 'unknown', cause: 'unreachable' });
    expect(check.kind === 'unknown' && check.reason).toMatch(/could not connect to ollama/);
    expect(await models.check('llama3.2')).toMatchObject({ kind: 'unknown' });
    expect(listSpawns()).toBe(1);
    delete env.FAKE_OLLAMA_SERVER; // the server came back
    now += MIN_REFRESH_INTERVAL_MS;
    expect(await models.check('llama3.2')).toEqual({ kind: 'installed' });
    expect(listSpawns()).toBe(2);
  });

  it('CLI missing: unknown, with a not-found message', async () => {
    const models = make({ bin: path.join(traceDir, 'no-such-ollama') });
    const check = await models.check('llama3.2');
    expect(check).toMatchObject({ kind: 'unknown', cause: 'cli_not_found' });
    expect(check.kind === 'unknown' && check.reason).toMatch(/not found.*OLLAMA_BIN/);
  });
});
