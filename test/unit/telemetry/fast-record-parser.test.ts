import { describe, expect, it } from 'vitest';

import { createRecordParser, type LineParser, type SelectedFields } from '../../../src/telemetry/fast-record-parser.js';
import { parseLine, type JsonObject } from '../../../src/telemetry/jsonl-reader.js';
import { RUN_RECORD_SCHEMA_VERSION, type ControlRecord, type RunRecord } from '../../../src/telemetry/run-record.js';
import { sampleRecord } from './sample-record.js';
import { SUMMARY_FIELDS } from '../../../src/report/summary.js';
import { prng } from '../../helpers/seeded-random.js';

// What the summary reads (so the test follows it), plus a field it does not, to cover selecting among more.
const FIELDS = [...SUMMARY_FIELDS, 'exit_code'] as const;
type Parsed = SelectedFields<(typeof FIELDS)[number]>;

/** Both paths on one line: the parser's answer, and `parseLine`'s (JSON.parse + the reader's checks). */
function run(parse: LineParser<Parsed>, line: string | Buffer): { got: Parsed | string; want: JsonObject | string } {
  const bytes = typeof line === 'string' ? Buffer.from(line, 'utf8') : line;
  // Inside a larger buffer, as the reader passes it.
  const padded = Buffer.concat([Buffer.from('{"x":1}\n'), bytes, Buffer.from('\n{"y":2}')]);
  const got = parse(padded, 8, 8 + bytes.length);
  // The same line read from a text window around it, as forEachJsonLine passes it: the same answer.
  const fromText = parse(padded, 8, 8 + bytes.length, padded.toString('latin1', 2), 2);
  const plain = (r: Parsed | string): unknown => (typeof r === 'string' ? r : pick(r));
  expect(same(plain(fromText), plain(got)), `from a text window: ${String(line)}`).toBe(true);
  return { got, want: parseLine(bytes.toString('utf8')) };
}

/**
 * The selected fields of a record: own ones only, as `Object.hasOwn` sees them. A fast-path record
 * has every selected field, `undefined` where the line lacks it (JSON.parse never makes `undefined`,
 * so that reads as absent).
 */
function pick(record: JsonObject): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of FIELDS) if (Object.hasOwn(record, field) && record[field] !== undefined) out[field] = record[field];
  return out;
}

/**
 * Deep equality that is exact for anything JSON.parse makes: Object.is for primitives (-0 is not
 * 0), own keys, prototypes. (toStrictEqual compares `.constructor`, which a key named `constructor`
 * replaces.)
 */
function same(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b);
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b) || Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && same((a as JsonObject)[key], (b as JsonObject)[key]));
}

/** Asserts the parser agrees with JSON.parse on `line`; returns whether it took the fast path. */
function agree(parse: LineParser<Parsed>, line: string | Buffer): boolean {
  const { got, want } = run(parse, line);
  if (typeof want === 'string') {
    expect(got, String(line)).toBe(want);
    return false;
  }
  expect(typeof got, String(line)).toBe('object');
  const record = got as Record<string, unknown>;
  expect(same(pick(record), pick(want)), String(line)).toBe(true);
  // The fallback returns JSON.parse's whole object; the fast path only the selected fields.
  const fast = Object.keys(record).every((key) => (FIELDS as readonly string[]).includes(key));
  if (fast) expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
  return fast && Object.keys(want).some((key) => !(FIELDS as readonly string[]).includes(key));
}

// ---------------------------------------------------------------------------------------- values

const ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.:/@#$%^&*()[]{}<>,;=+~`|!?'";
const TRICKY = [
  '"',
  '\\',
  '\n',
  '\t',
  '\r',
  '\u0000',
  '\u001f',
  '\u007f',
  'é',
  'ü',
  '€',
  '中',
  '😀',
  '\u2028',
  '\u2029',
  '\ufeff',
  '\ud800',
  '\udfff',
  '\ufffd',
];

