import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { execa } from 'execa';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { listRunLogFiles } from '../../../src/telemetry/log-files.js';
import { RETENTION_CLOCK_FILE_NAME } from '../../../src/telemetry/retention-clock.js';
import { tempDir } from '../../helpers/temp-dir.js';

// Same approach as jsonl-appender.multiprocess.test.ts: the children are plain `node` processes,
// so transpile src/telemetry/ file by file into a folder marked `"type": "module"` and let the
// child import run-log.js. That works as long as run-log.ts and what it imports at run time stay
// inside src/telemetry/ (type-only imports from elsewhere vanish when transpiled).
const SRC = fileURLToPath(new URL('../../../src/telemetry/', import.meta.url));
const CHILD = fileURLToPath(new URL('../../fixtures/rotate-child.mjs', import.meta.url));

const CHILDREN = 6;
const PER_CHILD = 500;
const LIMIT = 8 * 1024;
const BIG_EVERY = 125; // 4 lines per child bigger than the limit
const BIG_BYTES = 10 * 1024;
const DATE = '2030-01-02';
const NOW = `${DATE}T03:04:05.000Z`;

let root: string;
let runLogModule: string;

beforeAll(async () => {
  root = tempDir('rotation-multiprocess-');
  const lib = join(root, 'lib');
  await mkdir(lib);
  await writeFile(join(lib, 'package.json'), '{"type":"module"}\n');
  for (const name of (await readdir(SRC)).filter((n) => n.endsWith('.ts'))) {
    const { outputText } = ts.transpileModule(await readFile(join(SRC, name), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
      fileName: name,
    });
    await writeFile(join(lib, name.replace(/\.ts$/, '.js')), outputText);
  }
  runLogModule = join(lib, 'run-log.js');
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

interface Line {
  readonly bytes: number;
  readonly record: { pid: number; child: number; seq: number; size: number; pad: string };
}

describe('RunLog rotation across processes', () => {
  it(`${CHILDREN} processes crossing an ${LIMIT}-byte limit together lose no line and share every new file`, async () => {
    const dir = join(root, 'telemetry');
    const startAt = Date.now() + 500;
    const results = await Promise.all(
      Array.from({ length: CHILDREN }, (_, child) =>
        execa(
          'node',
          [CHILD, runLogModule, dir, `${child}`, `${PER_CHILD}`, `${LIMIT}`, NOW, `${BIG_EVERY}`, `${BIG_BYTES}`, `${startAt}`],
          { reject: false },
        ),
      ),
    );
    for (const result of results)
      expect({ exitCode: result.exitCode, stderr: result.stderr }).toEqual({ exitCode: 0, stderr: '' });

    // Nothing but run log files (and retention's clock) was created, and they form one gapless
    // sequence: every process that crossed the limit of a file computed the same next name.
    const files = await listRunLogFiles(dir);
    expect((await readdir(dir)).sort()).toEqual([...files.map((f) => basename(f)), RETENTION_CLOCK_FILE_NAME].sort());
    expect(files.map((f) => basename(f))).toEqual([
      'runs.jsonl',
      ...Array.from({ length: files.length - 1 }, (_, i) => `runs-${DATE}-${String(i + 1).padStart(3, '0')}.jsonl`),
    ]);

    // Every line of every file is a whole record: none torn, none split across two files.
    const perFile: Line[][] = [];
    for (const file of files) {
      const text = await readFile(file, 'utf8');
      expect(text.endsWith('\n')).toBe(true);
      perFile.push(
        text
          .slice(0, -1)
          .split('\n')
          .map((line) => ({ bytes: Buffer.byteLength(line) + 1, record: JSON.parse(line) as Line['record'] })),
      );
    }
    const lines = perFile.flat();
    expect(lines).toHaveLength(CHILDREN * PER_CHILD);
    for (const { record } of lines) expect(record.pad).toBe(String(record.seq % 10).repeat(record.size));

    // Each (pid, seq) exactly once, and each process's lines in its call order across files.
    const seqsByPid = new Map<number, number[]>();
    for (const { record } of lines) seqsByPid.set(record.pid, [...(seqsByPid.get(record.pid) ?? []), record.seq]);
    expect(seqsByPid.size).toBe(CHILDREN);
    const inOrder = Array.from({ length: PER_CHILD }, (_, i) => i);
    for (const seqs of seqsByPid.values()) expect(seqs).toEqual(inOrder);

    // The size bound of JsonlAppender: a file holds at most max(limit, its largest line) plus one
    // line per other process that was writing at the same moment.
    const largest = Math.max(...lines.map((l) => l.bytes));
    for (const fileLines of perFile) {
      const size = fileLines.reduce((sum, l) => sum + l.bytes, 0);
      const own = Math.max(LIMIT, ...fileLines.map((l) => l.bytes));
      expect(size).toBeLessThanOrEqual(own + (CHILDREN - 1) * largest);
    }

    // The limit was crossed many times, and files were filled rather than started needlessly (as
    // they would be if each process started its own): a file is left only once a line did not
    // fit, so it holds more than `LIMIT - maxSmall` bytes, unless that line was bigger than the
    // limit (allow two such files per big line: the one its writer left, and one more if it
    // raced another writer onto a new file).
    const totalBytes = lines.reduce((sum, l) => sum + l.bytes, 0);
    const bigLines = lines.filter((l) => l.bytes > LIMIT).length;
    const maxSmall = Math.max(...lines.filter((l) => l.bytes <= LIMIT).map((l) => l.bytes));
    expect(bigLines).toBe(CHILDREN * (PER_CHILD / BIG_EVERY));
    expect(files.length).toBeGreaterThan(totalBytes / (LIMIT + (CHILDREN - 1) * largest));
    expect(files.length).toBeLessThanOrEqual(Math.ceil(totalBytes / (LIMIT - maxSmall)) + 2 * bigLines + 1);

    // The children's lines really interleave within files.
    const switches = lines.filter((l, i) => i > 0 && l.record.pid !== lines[i - 1]?.record.pid).length;
    expect(switches).toBeGreaterThan(CHILDREN);
  }, 60_000);
});
