import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type Config } from '../../../src/config/config.js';
import {
  buildModelTiers,
  loadModelTiers,
  parseJson,
  parseTiersFile,
  type ModelSettings,
  type TiersFile,
} from '../../../src/config/model-tiers.js';
import { EXAMPLE_TIERS_JSON } from '../../helpers/tiers-example.js';
import { findJsonError } from '../../../src/config/json-position.js';
import { globMatches } from '../../../src/config/tier-rules.js';
import { SETTING_RANGES } from '../../../src/config/ranges.js';
import { formatPath } from '../../../src/config/zod-english.js';

/** Config values distinct from every value used in the files below, so each layer is visible. */
const config: Config = loadConfig({
  OLLAMA_MCP_TIMEOUT_MS: '1111',
  OLLAMA_MCP_MAX_RETRIES: '7',
  OLLAMA_MCP_BREAKER_THRESHOLD: '9',
  OLLAMA_MCP_BREAKER_COOLDOWN_MS: '2222',
});

const FROM_CONFIG: ModelSettings = {
  timeoutMs: 1111,
  startTimeoutMs: 300_000,
  maxRetries: 7,
  breakerThreshold: 9,
  breakerCooldownMs: 2222,
  parallel: 1,
  source: null,
  fallback: [],
};

const example = (): TiersFile => parseTiersFile(JSON.parse(EXAMPLE_TIERS_JSON), null);
const tiersFrom = (file: unknown) => buildModelTiers(config, parseTiersFile(file, '/etc/tiers.json'), '/etc/tiers.json');

describe('without a tiers file', () => {
  it('gives every model the Config values and no source', () => {
    const tiers = buildModelTiers(config, null, null);
    expect(tiers.settingsFor('deepseek-r1:70b')).toEqual(FROM_CONFIG);
    expect(tiers.defaults).toEqual(FROM_CONFIG);
    expect(tiers.rules).toEqual([]);
    expect(tiers.file).toBeNull();
  });

  it('loadModelTiers reads nothing when OLLAMA_MCP_CONFIG is unset', async () => {
    const tiers = await loadModelTiers(config);
    expect(config.configFile).toBeUndefined();
    expect(tiers.settingsFor('llama3.2')).toEqual(FROM_CONFIG);
    expect(tiers.file).toBeNull();
  });
});

