import { readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AnswerFiles } from '../../../src/app/answer-files.js';
import { fitReply } from '../../../src/app/reply-fit.js';
import { replyBudget, REPLY_ANSWER_BYTES } from '../../../src/app/reply-budget.js';
import { tempDir } from '../../helpers/temp-dir.js';

const DAY = 86_400_000;

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

  it('keeps at most maxFiles, newest first, and nothing older than maxAgeMs', async () => {
    const dir = tempDir('answer-files-');
    const now = Date.UTC(2026, 10, 20);
    for (let i = 0; i < 5; i += 1) {
      writeFileSync(path.join(dir, `old-${i}.txt`), 'x');
      const mtime = (now - (i + 1) * 60_000) / 1000;
      utimesSync(path.join(dir, `old-${i}.txt`), mtime, mtime);
    }
    writeFileSync(path.join(dir, 'stale.txt'), 'x');
    utimesSync(path.join(dir, 'stale.txt'), (now - 8 * DAY) / 1000, (now - 8 * DAY) / 1000);
    writeFileSync(path.join(dir, 'other.log'), 'not ours');
    const files = new AnswerFiles({ dir, maxFiles: 3, clock: () => now });
    await files.save('new.txt', 'y');
    expect(readdirSync(dir).sort()).toEqual(['new.txt', 'old-0.txt', 'old-1.txt', 'other.log']);
  });

  it('keeps at most maxBytes, the file just written always', async () => {
    const dir = tempDir('answer-files-');
    writeFileSync(path.join(dir, 'a.txt'), 'x'.repeat(60));
    const files = new AnswerFiles({ dir, maxBytes: 50 });
    await files.save('b.txt', 'y'.repeat(80));
    expect(readdirSync(dir)).toEqual(['b.txt']);
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
