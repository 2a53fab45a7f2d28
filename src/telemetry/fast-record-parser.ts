// Run-time imports stay inside src/telemetry/ (see run-log.ts).
import { parseLine, type JsonObject, type SkipReason } from './jsonl-reader.js';

/**
 * The fields of a parsed line that a reader asked for: reading any other field does not compile,
 * so a reader that starts using a new field must add it to its list (or it would silently see
 * `undefined` on every fast-parsed line).
 */
export type SelectedFields<K extends string> = { readonly [P in K]?: unknown };

/**
 * Parses the bytes `start..end` (no `\n`) of one JSON line: the selected fields, or why it is skipped.
 * A reader may also pass `text`, the same bytes read as latin1 (one character per byte) from
 * `textStart` on, covering the line: a parser that reads text then needs no string per line.
 */
export type LineParser<R> = (bytes: Buffer, start: number, end: number, text?: string, textStart?: number) => R | SkipReason;

/** The default parser: the whole object, through `parseLine`. */
export function parseLineBytes(bytes: Buffer, start: number, end: number): JsonObject | SkipReason {
  return parseLine(bytes.toString('utf8', start, end));
}

/**
 * What the fast path never reads: control characters (not allowed raw in JSON strings),
 * backslashes (escapes) and bytes past ASCII (UTF-8 text). Without them a string runs from a quote
 * to the next quote and its characters are its bytes.
 */
const NOT_PLAIN = /[\x00-\x1f\\\x80-\xff]/;
const PLAIN_KEY = /^[\x20-\x7e]*$/;

// The JSON grammar, without whitespace, escapes or non-ASCII (RFC 8259, section 3 to 7).
const STRING_BODY = '[^"\\\\\\x00-\\x1f\\x80-\\xff]*';
const STRING = `"${STRING_BODY}"`;
const NUMBER = '-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?';
const PRIMITIVE = `(?:${STRING}|${NUMBER}|true|false|null)`;
/** An object of primitives (`circuit`, `usage`). */
const FLAT_OBJECT = `\\{(?:${STRING}:${PRIMITIVE}(?:,${STRING}:${PRIMITIVE})*)?\\}`;
/** An array of primitives and flat objects (`warnings`). */
const FLAT_ARRAY = `\\[(?:(?:${PRIMITIVE}|${FLAT_OBJECT})(?:,(?:${PRIMITIVE}|${FLAT_OBJECT}))*)?\\]`;
/**
 * What a key's value may be in a template, by the kind of value it had in the line the template was
 * learnt from (a primitive, or null and an object, or null and an array). One pattern for every
 * kind would be simpler, but a regex over 20 KB is one V8 does not optimize: 3 times slower.
 */
const NON_STRING: Record<ValueKind, string> = {
  primitive: `${NUMBER}|true|false|null`,
  object: `null|${FLAT_OBJECT}`,
  array: `null|${FLAT_ARRAY}`,
};
type ValueKind = 'primitive' | 'object' | 'array';

function kindOf(value: unknown): ValueKind {
  if (typeof value !== 'object' || value === null) return 'primitive';
  return Array.isArray(value) ? 'array' : 'object';
}

/** Key orders tried per line, most recently matched first. */
const MAX_TEMPLATES = 8;
/** Key orders compiled at most in the parser's life: a log of random key orders must not compile one per line. */
const MAX_COMPILED = 32;
/** Flat objects remembered by their text (`circuit` takes a few dozen forms in a day). */
const MAX_CACHED_OBJECTS = 1000;
/** Up to this many digits an integer is exact when accumulated (< 2^53). */
const MAX_EXACT_DIGITS = 15;
/**
 * V8 makes a substring this long or longer a view of its parent: a value kept by the reader (a
 * task id in the summary's maps) would keep the whole line alive. Longer strings are copied from
 * the bytes instead.
 */
const MIN_SLICED_LENGTH = 13;
/** Long strings remembered per value, so that a repeated one is not copied again. */
const RECENT_COPIES = 4;

/** Where one wanted value is in a template's match: group `str` (a string's contents) or `other` (any other value). */
interface Capture {
  readonly name: string;
  readonly str: number;
  readonly other: number;
  /** The reader does not keep this string: no copy needed. */
  readonly transient: boolean;
  /** The last few long strings copied out for this value (a model name repeats line after line). */
  readonly recent: string[];
}

/**
 * A wanted value: a top-level one, or a flat object (`usage`, `circuit`) whose key order is part of
 * the template, each of its values captured on its own (building it costs no `JSON.parse`).
 */
type Wanted = Capture | { readonly name: string; readonly fields: readonly Capture[] };

/** Builds a record from a template's match (the arguments of `value` after the capture). */
type Builder = (match: RegExpExecArray, line: string, lineAt: number, bytes: Buffer, textStart: number) => unknown;

/** One key order: a regex matching exactly the lines with these keys, and how a match becomes a record. */
interface Template {
  readonly regex: RegExp;
  readonly build: Builder;
}