describe('resolution order', () => {
  const file = {
    defaults: { timeout_ms: 5000, max_retries: 4, breaker_threshold: 6 },
    tiers: { big: { timeout_ms: 60000, max_retries: 1 } },
    models: [{ match: 'big-model*', tier: 'big', timeout_ms: 90000 }],
  };

  it('Config < defaults < tier < rule keys, key by key', () => {
    expect(tiersFrom(file).settingsFor('big-model:7b')).toEqual({
      timeoutMs: 90000, // rule key over tier over defaults
      maxRetries: 1, // tier over defaults
      breakerThreshold: 6, // defaults over Config
      breakerCooldownMs: 2222, // Config: nothing sets it
      startTimeoutMs: 300_000, // Config's default: nothing sets it
      parallel: 1, // Config's default: nothing sets it
      source: 'big-model* (tier big)',
      fallback: [], // the rule gives none
    });
  });

  it('a model no rule matches gets Config with the file defaults over it', () => {
    const expected = { ...FROM_CONFIG, timeoutMs: 5000, maxRetries: 4, breakerThreshold: 6 };
    expect(tiersFrom(file).settingsFor('other:1b')).toEqual(expected);
    expect(tiersFrom(file).defaults).toEqual(expected);
  });

  it('a rule without a tier applies its own keys over the defaults', () => {
    const tiers = tiersFrom({ defaults: { max_retries: 2 }, models: [{ match: 'solo', breaker_cooldown_ms: 5000 }] });
    expect(tiers.settingsFor('solo')).toEqual({ ...FROM_CONFIG, maxRetries: 2, breakerCooldownMs: 5000, source: 'solo' });
  });

  it('a bare rule (match only) takes the defaults and stops later rules from applying', () => {
    const tiers = tiersFrom({
      tiers: { slow: { timeout_ms: 600000 } },
      models: [{ match: 'deepseek-r1:1.5b' }, { match: 'deepseek-r1*', tier: 'slow' }],
    });
    expect(tiers.settingsFor('deepseek-r1:1.5b')).toEqual({ ...FROM_CONFIG, source: 'deepseek-r1:1.5b' });
    expect(tiers.settingsFor('deepseek-r1:7b').timeoutMs).toBe(600000);
  });

  it("parallel comes from the tier, the rule or the defaults, else the environment's (1 by default)", () => {
    const tiers = tiersFrom({
      defaults: {},
      tiers: { two: { parallel: 2 } },
      models: [{ match: 'a', tier: 'two' }, { match: 'b', tier: 'two', parallel: 3 }, { match: 'c' }],
    });
    expect(tiers.settingsFor('a').parallel).toBe(2);
    expect(tiers.settingsFor('b').parallel).toBe(3);
    expect(tiers.settingsFor('c').parallel).toBe(1);
    expect(tiersFrom({ defaults: { parallel: 4 } }).settingsFor('d').parallel).toBe(4);
    const fromOllama = loadConfig({ OLLAMA_NUM_PARALLEL: '2' });
    expect(buildModelTiers(fromOllama, { models: [{ match: 'x' }] }, null).settingsFor('x').parallel).toBe(2);
  });

  it('start_timeout_ms comes from the tier, the rule or the defaults like every setting', () => {
    const tiers = tiersFrom({ tiers: { slow: { start_timeout_ms: 900_000 } }, models: [{ match: 'big*', tier: 'slow' }] });
    expect(tiers.settingsFor('big:70b').startTimeoutMs).toBe(900_000);
    expect(tiers.settingsFor('small').startTimeoutMs).toBe(300_000);
  });

  it('names the new key when a file still says `concurrency`', () => {
    expect(() => tiersFrom({ defaults: { concurrency: 2 } })).toThrow(
      'defaults: unknown key "concurrency" (did you mean "parallel"?)',
    );
  });

  it('the first matching rule wins, even when a later one matches more exactly', () => {
    const tiers = tiersFrom({
      models: [
        { match: '*:70b', timeout_ms: 900000 },
        { match: 'llama*', timeout_ms: 300000 },
      ],
    });
    expect(tiers.settingsFor('llama3.1:70b')).toMatchObject({ timeoutMs: 900000, source: '*:70b' });
    expect(tiers.settingsFor('llama3.1:8b')).toMatchObject({ timeoutMs: 300000, source: 'llama*' });
  });

  it('exposes each rule with its resolved settings, in file order, for health output', () => {
    const tiers = buildModelTiers(config, example(), '/etc/tiers.json');
    expect(tiers.file).toBe('/etc/tiers.json');
    expect(tiers.rules.map((rule) => [rule.match, rule.tier, rule.settings.timeoutMs, rule.settings.source])).toEqual([
      ['deepseek-r1*', 'reasoning', 600000, 'deepseek-r1* (tier reasoning)'],
      ['*:70b', 'reasoning', 900000, '*:70b (tier reasoning)'],
      ['qwen2.5-coder:1.5b', 'quick', 30000, 'qwen2.5-coder:1.5b (tier quick)'],
    ]);
  });
});

describe('the example file', () => {
  const tiers = buildModelTiers(config, example(), null);

  it('is valid', () => {
    expect(() => parseTiersFile(JSON.parse(EXAMPLE_TIERS_JSON), null)).not.toThrow();
  });

  it.each([
    [
      'deepseek-r1:7b',
      {
        timeoutMs: 600000,
        maxRetries: 1,
        breakerThreshold: 3,
        breakerCooldownMs: 300000,
        startTimeoutMs: 600000,
        parallel: 1,
        source: 'deepseek-r1* (tier reasoning)',
      },
    ],
    ['deepseek-r1:70b', { timeoutMs: 600000, maxRetries: 1, startTimeoutMs: 600000, source: 'deepseek-r1* (tier reasoning)' }], // first match wins over *:70b
    [
      'llama3.1:70b',
      { timeoutMs: 900000, maxRetries: 1, breakerThreshold: 3, startTimeoutMs: 600000, source: '*:70b (tier reasoning)' },
    ],
    [
      'qwen2.5-coder:1.5b',
      {
        timeoutMs: 30000,
        maxRetries: 2,
        breakerThreshold: 9,
        breakerCooldownMs: 2222,
        startTimeoutMs: 300000,
        source: 'qwen2.5-coder:1.5b (tier quick)',
      },
    ],
    [
      'llama3.1:7b',
      { timeoutMs: 120000, maxRetries: 3, breakerThreshold: 9, breakerCooldownMs: 2222, parallel: 1, source: null },
    ],
  ])('%s', (model, expected) => {
    expect(tiers.settingsFor(model)).toMatchObject(expected);
  });
});

