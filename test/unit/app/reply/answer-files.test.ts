import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AnswerFiles } from '../../../../src/app/reply/answer-files.js';
import { ledgerReserve } from '../../../../src/app/reply/disk-room.js';
import { fitReply } from '../../../../src/app/reply/reply-fit.js';
import { replyBudget, REPLY_ANSWER_BYTES } from '../../../../src/app/reply/reply-budget.js';
import { RetentionClockFile } from '../../../../src/telemetry/retention-clock.js';
import { tempDir } from '../../../helpers/temp-dir.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const MiB = 1024 * 1024;

describe('AnswerFiles: answers kept whole for the caller', () => {
  it('writes the text whole, readable by its owner only, and says where and how big', async () => {
    const dir = path.join(tempDir('answer-files-'), 'answers');
    const files = new AnswerFiles({ dir });
    const saved = await files.save('run-1.txt', 'héllo\u0001');
    expect(saved).toEqual({ path: path.join(dir, 'run-1.txt'), chars: 6, bytes: 7 });
    expect(readFileSync(saved.path, 'utf8')).toBe('héllo\u0001');
    expect(statSync(saved.path).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('refuses a name that is not a plain .txt file name, and never overwrites a file', async () => {
    const files = new AnswerFiles({ dir: tempDir('answer-files-') });
    await expect(files.save('../x.txt', 'a')).rejects.toThrow(/not a plain/);
    await expect(files.save('x.json', 'a')).rejects.toThrow(/not a plain/);
    await files.save('same.txt', 'first');
    await expect(files.save('same.txt', 'second')).rejects.toThrow(/EEXIST/);
  });

  it('never deletes a file within an hour of its reply, however many; past it, keeps the newest 100', async () => {
    const dir = tempDir('answer-files-');
    let now = Date.UTC(2026, 10, 20);
    const files = new AnswerFiles({ dir, clock: () => now });
    const saved = [];
    for (let i = 0; i < 130; i += 1) saved.push((await files.save(`job-${i}.txt`, `answer ${i}`)).path);
    await files.replied(saved);
    expect(readdirSync(dir)).toHaveLength(130);
    now += HOUR - 1000;
    await files.save('later.txt', 'x');
    expect(readdirSync(dir)).toHaveLength(131);
    now += 2000; // the 130 are past their grace now; the later one is not
    await files.save('last.txt', 'y');
    expect(readdirSync(dir)).toHaveLength(102);
    expect(readdirSync(dir)).toEqual(expect.arrayContaining(['later.txt', 'last.txt']));
  });

  it('holds a file until the reply naming it is built, then dates it: its grace counts from the reply, in every process', async () => {
    const dir = tempDir('answer-files-');
    let now = Date.UTC(2026, 10, 20);
    const clock = () => now;
    const batch = new AnswerFiles({ dir, clock, maxFiles: 0 });
    const other = new AnswerFiles({ dir, clock, maxFiles: 0 }); // another server on the same data dir
    const first = await batch.save('first-job.txt', 'a');
    now += 50 * MIN;
    await batch.refreshHeld(); // what its timer does while the batch runs
    now += 50 * MIN;
    await other.save('o1.txt', 'o'); // 100 minutes after the save, 50 after the refresh
    expect(existsSync(first.path)).toBe(true);
    await batch.refreshHeld();
    now += 3 * HOUR;
    await batch.save('own-prune.txt', 'b'); // held: its own process never prunes it either
    expect(existsSync(first.path)).toBe(true);
    await batch.replied([first.path]); // the batch's reply is built
    expect(statSync(first.path).mtimeMs).toBe(now);
    now += HOUR - 1;
    await other.save('o2.txt', 'o');
    expect(existsSync(first.path)).toBe(true);
    now += 2;
    await other.save('o3.txt', 'o');
    expect(existsSync(first.path)).toBe(false);
  });

  it('a file whose reply is never built is held a day at most, then ages as any other', async () => {
    const dir = tempDir('answer-files-');
    let now = Date.UTC(2026, 10, 20);
    const files = new AnswerFiles({ dir, clock: () => now, maxFiles: 0 });
    const orphan = await files.save('orphan.txt', 'a');
    now += DAY - MIN;
    await files.refreshHeld();
    expect(statSync(orphan.path).mtimeMs).toBe(now);
    now += 2 * MIN;
    await files.refreshHeld(); // held over a day: let go, not dated again
    now += HOUR + 1;
    await files.save('next.txt', 'b');
    expect(existsSync(orphan.path)).toBe(false);
  });

  it('past the grace: nothing older than maxAgeMs, at most maxBytes', async () => {
    const dir = tempDir('answer-files-');
    const now = Date.UTC(2026, 10, 20);
    const aged = (name: string, ageMs: number, size: number) => {
      writeFileSync(path.join(dir, name), 'x'.repeat(size));
      utimesSync(path.join(dir, name), (now - ageMs) / 1000, (now - ageMs) / 1000);
    };
    aged('recent.txt', 2 * HOUR, 40);
    aged('older.txt', 3 * HOUR, 40);
    aged('stale.txt', 8 * DAY, 1);
    aged('young.txt', 10 * MIN, 500); // within its grace: neither deleted nor counted
    writeFileSync(path.join(dir, 'other.log'), 'not ours');
    await new AnswerFiles({ dir, maxBytes: 50, clock: () => now }).save('new.txt', 'y');
    expect(readdirSync(dir).sort()).toEqual(['new.txt', 'other.log', 'recent.txt', 'young.txt']);
  });

  it('a forward step of 100 days deletes nothing at the first save, and one day of age an hour from then', async () => {
    const dir = tempDir('answer-files-');
    const retentionClock = new RetentionClockFile(path.join(dir, 'clock.json'));
    const answers = path.join(dir, 'answers');
    let now = Date.UTC(2026, 10, 20);
    const files = new AnswerFiles({ dir: answers, clock: () => now, retentionClock });
    for (let day = 1; day <= 5; day += 1) {
      await files.replied([(await files.save(`day-${day}.txt`, 'a')).path]);
      now += DAY;
    }
    now += 100 * DAY;
    await files.save('after-step.txt', 'b');
    expect(readdirSync(answers)).toHaveLength(6);
    for (let hour = 1; hour <= 3; hour += 1) {
      now += HOUR;
      await files.save(`hour-${hour}.txt`, 'c');
    }
    // Three hours on, ages are judged three days further: only day-1 (judged 8 days old) is past 7 days.
    expect(readdirSync(answers).filter((name) => name.startsWith('day-'))).toEqual([
      'day-2.txt',
      'day-3.txt',
      'day-4.txt',
      'day-5.txt',
    ]);
  });

  it('a file dated ahead of the clock (it stepped back) gets its grace and age from now, not from its date', async () => {
    const dir = tempDir('answer-files-');
    let now = Date.UTC(2026, 10, 20);
    writeFileSync(path.join(dir, 'ahead.txt'), 'x');
    utimesSync(path.join(dir, 'ahead.txt'), (now + 30 * DAY) / 1000, (now + 30 * DAY) / 1000);
    const files = new AnswerFiles({ dir, maxFiles: 0, clock: () => now });
    await files.save('a.txt', 'y');
    expect(statSync(path.join(dir, 'ahead.txt')).mtimeMs).toBe(now);
    now += HOUR + 1;
    await files.save('b.txt', 'y');
    expect(existsSync(path.join(dir, 'ahead.txt'))).toBe(false);
  });

  it('refuses a file that would leave the disk less than the reserve, and writes nothing', async () => {
    const dir = tempDir('answer-files-');
    const free = 70 * MiB;
    const files = new AnswerFiles({ dir, freeBytes: () => Promise.resolve(free), reserve: () => Promise.resolve(64 * MiB) });
    await expect(files.save('big.txt', 'z'.repeat(7 * MiB))).rejects.toThrow(
      'only 70.0 MiB free on the disk, and 64.0 MiB are kept for the retry ledger and runs.jsonl',
    );
    expect(readdirSync(dir)).toEqual([]);
    await files.save('fits.txt', 'z'.repeat(5 * MiB));
    expect(readdirSync(dir)).toEqual(['fits.txt']);
  });
});

describe('ledgerReserve: the room answer files leave', () => {
  it('is 64 MiB, or 4 times the ledger files when they are larger', async () => {
    const dir = tempDir('answer-files-');
    expect(await ledgerReserve(dir)).toBe(64 * MiB);
    mkdirSync(path.join(dir, 'state.tasks'));
    writeFileSync(path.join(dir, 'state.json'), Buffer.alloc(MiB));
    writeFileSync(path.join(dir, 'state.tasks', '00.json'), Buffer.alloc(16 * MiB));
    expect(await ledgerReserve(dir)).toBe(4 * 17 * MiB);
  });
});

describe('fitReply: what the reply carries, and the file that keeps the rest', () => {
  const input = (answer: string, share = 1) => ({ runId: 'r1', answer, thinking: '', includeThinking: false, share });

  it('a small answer: whole in the reply, no file', async () => {
    const dir = tempDir('answer-files-');
    const reply = await fitReply(input('short answer'), new AnswerFiles({ dir }));
    expect(reply).toMatchObject({ output: 'short answer', outputFile: null, warnings: [] });
    expect(readdirSync(dir)).toEqual([]);
  });

  it('an answer too large for the text content: whole in output, and kept in a file for the clients that read text', async () => {
    const answer = 'a'.repeat(replyBudget(1).textBytes + 1);
    const reply = await fitReply(input(answer), new AnswerFiles({ dir: tempDir('answer-files-') }));
    expect(reply.output).toBe(answer);
    expect(readFileSync(reply.outputFile!.path, 'utf8')).toBe(answer);
  });

  it('an answer too large for the reply: output cut to the budget, the whole answer in the file', async () => {
    const answer = '\u0001'.repeat(REPLY_ANSWER_BYTES); // 6 times the budget once escaped
    const reply = await fitReply(input(answer), new AnswerFiles({ dir: tempDir('answer-files-') }));
    expect(Buffer.byteLength(JSON.stringify(reply.output))).toBeLessThanOrEqual(REPLY_ANSWER_BYTES + 2);
    expect(reply.output.length).toBe(Math.floor(REPLY_ANSWER_BYTES / 6));
    expect(reply.outputFile).toMatchObject({ chars: answer.length, bytes: answer.length });
    expect(readFileSync(reply.outputFile!.path, 'utf8')).toBe(answer);
  });

  it('a job of a batch gets its share of the reply', async () => {
    const answer = 'b'.repeat(100_000);
    const alone = await fitReply(input(answer, 1), new AnswerFiles({ dir: tempDir('answer-files-') }));
    const shared = await fitReply(input(answer, 100), new AnswerFiles({ dir: tempDir('answer-files-') }));
    expect(alone.output).toBe(answer);
    expect(shared.output.length).toBe(replyBudget(100).answerBytes);
    expect(shared.outputFile?.chars).toBe(100_000);
  });

  it('thinking shares the budget after the answer, and is kept whole when cut', async () => {
    const thinking = 't'.repeat(REPLY_ANSWER_BYTES);
    const reply = await fitReply(
      { runId: 'r2', answer: 'a'.repeat(1000), thinking, includeThinking: true, share: 1 },
      new AnswerFiles({ dir: tempDir('answer-files-') }),
    );
    expect(reply.output).toHaveLength(1000);
    expect(reply.thinking).toHaveLength(REPLY_ANSWER_BYTES - 1000);
    expect(readFileSync(reply.thinkingFile!.path, 'utf8')).toBe(thinking);
  });

  it('a disk without room for the answer and the reserve: the reply still fits, the warning says why, no file is left', async () => {
    const dir = tempDir('answer-files-');
    const files = new AnswerFiles({ dir, freeBytes: () => Promise.resolve(3 * MiB) });
    const reply = await fitReply(input('d'.repeat(REPLY_ANSWER_BYTES + 10)), files);
    expect(reply.outputFile).toBeNull();
    expect(reply.warnings).toEqual([
      {
        kind: 'answer_not_saved',
        message: expect.stringContaining(
          '(only 3.0 MiB free on the disk, and 64.0 MiB are kept for the retry ledger and runs.jsonl)',
        ),
      },
    ]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a file that cannot be written: the reply still fits, and a warning says what the caller lacks', async () => {
    const parent = tempDir('answer-files-');
    // A file where the folder should be: the save fails, whoever runs the test.
    writeFileSync(path.join(parent, 'answers'), '');
    const answer = 'c'.repeat(REPLY_ANSWER_BYTES + 10);
    const reply = await fitReply(input(answer), new AnswerFiles({ dir: path.join(parent, 'answers') }));
    expect(reply.output).toHaveLength(REPLY_ANSWER_BYTES);
    expect(reply.outputFile).toBeNull();
    expect(reply.warnings).toEqual([
      { kind: 'answer_not_saved', message: expect.stringMatching(/output holds its first 6291456 characters only/) },
    ]);
    expect(statSync(path.join(parent, 'answers')).isFile()).toBe(true);
  });
});
