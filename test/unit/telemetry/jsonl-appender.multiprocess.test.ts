import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { execa } from 'execa';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { readAll } from '../../helpers/read-all.js';
import { tempDir } from '../../helpers/temp-dir.js';

// The children are plain `node` processes, which cannot import TypeScript on Node 20. Rather than
// depend on `dist/` (absent or stale when vitest runs alone, and broken whenever any other file in
// src/ does not compile), transpile the appender by itself: it imports only node: builtins.
const APPENDER_TS = fileURLToPath(new URL('../../../src/telemetry/jsonl-appender.ts', import.meta.url));
const CHILD = fileURLToPath(new URL('../../fixtures/append-child.mjs', import.meta.url));

const CHILDREN = 8;
const PER_CHILD = 200;
const BIG_EVERY = 8; // 25 records of each child are big
const BIG_BYTES = 600 * 1024; // above the 512 KiB chunk at which fs.promises.appendFile tears lines

let dir: string;
let appenderModule: string;

beforeAll(async () => {
  dir = tempDir('jsonl-multiprocess-');
  const { outputText } = ts.transpileModule(await readFile(APPENDER_TS, 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    fileName: APPENDER_TS,
  });
  appenderModule = join(dir, 'jsonl-appender.mjs');
  await writeFile(appenderModule, outputText);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('JsonlAppender across processes', () => {
  it(`keeps every line whole with ${CHILDREN} processes appending at once, big lines included`, async () => {
    const file = join(dir, 'telemetry', 'runs.jsonl');
    const startAt = Date.now() + 400; // every child starts appending at the same moment
    const results = await Promise.all(
      Array.from({ length: CHILDREN }, (_, child) =>
        execa('node', [CHILD, appenderModule, file, `${child}`, `${PER_CHILD}`, `${BIG_EVERY}`, `${BIG_BYTES}`, `${startAt}`], {
          reject: false,
        }),
      ),
    );
    for (const result of results)
      expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: '' });

    const { records, summary } = await readAll(file);
    expect(summary).toEqual({ records: CHILDREN * PER_CHILD, invalid: 0, blank: 0 });

    // Every record intact, and each child's records in its own call order.
    const seqsByChild = new Map<number, number[]>();
    for (const record of records) {
      const { child, seq, size, pad } = record as { child: number; seq: number; size: number; pad: string };
      expect(pad).toBe(String(seq % 10).repeat(size));
      seqsByChild.set(child, [...(seqsByChild.get(child) ?? []), seq]);
    }
    const inOrder = Array.from({ length: PER_CHILD }, (_, i) => i);
    expect([...seqsByChild.keys()].sort()).toEqual(Array.from({ length: CHILDREN }, (_, i) => i));
    for (const seqs of seqsByChild.values()) expect(seqs).toEqual(inOrder);

    // The writes really overlapped: the children's lines are interleaved in the file.
    const switches = records.filter((r, i) => i > 0 && r.child !== records[i - 1]?.child).length;
    expect(switches).toBeGreaterThan(CHILDREN);
  }, 60_000);
});
