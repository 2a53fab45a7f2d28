import { readFile, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { listRunLogFiles } from '../../../src/telemetry/log-files.js';
import { RunLog } from '../../../src/telemetry/run-log.js';
import { readAll } from '../../helpers/read-all.js';
import { sampleRecord } from '../../helpers/sample-record.js';
import { tempDir } from '../../helpers/temp-dir.js';

let dir: string;
beforeEach(async () => {
  dir = tempDir('run-log-');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const withContent = sampleRecord({ prompt: 'SECRET PROMPT', output: 'SECRET ANSWER' });

describe('RunLog', () => {
  it('writes to <dir>/runs.jsonl', () => {
    expect(new RunLog(dir).path).toBe(join(dir, 'runs.jsonl'));
  });

  it('lists its files: none before the first record, then absolute paths in reading order', async () => {
    const log = new RunLog(relative(process.cwd(), dir), { maxBytes: 1024, onError: (e) => expect.fail(String(e)) });
    expect(log.dir).toBe(dir);
    expect(log.path).toBe(join(dir, 'runs.jsonl'));
    expect(await listRunLogFiles(log.dir)).toEqual([]);
    await log.record(sampleRecord({ error: 'x'.repeat(600) }));
    await log.record(sampleRecord({ error: 'x'.repeat(600) }));
    const files = await listRunLogFiles(log.dir);
    expect(files).toHaveLength(2);
    expect(files[0]).toBe(log.path);
    expect(files[1]).toMatch(/^\/.*\/runs-\d{4}-\d{2}-\d{2}-001\.jsonl$/);
  });

  it('strips prompt and output by default', async () => {
    const log = new RunLog(dir);
    await log.record(withContent);
    const text = await readFile(log.path, 'utf8');
    expect(text).not.toContain('SECRET');
    const { records } = await readAll(log.path);
    const { prompt: _prompt, output: _output, ...rest } = withContent;
    expect(records).toEqual([rest]);
    expect(records[0]).not.toHaveProperty('prompt');
    expect(records[0]).not.toHaveProperty('output');
  });

  it('keeps prompt and output with logContent', async () => {
    const log = new RunLog(dir, { logContent: true });
    await log.record(withContent);
    const { records } = await readAll(log.path);
    expect(records).toEqual([withContent]);
  });

  it('does not mutate the caller’s record', async () => {
    const record = { ...withContent };
    await new RunLog(dir).record(record);
    expect(record).toEqual(withContent);
  });

  it('reports write failures to onError and resolves', async () => {
    const errors: unknown[] = [];
    const log = new RunLog(join(dir, 'runs.jsonl', 'x'), { onError: (e) => errors.push(e) });
    await new RunLog(dir).record(sampleRecord()); // makes <dir>/runs.jsonl a file
    await expect(log.record(sampleRecord())).resolves.toBeUndefined();
    expect(errors).toHaveLength(1);
  });
});
