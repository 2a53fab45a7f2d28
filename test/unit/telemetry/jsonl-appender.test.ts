import { appendFile, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { JsonlAppender, toJsonLine } from '../../../src/telemetry/jsonl-appender.js';
import { readAll } from '../../helpers/read-all.js';
import { sampleRecord } from '../../helpers/sample-record.js';
import { tempDir } from '../../helpers/temp-dir.js';

let dir: string;
let file: string;

beforeEach(async () => {
  dir = tempDir('jsonl-appender-');
  file = join(dir, 'nested', 'deeper', 'runs.jsonl');
});
afterEach(async () => {
  vi.restoreAllMocks();
  await rm(dir, { recursive: true, force: true });
});

function failOnError(): (error: unknown) => void {
  return (error) => {
    throw new Error(`unexpected onError: ${String(error)}`);
  };
}

describe('JsonlAppender', () => {
  it('round-trips records, one line each, creating the directory and a 0600 file', async () => {
    const errors: unknown[] = [];
    const appender = new JsonlAppender(file, { onError: (e) => errors.push(e) });
    const records = [
      sampleRecord(),
      sampleRecord({ run_id: 'r-2', status: 'timeout', timed_out: true, error: 'line1\nline2\r\n\ttab' }),
      sampleRecord({ run_id: 'r-3', model: 'llama3.2 \u2028\u2029 "quoted" ünï 😀', prompt: 'a\nb', output: '{"x":1}\n' }),
    ];
    for (const record of records) await appender.append(record);

    expect(errors).toEqual([]);
    const text = await readFile(file, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    expect(text.split('\n')).toHaveLength(records.length + 1);
    expect(text).not.toMatch(/[\u2028\u2029]/);
    const { records: read, summary } = await readAll(file);
    expect(read).toEqual(records);
    expect(summary).toEqual({ records: 3, invalid: 0, blank: 0 });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('after a torn last line, waits without blocking and keeps call order for the appends behind it', async () => {
    await appendFile(join(dir, 'torn.jsonl'), '{"seq":0}\n{"cut":');
    const torn = join(dir, 'torn.jsonl');
    const appender = new JsonlAppender(torn, { onError: failOnError() });
    const first = appender.append({ seq: 1 });
    const second = appender.append({ seq: 2 });
    // The tail may still be growing (another process's write): nothing is written yet.
    expect(await readFile(torn, 'utf8')).toBe('{"seq":0}\n{"cut":');
    await Promise.all([first, second]);
    expect(await readFile(torn, 'utf8')).toBe('{"seq":0}\n{"cut":\n{"seq":1}\n{"seq":2}\n');
    await appender.append({ seq: 3 });
    expect((await readFile(torn, 'utf8')).endsWith('{"seq":2}\n{"seq":3}\n')).toBe(true);
  });

  it('keeps call order under many concurrent appends from one process', async () => {
    const appender = new JsonlAppender(file, { onError: failOnError() });
    // Mixed sizes, so a reordering bug would show up as out-of-order lines.
    const calls = Array.from({ length: 500 }, (_, seq) =>
      appender.append({ seq, pad: 'x'.repeat(seq % 7 === 0 ? 70_000 : seq) }),
    );
    await Promise.all(calls);
    const { records } = await readAll(file);
    expect(records.map((r) => r.seq)).toEqual(Array.from({ length: 500 }, (_, i) => i));
  });

  it('does not glue a record onto a torn last line, and the reader skips the torn line', async () => {
    const appender = new JsonlAppender(file, { onError: failOnError() });
    await appender.append(sampleRecord({ run_id: 'before' }));
    // A writer killed mid-write: part of a record, no newline.
    await appendFile(file, '{"v":1,"ts":"2025-11-22T10:1');
    await appender.append(sampleRecord({ run_id: 'after' }));

    const lines = (await readFile(file, 'utf8')).split('\n');
    expect(lines[1]).toBe('{"v":1,"ts":"2025-11-22T10:1');
    const { records, skipped, summary } = await readAll(file);
    expect(records.map((r) => r.run_id)).toEqual(['before', 'after']);
    expect(skipped).toEqual([{ lineNumber: 2, reason: 'invalid_json', bytes: 28 }]);
    expect(summary).toEqual({ records: 2, invalid: 1, blank: 0 });
  });

  it('waits for another process still writing its line instead of taking it for torn', async () => {
    const appender = new JsonlAppender(file, { onError: failOnError() });
    await appender.append({ n: 1 });
    // Another writer's big line, visible half-written; it completes 60 ms later.
    await appendFile(file, '{"n":2,"pad":"');
    const finishing = new Promise((resolve) => setTimeout(resolve, 60)).then(() => appendFile(file, 'xyz"}\n'));
    await appender.append({ n: 3 });
    await finishing;
    expect(await readFile(file, 'utf8')).toBe('{"n":1}\n{"n":2,"pad":"xyz"}\n{"n":3}\n');
  });

  it('adds no newline to a file that ends cleanly, nor to an empty file', async () => {
    const flat = join(dir, 'runs.jsonl');
    await writeFile(flat, '');
    const appender = new JsonlAppender(flat, { onError: failOnError() });
    await appender.append({ a: 1 });
    await appender.append({ a: 2 });
    expect(await readFile(flat, 'utf8')).toBe('{"a":1}\n{"a":2}\n');
  });

  it('recreates the file when it is deleted or replaced between appends', async () => {
    const appender = new JsonlAppender(file, { onError: failOnError() });
    await appender.append({ n: 1 });
    await unlink(file);
    await appender.append({ n: 2 });
    expect(await readFile(file, 'utf8')).toBe('{"n":2}\n');

    await rename(file, `${file}.1`); // rotated away by someone
    await writeFile(file, '{"n":"new file"}\n');
    await appender.append({ n: 3 });
    expect(await readFile(file, 'utf8')).toBe('{"n":"new file"}\n{"n":3}\n');
  });

  it('reports an I/O error to onError and resolves (directory path is a file)', async () => {
    const blocker = join(dir, 'not-a-dir');
    await writeFile(blocker, 'i am a file');
    const errors: unknown[] = [];
    const appender = new JsonlAppender(join(blocker, 'runs.jsonl'), { onError: (e) => errors.push(e) });

    await expect(appender.append(sampleRecord())).resolves.toBeUndefined();
    expect(errors).toHaveLength(1);
    expect((errors[0] as NodeJS.ErrnoException).code).toBe('ENOTDIR');

    // The queue survives the failure: later appends still run (and still fail the same way).
    await appender.append({ again: true });
    expect(errors).toHaveLength(2);
  });

  it('by default reports errors on stderr, never stdout', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const stdout = vi.spyOn(process.stdout, 'write');
    const blocker = join(dir, 'not-a-dir');
    await writeFile(blocker, '');
    await new JsonlAppender(join(blocker, 'runs.jsonl')).append({ a: 1 });

    const ours = stderr.mock.calls.map((call) => String(call[0])).filter((text) => text.includes('could not append'));
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatch(/^ollama-runner-mcp: could not append to .*not-a-dir\/runs\.jsonl: ENOTDIR.*\n$/);
    expect(stdout).not.toHaveBeenCalled();
  });

  it('reports unserialisable records without throwing, and keeps going', async () => {
    const errors: unknown[] = [];
    const appender = new JsonlAppender(file, { onError: (e) => errors.push(e) });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;

    await expect(appender.append(cyclic)).resolves.toBeUndefined();
    await expect(appender.append({ big: 1n })).resolves.toBeUndefined();
    await expect(appender.append([1, 2])).resolves.toBeUndefined();
    await appender.append({ ok: true });

    expect(errors).toHaveLength(3);
    expect(await readFile(file, 'utf8')).toBe('{"ok":true}\n');
  });

  it('survives an onError that throws', async () => {
    const appender = new JsonlAppender(join(dir, 'x', '\0bad'), {
      onError: () => {
        throw new Error('boom');
      },
    });
    await expect(appender.append({ a: 1 })).resolves.toBeUndefined();
    await expect(appender.idle()).resolves.toBeUndefined();
  });
});

describe('toJsonLine', () => {
  it('is one line ending in \\n and parses back', () => {
    const record = { s: 'a\nb\rc\u2028d\u2029e' };
    const line = toJsonLine(record);
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toMatch(/[\n\r\u2028\u2029]/);
    expect(JSON.parse(line)).toEqual(record);
  });
});
