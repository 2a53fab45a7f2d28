import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isVerboseStatsLine, NO_USAGE, parseGoDuration, parseUsage } from '../../../src/ollama/verbose-stats.js';

// What the real CLI writes to stderr: the spinner (escapes and a braille frame), cleared without a
// newline when the answer starts, the stats (api.Metrics.Summary), then the deferred StopAndClear.
const SPINNER =
  '\u001b[?2026h\u001b[?25l\u001b[1G\u280b \u001b[K\u001b[?25h\u001b[?2026l\u001b[?25l\u001b[2K\u001b[1G\u001b[?25h';
const TRAILER = '\u001b[?25l\u001b[?25h';

const FULL =
  'total duration:       2.413914171s\n' +
  'load duration:        1.0514ms\n' +
  'prompt eval count:    26 token(s)\n' +
  'prompt eval duration: 54µs\n' +
  'prompt eval rate:     481481.48 tokens/s\n' +
  'eval count:           291 token(s)\n' +
  'eval duration:        2.353478s\n' +
  'eval rate:            123.65 tokens/s\n';

describe('parseGoDuration (what time.Duration.String() prints)', () => {
  it.each([
    ['0s', 0],
    ['1ns', 1],
    ['1.1µs', 1100],
    ['54µs', 54_000],
    ['54μs', 54_000], // U+03BC, accepted by Go's parser too
    ['54us', 54_000],
    ['2.2ms', 2_200_000],
    ['812.3ms', 812_300_000],
    ['3.3s', 3_300_000_000],
    ['1.234567891s', 1_234_567_891],
    ['4m5s', 245_000_000_000],
    ['4m5.001s', 245_001_000_000],
    ['1m2.5s', 62_500_000_000],
    ['5h6m7.001s', 18_367_001_000_000],
    ['2h0m0s', 7_200_000_000_000],
    ['8m0.000000001s', 480_000_000_001],
    ['-1.5s', -1_500_000_000],
  ])('%s is %d ns', (text, ns) => {
    expect(parseGoDuration(text)).toBeCloseTo(ns, -1);
  });

  it.each(['', '1', '1x', 'ms', '1.2.3s', 's1', '1 s', 'NaN', '+Inf'])('rejects %j', (text) => {
    expect(parseGoDuration(text)).toBeNull();
  });
});

describe('parseUsage', () => {
  it('reads every field of a full stats block, behind the spinner and before its trailer', () => {
    expect(parseUsage(`${SPINNER}${FULL}${TRAILER}`)).toEqual({
      prompt_tokens: 26,
      output_tokens: 291,
      tokens_per_second: 123.65,
      prompt_tokens_per_second: 481481.48,
      load_ms: 1.051,
      total_ms: 2413.914,
    });
  });

  it('reads the same after 16 KiB of spinner frames, whichever escape ends right before the first label', () => {
    const expected = parseUsage(`${SPINNER}${FULL}${TRAILER}`);
    for (const glue of ['\u001b[?2026l', '\u001b[?25l', '\u001b[K', '\u001b[1G\u2819 ', '']) {
      expect(parseUsage(`${SPINNER.repeat(120)}${glue}${FULL}${TRAILER}`), JSON.stringify(glue)).toEqual(expected);
    }
  });

  it('reads the stats when a braille frame is left on the same line as the first one', () => {
    const usage = parseUsage(`\u001b[1G\u2819 total duration:       1m2.5s\neval count:           3 token(s)\n`);
    expect(usage.total_ms).toBe(62_500);
    expect(usage.output_tokens).toBe(3);
  });

  it('takes omitted lines as zero (the CLI skips zero values) but leaves unmeasured rates null', () => {
    // A run whose prompt was all in the cache and that generated nothing.
    const usage = parseUsage('total duration:       812.3ms\nload duration:        54µs\n');
    expect(usage).toEqual({
      prompt_tokens: 0,
      output_tokens: 0,
      tokens_per_second: null,
      prompt_tokens_per_second: null,
      load_ms: 0.054,
      total_ms: 812.3,
    });
  });

  it('is all null when the CLI printed no stats (old CLI, error, timeout)', () => {
    expect(parseUsage('')).toEqual(NO_USAGE);
    expect(parseUsage(`${SPINNER}Error: 503 Service Unavailable: server busy, please try again.\n`)).toEqual(NO_USAGE);
    expect(Object.values(NO_USAGE).every((v) => v === null)).toBe(true);
  });

  it('does not read "prompt eval count" as "eval count"', () => {
    const usage = parseUsage('total duration:       1s\nprompt eval count:    4096 token(s)\n');
    expect(usage.prompt_tokens).toBe(4096);
    expect(usage.output_tokens).toBe(0);
  });

  it('accepts CRLF line ends and keeps the last value when a label repeats', () => {
    const usage = parseUsage(
      'eval count:           1 token(s)\r\neval count:           7 token(s)\r\ntotal duration:       1s\r\n',
    );
    expect(usage.output_tokens).toBe(7);
    expect(usage.total_ms).toBe(1000);
  });

  it('gives null for a value it cannot read instead of a wrong number', () => {
    const usage = parseUsage(
      'total duration:       soon\neval count:           many token(s)\neval rate:            +Inf tokens/s\n',
    );
    expect(usage.total_ms).toBeNull();
    expect(usage.output_tokens).toBeNull();
    expect(usage.tokens_per_second).toBeNull();
  });

  it('ignores lines that only look alike (a model quoting them would be on stdout anyway)', () => {
    expect(parseUsage('the total duration: was long\n')).toEqual(NO_USAGE);
  });
});

describe("the bench's C fake (bench/fake.c)", () => {
  it('prints stats this parser reads in full', () => {
    const source = readFileSync(path.resolve(__dirname, '../../../bench/fake.c'), 'utf8');
    const block = /if \(verbose\) \{\s*fputs\(((?:\s*"[^"]*")+)/.exec(source)?.[1];
    expect(block).toBeDefined();
    const text = [...block!.matchAll(/"([^"]*)"/g)].map((m) => m[1]!.replaceAll('\\n', '\n')).join('');
    expect(parseUsage(text)).toEqual({
      prompt_tokens: 26,
      output_tokens: 2,
      tokens_per_second: 85.27,
      prompt_tokens_per_second: 569.2,
      load_ms: 1.112,
      total_ms: 104.217,
    });
  });
});

describe('isVerboseStatsLine', () => {
  it('recognises each stats line and nothing else', () => {
    for (const line of FULL.trimEnd().split('\n')) expect(isVerboseStatsLine(line)).toBe(true);
    expect(isVerboseStatsLine('Error: something went wrong')).toBe(false);
    expect(isVerboseStatsLine('llama-server process has terminated: exit status 2')).toBe(false);
  });
});