describe('globMatches', () => {
  it.each([
    ['deepseek-r1*', 'deepseek-r1:7b', true],
    ['deepseek-r1*', 'deepseek-r1:70b', true],
    ['deepseek-r1*', 'deepseek-r1', true],
    ['deepseek-r1*', 'xdeepseek-r1:7b', false],
    ['*:70b', 'llama3.1:70b', true],
    ['*:70b', 'llama3.1:7b', false],
    ['*:70b', 'llama3.1:70b-instruct', false],
    ['*', 'hf.co/bartowski/model:q4', true],
    ['*', '', true],
    ['hf.co/*:q4', 'hf.co/bartowski/model:q4', true], // * spans / and :
    ['llama3.?', 'llama3.2', true],
    ['llama3.?', 'llama3.10', false], // ? is exactly one character
    ['llama3.?', 'llama3.', false],
    ['a?c', 'abc', true],
    ['qwen2.5*', 'qwen2.5-coder', true],
    ['qwen2.5*', 'qwen205-coder', false], // . is literal
    ['a+b', 'a+b', true],
    ['a+b', 'aab', false], // + is literal
    ['a+b', 'aaab', false],
    ['(x|y)', 'x', false],
    ['[ab]', 'a', false],
    ['^a$', '^a$', true],
    ['*a*b*c', 'xxaxxbxxc', true],
    ['*a*b*c', 'xxaxxcxxb', false],
    ['a*', 'b', false],
    ['', '', true],
    ['', 'a', false],
  ])('%s against %s is %s', (pattern, text, expected) => {
    expect(globMatches(pattern, text)).toBe(expected);
  });

  it('stays linear on patterns that make backtracking regexes explode', () => {
    const started = performance.now();
    expect(globMatches('*a*a*a*a*a*a*a*a*a*b', 'a'.repeat(200))).toBe(false);
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe('matching model names', () => {
  it('matches case-insensitively, both pattern and name', () => {
    const tiers = tiersFrom({ models: [{ match: 'DeepSeek-R1*', timeout_ms: 600000 }] });
    expect(tiers.settingsFor('deepseek-r1:7b').timeoutMs).toBe(600000);
    expect(tiers.settingsFor('DEEPSEEK-R1:7B').timeoutMs).toBe(600000);
    expect(tiers.settingsFor('deepseek-v3:7b').timeoutMs).toBe(1111);
    // A glob only the name as given can match (the canonical form drops `library/`) is case-insensitive too.
    const library = tiersFrom({ models: [{ match: 'Library/*', timeout_ms: 2000 }] });
    expect(library.settingsFor('LIBRARY/Llama3.2:1B').timeoutMs).toBe(2000);
  });

  it.each(['llama3.2', 'llama3.2:latest', 'LLAMA3.2:Latest', 'library/llama3.2'])(
    'an exact rule %s matches every spelling of the same model',
    (match) => {
      const tiers = tiersFrom({ models: [{ match, timeout_ms: 5000 }] });
      for (const model of [
        'llama3.2',
        'llama3.2:latest',
        'Llama3.2',
        'library/llama3.2',
        'registry.ollama.ai/library/llama3.2:latest',
      ]) {
        expect(tiers.settingsFor(model), model).toMatchObject({ timeoutMs: 5000, source: match });
      }
      for (const model of ['llama3.2:1b', 'llama3.21', 'someone/llama3.2']) {
        expect(tiers.settingsFor(model), model).toMatchObject({ timeoutMs: 1111, source: null });
      }
    },
  );

  it('tries globs against the name as given and its canonical form', () => {
    const tiers = tiersFrom({
      models: [
        { match: '*:latest', timeout_ms: 1000 }, // canonical form only: `llama3.2` → `llama3.2:latest`
        { match: 'library/*', timeout_ms: 2000 }, // name as given only
      ],
    });
    expect(tiers.settingsFor('llama3.2').timeoutMs).toBe(1000);
    expect(tiers.settingsFor('llama3.2:1b').timeoutMs).toBe(1111);
    expect(tiers.settingsFor('library/llama3.2:1b').timeoutMs).toBe(2000);
    expect(tiers.settingsFor('mistral:7b').timeoutMs).toBe(1111);
  });

  it('memoises per name: the same settings object comes back', () => {
    const tiers = buildModelTiers(config, example(), null);
    const first = tiers.settingsFor('deepseek-r1:7b');
    expect(tiers.settingsFor('deepseek-r1:7b')).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
  });

  it('stays correct past the memo bound', () => {
    const tiers = buildModelTiers(config, example(), null);
    for (let i = 0; i < 3000; i++) {
      expect(tiers.settingsFor(`m${i}:70b`).timeoutMs).toBe(900000);
      expect(tiers.settingsFor(`m${i}:7b`).timeoutMs).toBe(120000);
    }
  });
});

describe('validation', () => {
  const P = 'OLLAMA_MCP_CONFIG (/etc/tiers.json): ';
  const TIERS = { quick: {}, standard: {}, reasoning: {} };

  it.each<[string, unknown, string]>([
    [
      'a setting above its range',
      { models: [{ match: 'a' }, { match: 'b', timeout_ms: 99999999 }] },
      'models[1].timeout_ms must be at most 3600000, got 99999999',
    ],
    ['a setting below its range', { defaults: { parallel: 0 } }, 'defaults.parallel must be at least 1, got 0'],
    [
      'a huge number',
      { tiers: { q: { breaker_cooldown_ms: 1e20 } } },
      'tiers.q.breaker_cooldown_ms must be at most 86400000, got 100000000000000000000',
    ],
    ['a fraction', { defaults: { timeout_ms: 1.5 } }, 'defaults.timeout_ms must be a whole number, got 1.5'],
    ['a number as a string', { tiers: { q: { max_retries: '3' } } }, 'tiers.q.max_retries must be a whole number, got "3"'],
    [
      'null for a setting',
      { defaults: { breaker_threshold: null } },
      'defaults.breaker_threshold must be a whole number, got null',
    ],
    [
      'an unknown key in a tier',
      { tiers: { reasoning: { timeout: 5 } } },
      'tiers.reasoning: unknown key "timeout" (did you mean "timeout_ms"?)',
    ],
    [
      'an unknown key in a rule',
      { models: [{ match: 'a', timout_ms: 5 }] },
      'models[0]: unknown key "timout_ms" (did you mean "timeout_ms"?)',
    ],
    ['an unknown key in defaults', { defaults: { paralel: 2 } }, 'defaults: unknown key "paralel" (did you mean "parallel"?)'],
    ['an unknown top-level key', { model: [] }, 'unknown key "model" (did you mean "models"?)'],
    [
      'unknown keys without a near miss',
      { defaults: { colour: 1, size: 2 } },
      'defaults: unknown keys "colour", "size" (allowed: timeout_ms, start_timeout_ms, max_retries, breaker_threshold, breaker_cooldown_ms, parallel)',
    ],
    [
      'a missing tier',
      { tiers: TIERS, models: [{ match: 'x', tier: 'reasonin' }] },
      'models[0].tier: no tier named "reasonin" (defined: quick, standard, reasoning)',
    ],
    [
      'a tier when none are defined',
      { models: [{ match: 'x', tier: 'quick' }] },
      'models[0].tier: no tier named "quick" (no tiers are defined)',
    ],
    [
      'a tier that is not a string',
      { tiers: TIERS, models: [{ match: 'x', tier: 1 }] },
      'models[0].tier must be a string, got 1',
    ],
    ['an empty match', { models: [{ match: '' }] }, 'models[0].match must not be empty'],
    ['a blank match', { models: [{ match: 'a' }, { match: '  ' }] }, 'models[1].match must not be empty'],
    ['a missing match', { models: [{ tier: 'quick' }], tiers: TIERS }, 'models[0].match is required'],
    [
      'a match with other characters',
      { models: [{ match: 'a+b' }] },
      'models[0].match: "a+b" may contain only letters, digits, ".", "_", "-", "/", ":" and the wildcards "*" and "?"',
    ],
    [
      'an exact match that is no model name',
      { models: [{ match: 'llama::' }] },
      'models[0].match: "llama::" is not a valid model name (and has no wildcard), so it would never match',
    ],
    [
      'a rule after "*"',
      { models: [{ match: 'a' }, { match: '*' }, { match: 'b*' }] },
      'models[2]: unreachable: models[1] ("*") comes first and matches every model; put more specific rules first',
    ],
    [
      'a rule after "**"',
      { models: [{ match: '**' }, { match: 'b' }] },
      'models[1]: unreachable: models[0] ("**") comes first and matches every model',
    ],
    [
      'an exact rule after a glob that covers it',
      { models: [{ match: 'deepseek-r1*' }, { match: 'deepseek-r1:70b' }] },
      'models[1]: unreachable: models[0] ("deepseek-r1*") comes first and already matches "deepseek-r1:70b"',
    ],
    [
      'an exact rule after the same model spelled otherwise',
      { models: [{ match: 'llama3.2' }, { match: 'LLAMA3.2:latest' }] },
      'models[1]: unreachable: models[0] ("llama3.2") comes first and has the same match',
    ],
    [
      'an exact rule covered through its canonical form',
      { models: [{ match: '*:latest' }, { match: 'library/llama3.2' }] },
      'models[1]: unreachable: models[0] ("*:latest") comes first and already matches "llama3.2:latest"',
    ],
    [
      'a repeated glob',
      { models: [{ match: 'Qwen*' }, { match: 'qwen*' }] },
      'models[1]: unreachable: models[0] ("Qwen*") comes first and has the same match',
    ],
    [
      'a bad tier name',
      { tiers: { 'my tier': {} } },
      'tiers: tier name "my tier" must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit',
    ],
    ['tiers as an array', { tiers: [] }, 'tiers must be an object, got an array'],
    ['models as an object', { models: {} }, 'models must be an array, got an object'],
    ['a rule that is not an object', { models: ['llama3.2'] }, 'models[0] must be an object, got "llama3.2"'],
    ['a top level that is an array', [], 'the file must be a JSON object, got an array'],
    ['a top level that is null', null, 'the file must be a JSON object, got null'],
    [
      'several problems at once',
      { defaults: { timeout_ms: 1.5, parallel: 99 } },
      'defaults.timeout_ms must be a whole number, got 1.5; defaults.parallel must be at most 32, got 99',
    ],
  ])('%s', (_name, file, message) => {
    let thrown: unknown;
    try {
      parseTiersFile(file, '/etc/tiers.json');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).variable).toBe('OLLAMA_MCP_CONFIG');
    expect((thrown as ConfigError).message).toContain(P + message);
  });

  it('accepts the edges of every range and an empty file object', () => {
    const edges = (bound: 'min' | 'max') =>
      Object.fromEntries(Object.entries(SETTING_RANGES).map(([key, range]) => [key, range[bound]]));
    expect(() =>
      parseTiersFile({ defaults: edges('min'), tiers: { a: edges('max') }, models: [{ match: 'x', ...edges('max') }] }, null),
    ).not.toThrow();
    expect(() => parseTiersFile({}, null)).not.toThrow();
    expect(buildModelTiers(config, {}, '/f').settingsFor('x')).toEqual(FROM_CONFIG);
  });

  it('allows exact rules after globs that do not cover them, and globs after exact rules', () => {
    expect(() =>
      parseTiersFile(
        {
          models: [
            { match: 'deepseek-r1:70b' },
            { match: 'deepseek-r1*' },
            { match: 'llama3.?' },
            { match: 'llama3.2:latest' },
            { match: '*' },
          ],
        },
        null,
      ),
    ).not.toThrow();
  });

  it.each(Object.entries(SETTING_RANGES))('%s has the same range as its environment variable', (key, range) => {
    const variable = {
      timeout_ms: 'OLLAMA_MCP_TIMEOUT_MS',
      max_retries: 'OLLAMA_MCP_MAX_RETRIES',
      breaker_threshold: 'OLLAMA_MCP_BREAKER_THRESHOLD',
      breaker_cooldown_ms: 'OLLAMA_MCP_BREAKER_COOLDOWN_MS',
      start_timeout_ms: 'OLLAMA_MCP_START_TIMEOUT_MS',
      parallel: 'OLLAMA_MCP_PARALLEL',
    }[key]!;
    for (const [value, ok] of [
      [range.min, true],
      [range.max, true],
      [range.min - 1, false],
      [range.max + 1, false],
    ] as const) {
      const fromEnv = () => loadConfig({ [variable]: String(value) });
      const fromFile = () => parseTiersFile({ defaults: { [key]: value } }, null);
      if (ok) {
        expect(fromEnv).not.toThrow();
        expect(fromFile).not.toThrow();
      } else {
        expect(fromEnv).toThrow(ConfigError);
        expect(fromFile).toThrow(ConfigError);
      }
    }
  });

  it('names no path when there is none', () => {
    expect(() => parseTiersFile({ defaults: { timeout_ms: 1 } }, null)).toThrow(
      /^OLLAMA_MCP_CONFIG: defaults\.timeout_ms must be at least 100, got 1$/,
    );
  });

  it('formats key paths', () => {
    expect(formatPath([])).toBe('');
    expect(formatPath(['models', 1, 'timeout_ms'])).toBe('models[1].timeout_ms');
    expect(formatPath(['tiers', 'reasoning'])).toBe('tiers.reasoning');
    expect(formatPath(['tiers', 'quick.v2'])).toBe('tiers["quick.v2"]');
  });
});

describe('parseJson', () => {
  it.each([
    ['{"a":}', 'invalid JSON at line 1 column 6 (position 5): Unexpected token'],
    ['{"a":1,}', 'invalid JSON at line 1 column 8 (position 7): '],
    ['{\n "a": 1\n "b": 2}', 'invalid JSON at line 3 column 2 (position 11): '],
    ['{\n  "a": tru}', 'invalid JSON at line 2 column 11 (position 12): '],
    ['{"a":1} x', 'invalid JSON at line 1 column 9 (position 8): '],
    ['  \n', 'the file is empty; it must hold a JSON object (e.g. {})'],
  ])('%j', (text, message) => {
    expect(() => parseJson(text, '/p.json')).toThrow(`OLLAMA_MCP_CONFIG (/p.json): ${message}`);
  });

  it('does not quote the file back in the message', () => {
    expect(() => parseJson('{"secretish": tru}', '/p.json')).toThrow(/^[^]*: Unexpected token '}'$/);
    expect(() => parseJson('{"secretish": tru}', '/p.json')).not.toThrow(/secretish/);
  });

  it('skips a byte order mark', () => {
    expect(parseJson('\uFEFF{"models":[]}', null)).toEqual({ models: [] });
  });

  it.each([
    ['{"a": tru}', 9],
    ['{"a":}', 5],
    ['[1,2', 4],
    ['{"a":"\\x"}', 7],
    ['{"a":01}', 6],
    ['{"a": [1, 2,]}', 12],
    ['{"a": "b\nc"}', 8],
    // A malformed number: where V8 itself points, at the character that cannot continue it.
    ['{"a": 1.}', 8],
    ['{"a": -}', 7],
    ['{"a": {"b": [true, false, null, -1.5e3, "\\u00e9"]}}', null],
    ['{}  ', null],
  ])('findJsonError(%j) is %s', (text, position) => {
    expect(findJsonError(text)).toBe(position);
    // Cross-check with the real parser: an error position exactly when it rejects the text.
    let parses = true;
    try {
      JSON.parse(text);
    } catch {
      parses = false;
    }
    expect(parses).toBe(position === null);
  });
});

describe('loadModelTiers', () => {
  let dir: string;
  const withFile = (file: string): Config => ({ ...config, configFile: file });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'model-tiers-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('loads a valid file', async () => {
    const file = path.join(dir, 'tiers.json');
    await writeFile(file, EXAMPLE_TIERS_JSON);
    const tiers = await loadModelTiers(withFile(file));
    expect(tiers.file).toBe(file);
    expect(tiers.rules).toHaveLength(3);
    expect(tiers.settingsFor('deepseek-r1:7b')).toMatchObject({
      timeoutMs: 600000,
      startTimeoutMs: 600000,
      source: 'deepseek-r1* (tier reasoning)',
    });
    expect(tiers.settingsFor('mistral')).toMatchObject({ timeoutMs: 120000, maxRetries: 3, breakerThreshold: 9, source: null });
  });

  it('names a missing file', async () => {
    const file = path.join(dir, 'nope.json');
    await expect(loadModelTiers(withFile(file))).rejects.toThrow(`OLLAMA_MCP_CONFIG (${file}): file not found`);
    await expect(loadModelTiers(withFile(file))).rejects.toBeInstanceOf(ConfigError);
  });

  it('names a folder given as the file', async () => {
    const folder = path.join(dir, 'a-folder');
    await mkdir(folder);
    await expect(loadModelTiers(withFile(folder))).rejects.toThrow(`OLLAMA_MCP_CONFIG (${folder}): not a regular file`);
  });

  it('names bad JSON with its line and column', async () => {
    const file = path.join(dir, 'bad.json');
    await writeFile(file, '{\n  "defaults": { "timeout_ms": 1000, }\n}\n');
    await expect(loadModelTiers(withFile(file))).rejects.toThrow(
      `OLLAMA_MCP_CONFIG (${file}): invalid JSON at line 2 column 37 (position 38): Expected double-quoted property name`,
    );
  });

  it('names an empty file', async () => {
    const file = path.join(dir, 'empty.json');
    await writeFile(file, '');
    await expect(loadModelTiers(withFile(file))).rejects.toThrow(`OLLAMA_MCP_CONFIG (${file}): the file is empty`);
  });

  it('names the path and key of an invalid setting', async () => {
    const file = path.join(dir, 'invalid.json');
    await writeFile(file, JSON.stringify({ models: [{ match: 'a' }, { match: 'b', timeout_ms: 99999999 }] }));
    await expect(loadModelTiers(withFile(file))).rejects.toThrow(
      `OLLAMA_MCP_CONFIG (${file}): models[1].timeout_ms must be at most 3600000, got 99999999`,
    );
  });
});

describe('fallback chains in the tiers file', () => {
  it("a rule's fallback is the default chain of the models it matches; other models have none", () => {
    const tiers = tiersFrom({ models: [{ match: 'qwen*', fallback: ['llama3.2', 'mistral:7b'] }] });
    expect(tiers.settingsFor('qwen2.5-coder:7b').fallback).toEqual(['llama3.2', 'mistral:7b']);
    expect(tiers.settingsFor('gemma3:4b').fallback).toEqual([]);
    expect(tiers.defaults.fallback).toEqual([]);
  });

  it.each([
    [{ match: 'qwen*', fallback: ['bad name'] }, 'models[0].fallback: "bad name" is not a valid model name'],
    [{ match: 'qwen*', fallback: ['llama3.2', 'library/llama3.2:latest'] }, '"library/llama3.2:latest" is listed twice'],
    [{ match: 'llama3.2', fallback: ['llama3.2:latest'] }, "is the rule's own model; a model cannot be its own fallback"],
    [{ match: 'qwen*', fallback: ['a', 'b', 'c', 'd', 'e', 'f'] }, 'models[0].fallback'],
    [{ match: 'qwen*', fallback: 'llama3.2' }, 'models[0].fallback'],
  ])('%j is refused with a message naming the key', (rule, message) => {
    expect(() => tiersFrom({ models: [rule] })).toThrow(message);
  });
});
