/**
 * No reply too big to arrive, and nothing lost. The SDK's stdio client (and the clients built on it)
 * closes the connection on a line over 10 MiB; a reply must stay under 8 MiB whatever the models
 * printed, and an answer the reply cannot carry whole is kept whole in a file the reply names.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { RunReply } from '../../src/app/reply/run-reply.js';
import { readRuns, useServer, type RunningServer } from './harness.js';

const MiB = 1024 * 1024;

interface BatchReply {
  readonly summary: { total: number; ok: number };
  readonly results: RunReply[];
}

/** The call, and the size of the line it came back in (the JSON-RPC envelope is a few bytes more). */
async function call(server: RunningServer, name: string, args: Record<string, unknown>) {
  const result = await server.client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  const bytes = Buffer.byteLength(JSON.stringify({ jsonrpc: '2.0', id: 1, result }));
  const text = (result.content as { text: string }[]).map((c) => c.text).join('\n');
  return { structured: result.structuredContent as unknown, bytes, text };
}

describe('large answers over stdio, through the SDK client', () => {
  const server = useServer({ OLLAMA_MCP_MAX_OUTPUT_BYTES: '8000000', OLLAMA_MCP_CONCURRENCY: '8' });

  /** runs.jsonl lines of the last `n` attempts. */
  const lastLines = (n: number) =>
    readRuns(server.sandbox)
      .filter((r) => r.kind !== 'control')
      .slice(-n);

  it('six jobs of 0.9 MB: the reply arrives under 8 MiB, every answer whole in it, the server keeps serving', async () => {
    const jobs = Array.from({ length: 6 }, (_, i) => ({ model: 'llama3.2', prompt: `job ${i} @fake:flood_bytes=900000` }));
    const { structured, bytes, text } = await call(server, 'ollama_run_many', { jobs, concurrency: 6 });
    const batch = structured as BatchReply;
    expect(bytes).toBeLessThan(8 * MiB);
    expect(batch.summary).toMatchObject({ total: 6, ok: 6 });
    for (const job of batch.results) expect(job.output.length).toBeGreaterThan(899_000);
    // The caller received each answer whole; the text content shows its start only, and names the
    // file that keeps it for the clients that read text.
    const lines = lastLines(6);
    expect(new Set(lines.map((l) => l.output_file)).size).toBe(6);
    for (const [i, line] of lines.entries()) {
      expect(line, `line ${i}`).not.toHaveProperty('returned_output_chars');
      expect(readFileSync(line.output_file as string, 'utf8')).toBe(batch.results[0]!.output); // the fake floods the same text
      expect(text).toContain(`the whole answer is in structuredContent.output and the file ${line.output_file as string}`);
    }
    const after = await call(server, 'ollama_run', { model: 'llama3.2', prompt: 'still there?' });
    expect((after.structured as RunReply).status).toBe('ok');
  });

  it('one 5.5 MB answer (the output cap raised): it arrives whole, under 8 MiB', async () => {
    const { structured, bytes } = await call(server, 'ollama_run', {
      model: 'llama3.2',
      prompt: 'big @fake:flood_bytes=5500000',
    });
    const reply = structured as RunReply;
    expect(bytes).toBeLessThan(8 * MiB);
    expect(reply.status).toBe('ok');
    expect(reply.output.length).toBeGreaterThan(5_499_000);
    expect(reply).not.toHaveProperty('output_file');
    expect(lastLines(1)[0]).toMatchObject({ output_chars: reply.output.length });
  });

  it('ten jobs of 0.9 MB: each carries its share, says it was cut and where the whole answer is; runs.jsonl says what the caller got', async () => {
    const jobs = Array.from({ length: 10 }, (_, i) => ({ model: 'llama3.2', prompt: `cut ${i} @fake:flood_bytes=900000` }));
    const { structured, bytes } = await call(server, 'ollama_run_many', { jobs, concurrency: 8 });
    const batch = structured as BatchReply;
    expect(bytes).toBeLessThan(8 * MiB);
    expect(batch.summary).toMatchObject({ total: 10, ok: 10 });
    const lines = lastLines(10);
    for (const job of batch.results) {
      expect(job.output.length).toBeLessThan(700_000);
      expect(job.next).toMatch(/^The answer is cut to fit the reply: read all of it \(\d+ bytes\) from \//);
      const whole = readFileSync(job.output_file!.path, 'utf8');
      expect(whole.startsWith(job.output)).toBe(true);
      expect(whole.length).toBe(job.output_file!.chars);
      expect(lines).toContainEqual(
        expect.objectContaining({
          output_chars: whole.length,
          returned_output_chars: job.output.length,
          output_file: job.output_file!.path,
        }),
      );
    }
  });

  it('control characters (6 bytes each once escaped) are cleaned out of answers, so they cannot multiply a reply', async () => {
    const mixed = 'a%01'.repeat(249_000); // 249,000 letters, each followed by a \u0001
    const jobs = Array.from({ length: 3 }, () => ({ model: 'llama3.2', prompt: `@fake:answer=${mixed}` }));
    const { structured, bytes } = await call(server, 'ollama_run_many', { jobs });
    const batch = structured as BatchReply;
    expect(bytes).toBeLessThan(8 * MiB);
    expect(batch.results.map((r) => [r.status, r.output.length])).toEqual(Array(3).fill(['ok', 249_000]));
    expect(batch.results.every((r) => !r.output.includes('\u0001'))).toBe(true);
  });
});