function randomString(random: () => number, plain: boolean): string {
  const length = Math.floor(random() * (random() < 0.1 ? 80 : 20));
  let text = '';
  for (let i = 0; i < length; i++) {
    text +=
      !plain && random() < 0.15 ? TRICKY[Math.floor(random() * TRICKY.length)]! : ASCII[Math.floor(random() * ASCII.length)]!;
  }
  return text;
}

/** A JSON number's text in any form the grammar allows, and sometimes ones JSON.stringify never writes. */
function randomNumberText(random: () => number): string {
  const digits = (n: number): string => {
    let s = '';
    for (let i = 0; i < n; i++) s += String(Math.floor(random() * 10));
    return s;
  };
  const sign = random() < 0.3 ? '-' : '';
  const r = random();
  let int: string;
  if (r < 0.2) int = '0';
  else if (r < 0.85) int = String(1 + Math.floor(random() * 9)) + digits(Math.floor(random() * 8));
  else int = String(1 + Math.floor(random() * 9)) + digits(14 + Math.floor(random() * 12)); // past 2^53
  const frac = random() < 0.25 ? `.${digits(1 + Math.floor(random() * 20))}` : '';
  const exp =
    random() < 0.2
      ? `${random() < 0.5 ? 'e' : 'E'}${['', '+', '-'][Math.floor(random() * 3)]}${digits(1 + Math.floor(random() * 3))}`
      : '';
  return sign + int + frac + exp;
}

/** A value's JSON text: null, booleans, numbers of every form, strings (plain or not), small objects, arrays. */
function randomValue(random: () => number, plain: boolean, depth = 0): string {
  const r = random();
  if (r < 0.15) return 'null';
  if (r < 0.25) return random() < 0.5 ? 'true' : 'false';
  if (r < 0.5) return randomNumberText(random);
  if (r < 0.8 || depth >= 3) return JSON.stringify(randomString(random, plain));
  if (r < 0.9) {
    const keys = ['state', 'transition', 'kind', 'message', 'n', '__proto__', 'constructor'];
    const n = Math.floor(random() * 4);
    const parts: string[] = [];
    for (let i = 0; i < n; i++)
      parts.push(`${JSON.stringify(keys[Math.floor(random() * keys.length)])}:${randomValue(random, plain, depth + 1)}`);
    return `{${parts.join(',')}}`;
  }
  const n = Math.floor(random() * 4);
  const items: string[] = [];
  for (let i = 0; i < n; i++) items.push(randomValue(random, plain, depth + 1));
  return `[${items.join(',')}]`;
}

/** A line as the server writes it (JSON.stringify of a run or control record), with random values. */
function serverLine(random: () => number, plain: boolean): string {
  const str = (): string | null => (random() < 0.2 ? null : randomString(random, plain));
  if (random() < 0.1) {
    const control: ControlRecord = {
      v: RUN_RECORD_SCHEMA_VERSION,
      kind: 'control',
      ts: new Date(1.7e12 + Math.floor(random() * 1e10)).toISOString(),
      tool: 'ollama_reset',
      action: 'reset_task',
      task_id: str(),
      model: str(),
      detail: randomString(random, plain),
      server_pid: Math.floor(random() * 1e6),
    };
    return JSON.stringify(control);
  }
  const record: RunRecord = sampleRecord({
    ts: new Date(1.7e12 + Math.floor(random() * 1e10)).toISOString(),
    run_id: randomString(random, plain),
    model: randomString(random, plain),
    model_key: randomString(random, plain),
    task_id: str(),
    status: randomString(random, plain) as RunRecord['status'],
    exit_code: random() < 0.3 ? null : Math.floor((random() - 0.5) * 300),
    duration_ms: random() < 0.5 ? Math.floor(random() * 1e6) : random() * 1e5 * (random() < 0.1 ? -1 : 1),
    queue_ms: random() < 0.1 ? -0 : Math.floor(random() * 1e4),
    retry_count: Math.floor(random() * 10),
    escalate: random() < 0.3,
    escalation_reason: random() < 0.5 ? null : ('max_retries_exceeded' as const),
    circuit: {
      state: 'closed',
      consecutive_failures: Math.floor(random() * 9),
      retry_after_seconds: random() < 0.5 ? null : Math.floor(random() * 120),
      transition: random() < 0.7 ? null : ('opened' as const),
    },
    error: str(),
    warnings: random() < 0.8 ? [] : [{ kind: 'ledger_not_updated', message: randomString(random, plain) }],
  });
  if (random() < 0.1) {
    const { model_key: _key, warnings: _warnings, ...old } = record; // lines written before these fields existed
    return JSON.stringify(old);
  }
  return JSON.stringify(record);
}

