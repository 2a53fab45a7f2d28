/**
 * A file a reply names is there when the caller reads it. `answers/` keeps at most 100 files past
 * their grace, but never deletes one within an hour of the reply that names it: not when two servers
 * share the data dir, not when one batch alone saves more than 100 (two files a job with
 * include_thinking), and not while a batch's reply is still being built.
 */
import { readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReply } from '../../src/app/reply/run-reply.js';
import { makeSandbox, startServer, type RunningServer, type Sandbox } from './harness.js';

interface BatchReply {
  readonly summary: { total: number; ok: number };
  readonly results: RunReply[];
}

const JOBS = 60;
const ANSWER_BYTES = 120_000; // more than a 60-job batch's share of the reply: each answer is cut and kept in a file

async function batch(server: RunningServer, prompt: string, extra: Record<string, unknown> = {}): Promise<BatchReply> {
  const jobs = Array.from({ length: JOBS }, (_, i) => ({
    model: 'llama3.2',
    prompt: `${prompt} ${i} @fake:flood_bytes=${ANSWER_BYTES}`,
    ...extra,
  }));
  const result = await server.client.callTool({ name: 'ollama_run_many', arguments: { jobs, concurrency: 8 } }, undefined, {
    timeout: 240_000,
  });
  return result.structuredContent as unknown as BatchReply;
}

/** Every file the replies name, with the size they say it has. */
function named(replies: readonly BatchReply[]): { path: string; bytes: number }[] {
  return replies.flatMap((reply) =>
    reply.results.flatMap((job) => [job.output_file, job.thinking_file].flatMap((file) => (file ? [file] : []))),
  );
}

/** The named files missing, or not whole, when the replies arrive. */
function lost(files: readonly { path: string; bytes: number }[]): string[] {
  return files.filter((file) => statSync(file.path, { throwIfNoEntry: false })?.size !== file.bytes).map((file) => file.path);
}

describe('answer files named by a reply survive retention until the caller can read them', () => {
  let sandbox: Sandbox;
  const servers: RunningServer[] = [];
  beforeAll(async () => {
    sandbox = makeSandbox();
    servers.push(await startServer(sandbox), await startServer(sandbox));
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });
  const answersDir = () => path.join(sandbox.telemetryDir, 'answers');

  it('two servers on one data dir, each a 60-job batch of 120,000-byte answers: all 120 named files are there', async () => {
    const replies = await Promise.all(servers.map((server, i) => batch(server, `server ${i} job`)));
    for (const reply of replies) expect(reply.summary).toMatchObject({ total: JOBS, ok: JOBS });
    const files = named(replies);
    expect(files).toHaveLength(2 * JOBS);
    expect(lost(files)).toEqual([]);
  });

  it('one 60-job batch with include_thinking (two files a job): all 120 named files are there', async () => {
    const reply = await batch(servers[0]!, 'thinking job', { model: 'qwen3:8b', include_thinking: true });
    expect(reply.summary).toMatchObject({ total: JOBS, ok: JOBS });
    const files = named([reply]);
    expect(files.filter((file) => file.path.endsWith('.thinking.txt'))).toHaveLength(JOBS);
    expect(files).toHaveLength(2 * JOBS);
    expect(lost(files)).toEqual([]);
  });

  it('files past their hour of grace are still pruned to the newest 100 at the next save', async () => {
    const dir = answersDir();
    const twoHoursAgo = (Date.now() - 2 * 3_600_000) / 1000;
    for (const name of readdirSync(dir)) utimesSync(path.join(dir, name), twoHoursAgo, twoHoursAgo);
    for (let i = 0; i < 20; i += 1) writeFileSync(path.join(dir, `older-${i}.txt`), 'x');
    for (let i = 0; i < 20; i += 1) utimesSync(path.join(dir, `older-${i}.txt`), twoHoursAgo - 60, twoHoursAgo - 60);
    expect(readdirSync(dir)).toHaveLength(260);
    const reply = await servers[1]!.run({ model: 'llama3.2', prompt: `one more @fake:flood_bytes=${ANSWER_BYTES}` });
    expect(reply.metadata.output_file).not.toBeNull();
    const left = readdirSync(dir);
    expect(left).toHaveLength(101); // the 100 newest past their grace, and the new one
    expect(left.filter((name) => name.startsWith('older-'))).toEqual([]);
    expect(left).toContain(path.basename(reply.metadata.output_file!.path));
  });
});