/**
 * A parser for the lines the server writes itself (run and control records, see run-record.ts):
 * `JSON.stringify` output of an object, keys in the writer's fixed order. It builds only the
 * fields asked for, exactly as `JSON.parse` would, for less than `JSON.parse` costs (about a third
 * to two thirds of it on a 1M-line log, on a busy machine: the regex still reads every character,
 * but no other field is built).
 *
 * How: each key order seen is compiled once into a regex of the strict JSON grammar for exactly
 * those keys (no whitespace, no escapes, ASCII only, values nested at most as `{…}` of primitives
 * or `[…]` of those), capturing the wanted values. A line that matches is valid JSON by
 * construction, skipped values included (a torn line never matches), and its captures convert
 * exactly: plain strings are their text, numbers go through `Number` (the conversion JSON.parse
 * uses), nested values through `JSON.parse` itself. Any other line (a new key order, escapes, UTF-8
 * text, whitespace, duplicate keys, deeper nesting, a blank, torn or non-object line) goes to
 * `parseLine`, which returns the whole object (a reader must rely on the selected fields only);
 * when it was a plain line that parsed, its key order is learnt for the next ones.
 *
 * @param fields top-level keys to build (printable ASCII); their nested values are built whole
 * @param transient those of `fields` whose strings the reader never keeps past the line (the
 *   summary's `ts`): they may stay views of the line instead of being copied out
 */
export function createRecordParser<K extends string>(
  fields: readonly K[],
  transient: readonly K[] = [],
): LineParser<SelectedFields<K>> {
  for (const name of fields)
    if (!PLAIN_KEY.test(name) || name.includes('"') || name === '__proto__')
      throw new RangeError(`not a field name the fast path can match: ${JSON.stringify(name)}`);
  const wanted = new Set<string>(fields);
  const transientSet = new Set<string>(transient);
  const templates: Template[] = [];
  const objects = new Map<string, JsonObject>();
  let compiled = 0;

  /** `line` holds the line from `lineAt` on; it is `bytes` read as latin1 from `textStart` on. */
  function value(
    capture: Capture,
    match: RegExpExecArray,
    line: string,
    lineAt: number,
    bytes: Buffer,
    textStart: number,
  ): unknown {
    const text = match[capture.str];
    if (text === undefined) return other(match[capture.other]!);
    // A long substring would be a view keeping the whole text alive: copy it from the bytes,
    // from any place the same text occurs in the line (it is ASCII: characters are bytes).
    if (text.length < MIN_SLICED_LENGTH || capture.transient) return text;
    const recent = capture.recent;
    for (let r = 0; r < recent.length; r++) if (recent[r] === text) return recent[r]!;
    const at = textStart + line.indexOf(text, lineAt);
    const copy = bytes.toString('latin1', at, at + text.length);
    if (recent.length >= RECENT_COPIES) recent.pop();
    recent.unshift(copy);
    return copy;
  }

  /**
   * A template's builder: one object literal with every selected field in `fields` order (absent
   * ones `undefined`), nested flat objects as literals in their line's key order. Compiled from the
   * names (quoted by JSON.stringify; `__proto__` is never one: no literal sets a prototype) because
   * a literal of known keys is one allocation of a known shape, where assigning keys one by one
   * through a variable name costs several times more, and every record then has the same hidden
   * class, so the reader's property loads stay monomorphic.
   */
  function compileBuilder(captures: readonly Wanted[]): Builder {
    const at = new Map(captures.map((w, index) => [w.name, index]));
    const entries = fields.map((name) => {
      const index = at.get(name);
      if (index === undefined) return `${JSON.stringify(name)}: undefined`;
      const w = captures[index]!;
      if (!('fields' in w)) return `${JSON.stringify(name)}: value(W[${index}], m, l, a, b, s)`;
      const inner = w.fields.map((f, k) => `${JSON.stringify(f.name)}: value(W[${index}].fields[${k}], m, l, a, b, s)`);
      return `${JSON.stringify(name)}: {${inner.join(', ')}}`;
    });
    const make = new Function('W', 'value', `return (m, l, a, b, s) => ({${entries.join(', ')}});`) as (
      w: readonly Wanted[],
      v: typeof value,
    ) => Builder;
    return make(captures, value);
  }

  function other(raw: string): unknown {
    const c = raw.charCodeAt(0);
    if (c === 0x74) return true;
    if (c === 0x66) return false;
    if (c === 0x6e) return null;
    if (c === 0x7b) {
      // Primitives only (FLAT_OBJECT): a shallow copy of the remembered parse is what JSON.parse makes.
      let known = objects.get(raw);
      if (known === undefined) {
        known = JSON.parse(raw) as JsonObject;
        if (objects.size < MAX_CACHED_OBJECTS) objects.set(raw, known);
      }
      return { ...known };
    }
    if (c === 0x5b) return raw === '[]' ? [] : JSON.parse(raw);
    return number(raw);
  }

  function learn(record: JsonObject, line: string): void {
    if (compiled >= MAX_COMPILED) return;
    const keys = Object.keys(record);
    if (new Set(keys).size !== keys.length || !keys.every((key) => PLAIN_KEY.test(key))) return;
    compiled += 1;
    const captures: Wanted[] = [];
    let group = 0;
    const capture = (name: string, other: string, topLevel: boolean): [Capture, string] => {
      group += 2;
      return [
        { name, str: group - 1, other: group, transient: topLevel && transientSet.has(name), recent: [] },
        `(?:"(${STRING_BODY})"|(${other}))`,
      ];
    };
    const parts = keys.map((key) => {
      const literal = keyLiteral(key);
      const value = record[key];
      const other = NON_STRING[kindOf(value)];
      if (!wanted.has(key)) return `${literal}(?:${STRING}|${other})`;
      if (isFlatObject(value)) {
        // Its own key order: each value captured, so that building it costs no JSON.parse.
        const fields: Capture[] = [];
        const inner = Object.keys(value).map((sub) => {
          const [c, pattern] = capture(sub, `${NUMBER}|true|false|null`, false);
          fields.push(c);
          return `${keyLiteral(sub)}${pattern}`;
        });
        captures.push({ name: key, fields });
        return `${literal}\\{${inner.join(',')}\\}`;
      }
      const [c, pattern] = capture(key, other, true);
      captures.push(c);
      return `${literal}${pattern}`;
    });
    // Sticky: matched where a line starts in a longer text; that the match ends where the line ends is checked.
    const template: Template = { regex: new RegExp(`\\{${parts.join(',')}\\}`, 'y'), build: compileBuilder(captures) };
    // Only a template that takes the line it was learnt from is worth trying on the next ones.
    template.regex.lastIndex = 0;
    if (!template.regex.test(line) || template.regex.lastIndex !== line.length) return;
    templates.unshift(template);
    if (templates.length > MAX_TEMPLATES) templates.pop();
  }

  return (bytes: Buffer, start: number, end: number, text?: string, textStart = 0): SelectedFields<K> | SkipReason => {
    const line = text ?? bytes.toString('latin1', start, end);
    const base = text === undefined ? start : textStart;
    const lineAt = start - base;
    const lineEnd = end - base;
    for (let t = 0; t < templates.length; t++) {
      const template = templates[t]!;
      const regex = template.regex;
      regex.lastIndex = lineAt;
      const match = regex.exec(line);
      if (match === null || regex.lastIndex !== lineEnd) continue;
      if (t > 0) {
        templates.splice(t, 1);
        templates.unshift(template);
      }
      return template.build(match, line, lineAt, bytes, base) as SelectedFields<K>;
    }
    const result = parseLine(bytes.toString('utf8', start, end));
    if (typeof result !== 'string') {
      const own = text === undefined ? line : bytes.toString('latin1', start, end);
      if (!NOT_PLAIN.test(own)) learn(result, own);
    }
    // The whole object: it holds the selected fields, as JSON.parse gives them.
    return result as SelectedFields<K> | SkipReason;
  };
}