/**
 * A schema v2 line in the contract's key order (v, ts, run_id, batch_id, chain_id, chain_step, tool,
 * model, model_key, task_id, status, ..., thinking_chars, usage, retry_count, max_retries, escalate,
 * escalation_reason, busy_try, will_retry, circuit, error, server_pid, warnings), random values.
 */
function v2ServerLine(random: () => number, plain: boolean): string {
  const base = JSON.parse(serverLine(random, plain)) as Record<string, unknown>;
  if (base.kind === 'control') return JSON.stringify({ ...base, v: 2 });
  const num = (): number | null => (random() < 0.2 ? null : random() < 0.5 ? Math.floor(random() * 9000) : random() * 100);
  const chained = random() < 0.3;
  const record: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(base)) {
    if (key === 'tool') {
      record.chain_id = chained ? randomString(random, plain) : null;
      record.chain_step = chained ? Math.floor(random() * 3) : null;
    }
    if (key === 'retry_count')
      record.usage = {
        prompt_tokens: num(),
        output_tokens: num(),
        tokens_per_second: num(),
        prompt_tokens_per_second: num(),
        load_ms: num(),
        total_ms: num(),
      };
    if (key === 'circuit') {
      record.busy_try = Math.floor(random() * 3);
      record.will_retry = random() < 0.2;
    }
    record[key] = key === 'v' ? 2 : value;
  }
  if (random() < 0.2)
    record.warnings = [
      {
        kind: 'prompt_may_be_truncated',
        message: `prompt used 4096 tokens of a 4096-token context: ${randomString(random, plain)}`,
      },
    ];
  return JSON.stringify(record);
}

/** Key orders for {@link freeLine}: selected keys or not, some repeated, always one not selected. */
function keyOrders(random: () => number): string[][] {
  const keys = [...FIELDS, 'v', 'other', '__proto__', 'constructor', 'a b', 'usage'];
  const orders: string[][] = [];
  for (let i = 0; i < 12; i++) {
    const order = ['run_id'];
    const n = Math.floor(random() * 10);
    for (let k = 0; k < n; k++)
      order.splice(Math.floor(random() * (order.length + 1)), 0, keys[Math.floor(random() * keys.length)]!);
    orders.push(order);
  }
  return orders;
}

/** An object line with one of a few key orders and values of every JSON form. */
function freeLine(random: () => number, orders: string[][], plain: boolean): string {
  const order = orders[Math.floor(random() * orders.length)]!;
  return `{${order.map((key) => `${JSON.stringify(key)}:${randomValue(random, plain)}`).join(',')}}`;
}

/** A valid line broken or bent: cut, a byte dropped, changed or inserted, whitespace added. */
function mutate(random: () => number, line: string): Buffer {
  const bytes = Buffer.from(line, 'utf8');
  const at = Math.floor(random() * (bytes.length + 1));
  const r = random();
  if (r < 0.3) return bytes.subarray(0, at); // torn
  if (r < 0.5) return Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1)]);
  const inserted = Buffer.from([
    [0x20, 0x09, 0x0d, 0x22, 0x5c, 0x2c, 0x7d, 0x5d, 0x30, 0x2d, 0x65, 0x80, 0xff, 0x00][Math.floor(random() * 14)]!,
  ]);
  if (r < 0.75) return Buffer.concat([bytes.subarray(0, at), inserted, bytes.subarray(at + 1)]);
  return Buffer.concat([bytes.subarray(0, at), inserted, bytes.subarray(at)]);
}

