import { describe, expect, it } from 'vitest';
import { ContextCheck, CONTEXT_CACHE_TTL_MS } from '../../../../src/app/attempt/context-check.js';
import { NO_USAGE } from '../../../../src/ollama/verbose-stats.js';
import type { ContextEvidence } from '../../../../src/policy/prompt-fit.js';

const usage = (prompt_tokens: number | null) => ({ ...NO_USAGE, prompt_tokens });

function setup(evidence: ContextEvidence | null = { loaded: 4096, numCtx: null, modelMax: null }) {
  let now = 1_000_000;
  const lookups: string[] = [];
  const check = new ContextCheck({
    clock: () => now,
    lookup: async (model) => {
      lookups.push(model);
      return evidence;
    },
  });
  return { check, lookups, advance: (ms: number) => void (now += ms) };
}

describe('ContextCheck', () => {
  it('warns with the numbers when the prompt filled the context', async () => {
    const { check } = setup();
    const warning = await check.warningFor('llama3.2', usage(4096));
    expect(warning?.kind).toBe('prompt_may_be_truncated');
    expect(warning?.message).toMatch(/^prompt used 4096 tokens of a 4096-token context/);
    expect(warning?.message).toContain('OLLAMA_CONTEXT_LENGTH');
    expect(warning?.message).toContain('num_ctx');
  });

  it('never looks anything up for a small prompt, nor when the CLI reported no usage', async () => {
    const { check, lookups } = setup();
    expect(await check.warningFor('llama3.2', usage(300))).toBeNull();
    expect(await check.warningFor('llama3.2', usage(null))).toBeNull();
    expect(lookups).toEqual([]);
  });

  it('looks a model up once per TTL, shared by concurrent runs and by its name spellings', async () => {
    const { check, lookups, advance } = setup();
    const all = await Promise.all([
      check.warningFor('llama3.2', usage(4096)),
      check.warningFor('llama3.2:latest', usage(1500)),
      check.warningFor('llama3.2', usage(4000)),
    ]);
    expect(all.map((w) => w !== null)).toEqual([true, false, true]);
    expect(await check.warningFor('llama3.2', usage(300))).toBeNull(); // judged from the cache, no lookup
    expect(lookups).toHaveLength(1);
    advance(CONTEXT_CACHE_TTL_MS);
    await check.warningFor('llama3.2', usage(2000));
    expect(lookups).toHaveLength(2);
  });

  it('judges a small prompt against a cached small context (a Modelfile num_ctx of 1024)', async () => {
    const { check } = setup({ loaded: 1024, numCtx: null, modelMax: null });
    expect(await check.warningFor('tiny', usage(2000))).not.toBeNull(); // looked up
    expect((await check.warningFor('tiny', usage(1024)))?.message).toMatch(/1024 tokens of a 1024-token context/);
  });

  it('when the CLI cannot tell, only claims an exact default-context count, and caches that it could not', async () => {
    const { check, lookups } = setup(null);
    expect(await check.warningFor('m', usage(3000))).toBeNull();
    expect((await check.warningFor('m', usage(4096)))?.message).toContain('default contexts');
    expect(lookups).toHaveLength(1);
  });
});