function keyLiteral(key: string): string {
  return `"${key.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')}":`;
}

/** A non-empty object of primitives with distinct plain keys (its key order can be part of a template). */
function isFlatObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  if (keys.length === 0 || keys.some((key) => !PLAIN_KEY.test(key) || key === '__proto__')) return false;
  return Object.values(value).every((v) => v === null || typeof v !== 'object');
}

/** `10 ** k` for the fraction lengths the fast path divides by: every one exact in a double (k <= 22). */
const POWERS_OF_TEN: number[] = [1];
for (let k = 1; k <= MAX_EXACT_DIGITS; k++) POWERS_OF_TEN.push(POWERS_OF_TEN[k - 1]! * 10);

/**
 * A JSON number's value (the text already matched the grammar): integers and plain decimals of up
 * to 15 significant digits by hand, the rest (longer, or with an exponent) by `Number`, the
 * conversion JSON.parse uses. The hand path is exact: the digits make an integer below 2^53 and the
 * power of ten is exact, so their quotient is the correctly rounded value, which is what `Number`
 * gives for the text (Clinger's fast path).
 */
function number(raw: string): number {
  const negative = raw.charCodeAt(0) === 0x2d;
  let n = 0;
  let digits = 0;
  let point = -1;
  for (let k = negative ? 1 : 0; k < raw.length; k++) {
    const c = raw.charCodeAt(k);
    if (c === 0x2e) {
      point = k;
      continue;
    }
    const d = c - 0x30;
    if (d < 0 || d > 9) return Number(raw); // an exponent
    n = n * 10 + d;
    digits += 1;
  }
  if (digits > MAX_EXACT_DIGITS) return Number(raw);
  if (point !== -1) n /= POWERS_OF_TEN[raw.length - 1 - point]!;
  return negative ? -n : n;
}