// ----------------------------------------------------------------------------------------- tests

describe('createRecordParser', () => {
  it('gives the selected fields exactly as JSON.parse does, for plain server lines, on the fast path', () => {
    const random = prng(1);
    const parse = createRecordParser(FIELDS);
    let fast = 0;
    const lines = 4000;
    for (let i = 0; i < lines; i++) if (agree(parse, serverLine(random, true))) fast += 1;
    // A handful of lines teach the key orders (run, control, old run); every later one is fast.
    expect(fast).toBeGreaterThan(lines * 0.95);
  });

  it('reads schema v2 lines (usage, chain fields, busy_try, will_retry, truncation warnings) on the fast path, exactly', () => {
    const random = prng(11);
    const parse = createRecordParser(FIELDS, ['ts', 'model']); // transient strings: the same values, not copied
    let fast = 0;
    const lines = 4000;
    for (let i = 0; i < lines; i++) if (agree(parse, v2ServerLine(random, true))) fast += 1;
    expect(fast).toBeGreaterThan(lines * 0.95);
    // v1 lines (no usage, no chain fields) mixed in are still read, and still fast once learnt.
    let mixed = 0;
    for (let i = 0; i < lines; i++)
      if (agree(parse, random() < 0.3 ? serverLine(random, true) : v2ServerLine(random, true))) mixed += 1;
    expect(mixed).toBeGreaterThan(lines * 0.95);
  });

  it('agrees with JSON.parse on v2 lines with escapes, unicode and broken bytes', () => {
    const random = prng(12);
    const parse = createRecordParser(FIELDS);
    for (let i = 0; i < 4000; i++) {
      const line = v2ServerLine(random, random() < 0.5);
      agree(parse, random() < 0.3 ? mutate(random, line) : line);
    }
  });

  it('agrees with JSON.parse on lines with escapes, quotes, control characters and UTF-8, through the fallback', () => {
    const random = prng(2);
    const parse = createRecordParser(FIELDS);
    let checked = 0;
    for (let i = 0; i < 4000; i++) {
      const line = serverLine(random, false);
      const fastPath = agree(parse, line);
      // The fast path reads only plain ASCII without escapes: anything else is JSON.parse's.
      if (/[\\\u0080-\uffff]/.test(line)) {
        expect(fastPath, line).toBe(false);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(3000);
  });

  it('agrees with JSON.parse on objects of any keys and values: every number form, nesting, repeated keys, __proto__', () => {
    const random = prng(3);
    const parse = createRecordParser(FIELDS);
    const orders = keyOrders(random);
    let fast = 0;
    for (let i = 0; i < 20000; i++) if (agree(parse, freeLine(random, orders, random() < 0.7))) fast += 1;
    // Values nested deeper than the fast path reads, and non-plain ones, are JSON.parse's; a flat
    // object's own key order is part of a template, so random objects are mostly JSON.parse's too.
    expect(fast).toBeGreaterThan(1500);
  });

  it('never takes a torn, cut or bent line that JSON.parse would not take the same way', () => {
    const random = prng(4);
    const parse = createRecordParser(FIELDS);
    let invalid = 0;
    for (let i = 0; i < 10000; i++) {
      const line = mutate(random, serverLine(random, random() < 0.8));
      agree(parse, line);
      if (typeof parseLine(line.toString('utf8')) === 'string') invalid += 1;
    }
    expect(invalid).toBeGreaterThan(2500);
  });

  it('gives numbers in every JSON form the value JSON.parse gives, -0 and past 2^53 included', () => {
    const random = prng(5);
    const parse = createRecordParser(FIELDS);
    const base = JSON.parse(JSON.stringify(sampleRecord())) as Record<string, unknown>;
    const numberLine = (text: string): string =>
      JSON.stringify({ ...base, duration_ms: 0 }).replace('"duration_ms":0', `"duration_ms":${text}`);
    const forms = [
      '0',
      '-0',
      '-0.0',
      '1e3',
      '1E+3',
      '1e-3',
      '0.1',
      '123456789012345',
      '1234567890123456',
      '9007199254740993',
      '-9007199254740993',
      '1e400',
      '-1e400',
      '5e-324',
      '1.7976931348623157e308',
    ];
    for (let i = 0; i < 5000; i++) forms.push(randomNumberText(random));
    agree(parse, numberLine('1')); // learn the key order
    let fast = 0;
    for (const form of forms) if (agree(parse, numberLine(form))) fast += 1;
    expect(fast).toBe(forms.length);
    for (const bad of ['01', '-', '1.', '.5', '1e', '+1', '0x10', 'NaN', 'Infinity', '1_000']) {
      expect(parse(Buffer.from(numberLine(bad)), 0, Buffer.byteLength(numberLine(bad)))).toBe('invalid_json');
    }
  });

  it('skips blank, torn and non-object lines for the reasons parseLine gives', () => {
    const parse = createRecordParser(FIELDS);
    const line = JSON.stringify(sampleRecord());
    agree(parse, line); // learn the key order first
    for (const [text, reason] of [
      ['', 'blank'],
      ['   ', 'blank'],
      [line.slice(0, -1), 'invalid_json'],
      [line.slice(0, 40), 'invalid_json'],
      [`${line}x`, 'invalid_json'],
      [`${line},`, 'invalid_json'],
      ['[1,2]', 'not_object'],
      ['"text"', 'not_object'],
      ['null', 'not_object'],
    ] as const) {
      expect(parse(Buffer.from(text), 0, Buffer.byteLength(text)), text).toBe(reason);
    }
  });

  it('takes a line with whitespace, an unexpected key order or one more field through JSON.parse, then learns the order', () => {
    const parse = createRecordParser(FIELDS);
    const record = sampleRecord({ status: 'timeout' });
    const line = JSON.stringify(record);
    expect(agree(parse, line)).toBe(false); // first of its key order: JSON.parse, and learnt
    expect(agree(parse, line)).toBe(true);
    expect(agree(parse, JSON.stringify(record, null, 1))).toBe(false); // whitespace
    const { status, ...rest } = record;
    const reordered = JSON.stringify({ status, ...rest });
    expect(agree(parse, reordered)).toBe(false);
    expect(agree(parse, reordered)).toBe(true);
    const newer = JSON.stringify({ ...record, later_field: { prompt_tokens: 12, output_tokens: null } });
    expect(agree(parse, newer)).toBe(false);
    expect(agree(parse, newer)).toBe(true);
    expect(agree(parse, line)).toBe(true); // the first order is still known
  });

  it('builds a fresh object per line: a reader may keep or change one without touching the next', () => {
    const parse = createRecordParser(FIELDS);
    const line = Buffer.from(JSON.stringify(sampleRecord()));
    parse(line, 0, line.length);
    const first = parse(line, 0, line.length) as { circuit: Record<string, unknown>; warnings: unknown[] };
    first.circuit.state = 'changed';
    first.warnings.push('x');
    expect(parse(line, 0, line.length)).toMatchObject({ circuit: { state: 'closed' }, warnings: [] });
  });

  it('refuses field names it could not match', () => {
    expect(() => createRecordParser(['ok', 'a"b'])).toThrow(RangeError);
    expect(() => createRecordParser(['é'])).toThrow(RangeError);
    expect(() => createRecordParser(['__proto__'])).toThrow(RangeError);
  });
});
