/**
 * A forward step of the wall clock deletes no history. Retention of runs.jsonl's rotated files
 * (90 days) and of `answers/` (7 days) judges ages by a clock kept in the data dir that moves at
 * most a day at once: a server whose clock jumped 100 days (libfaketime) deletes nothing at its
 * first write.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeSandbox, startServer } from '../e2e/harness.js';

const LIBFAKETIME = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/faketime/libfaketime.so.1'].find((file) =>
  existsSync(file),
);
if (LIBFAKETIME === undefined) console.warn('clock-step tests skipped: libfaketime is not installed (apt-get install faketime)');

const DAY = 86_400_000;

/** A rotated log file whose records end `daysAgo` days before now (its mtime too). */
function logFile(dir: string, name: string, daysAgo: number): string {
  const endMs = Date.now() - daysAgo * DAY;
  const line = JSON.stringify({ v: 2, ts: new Date(endMs).toISOString(), run_id: name, status: 'ok' });
  writeFileSync(path.join(dir, name), `${line}\n`, { mode: 0o600 });
  utimesSync(path.join(dir, name), endMs / 1000, endMs / 1000);
  return name;
}

const dated = (daysAgo: number) => `runs-${new Date(Date.now() - daysAgo * DAY).toISOString().slice(0, 10)}-001.jsonl`;

describe.skipIf(LIBFAKETIME === undefined)('a forward step of the wall clock', () => {
  it('a server whose clock jumped 100 days deletes no rotated runs.jsonl and no answer file at its first write', async () => {
    const sandbox = makeSandbox();
    const dir = sandbox.telemetryDir;
    const logs = [
      logFile(dir, 'runs.jsonl', 12),
      logFile(dir, dated(10), 10),
      logFile(dir, dated(5), 5),
      logFile(dir, dated(1), 1),
    ];
    const answersDir = path.join(dir, 'answers');
    mkdirSync(answersDir, { mode: 0o700 });
    const answers = [1, 2, 3, 4, 5].map((day) => {
      const name = `earlier-${day}.txt`;
      writeFileSync(path.join(answersDir, name), 'an answer read days ago', { mode: 0o600 });
      utimesSync(path.join(answersDir, name), (Date.now() - day * DAY) / 1000, (Date.now() - day * DAY) / 1000);
      return name;
    });
    const big = { model: 'llama3.2', prompt: 'long answer @fake:flood_bytes=100000' };

    // Yesterday's server, on the right clock: it keeps retention's clock in the data dir.
    const before = await startServer(sandbox);
    const first = await before.run(big);
    await before.close();
    answers.push(path.basename(first.metadata.output_file!.path));

    // Today the wall clock is 100 days ahead.
    const stepped = await startServer(sandbox, {
      LD_PRELOAD: LIBFAKETIME!,
      FAKETIME: '+100d',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    });
    const after = await stepped.run(big);
    await stepped.close(); // waits for the log's retention
    const lastLine = readFileSync(path.join(dir, logs.at(-1)!), 'utf8')
      .trim()
      .split('\n')
      .at(-1)!;
    expect(Date.parse((JSON.parse(lastLine) as { ts: string }).ts)).toBeGreaterThan(Date.now() + 99 * DAY); // the step took

    expect(readdirSync(dir).filter((name) => name.startsWith('runs'))).toEqual(expect.arrayContaining(logs));
    expect(readdirSync(answersDir)).toEqual(
      expect.arrayContaining([...answers, path.basename(after.metadata.output_file!.path)]),
    );
    const clock = JSON.parse(readFileSync(path.join(dir, 'retention-clock.json'), 'utf8')) as { as_of: number };
    expect(clock.as_of).toBeLessThanOrEqual(Date.now() + DAY);
  });
});
