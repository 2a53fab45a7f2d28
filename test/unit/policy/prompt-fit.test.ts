import { describe, expect, it } from 'vitest';
import {
  judgePromptFit,
  LOOKUP_MIN_PROMPT_TOKENS,
  NO_EVIDENCE,
  shiftedPromptLength,
  worthLookingUp,
} from '../../../src/policy/prompt-fit.js';

const loaded = (n: number) => ({ ...NO_EVIDENCE, loaded: n });

describe('shiftedPromptLength (llama-server, Ollama v0.30.11+)', () => {
  it('keeps num_keep and about half of the rest, as contextShiftPromptLimit does', () => {
    expect(shiftedPromptLength(4096, 5)).toBe(2051);
    expect(shiftedPromptLength(4096, 4)).toBe(2050);
    expect(shiftedPromptLength(2048, 4)).toBe(1026);
    expect(shiftedPromptLength(2, 5)).toBe(1); // num_keep capped to numCtx - 1, at least one token freed
  });
});

describe('judgePromptFit', () => {
  it('flags a prompt at the context size the loaded model ran with (runners up to v0.30.10 cut to exactly that)', () => {
    expect(judgePromptFit(4096, loaded(4096))).toEqual({
      fits: false,
      promptTokens: 4096,
      contextSize: 4096,
      sign: 'full',
      source: 'loaded',
    });
  });

  it('flags a prompt that nearly fills the context (no room for the answer) and not one that leaves room', () => {
    expect(judgePromptFit(3900, loaded(4096)).fits).toBe(false); // 95.2%
    expect(judgePromptFit(3800, loaded(4096)).fits).toBe(true); // 92.8%
    expect(judgePromptFit(200, loaded(4096)).fits).toBe(true);
  });

  it('flags the exact length v0.30.11+ cuts a prompt to, and only that length', () => {
    expect(judgePromptFit(2051, loaded(4096))).toMatchObject({ fits: false, sign: 'shifted', contextSize: 4096 });
    expect(judgePromptFit(2050, loaded(4096))).toMatchObject({ fits: false, sign: 'shifted' });
    expect(judgePromptFit(2052, loaded(4096)).fits).toBe(true);
    expect(judgePromptFit(2049, loaded(4096)).fits).toBe(true);
  });

  it('uses the num_ctx parameter, capped to the model maximum, when the model is not loaded', () => {
    expect(judgePromptFit(8192, { loaded: null, numCtx: 8192, modelMax: 32768 })).toMatchObject({
      fits: false,
      source: 'num_ctx',
      contextSize: 8192,
    });
    expect(judgePromptFit(8192, { loaded: null, numCtx: 65536, modelMax: 8192 })).toMatchObject({ contextSize: 8192 });
    expect(judgePromptFit(4096, { loaded: null, numCtx: 8192, modelMax: null }).fits).toBe(true);
  });

  it('prefers what ps shows over the num_ctx parameter', () => {
    expect(judgePromptFit(8192, { loaded: 16384, numCtx: 8192, modelMax: null }).fits).toBe(true);
  });

  it('with the context unknown, claims only the exact counts a default context leaves', () => {
    expect(judgePromptFit(2048, NO_EVIDENCE)).toMatchObject({ fits: false, sign: 'full', source: 'default', contextSize: 2048 });
    expect(judgePromptFit(4096, NO_EVIDENCE)).toMatchObject({ fits: false, contextSize: 4096 });
    expect(judgePromptFit(2051, NO_EVIDENCE)).toMatchObject({ fits: false, sign: 'shifted', contextSize: 4096 });
    expect(judgePromptFit(4000, NO_EVIDENCE).fits).toBe(true);
    expect(judgePromptFit(4097, NO_EVIDENCE).fits).toBe(true);
    // a model whose maximum is below a default runs with its maximum
    expect(judgePromptFit(1000, { loaded: null, numCtx: null, modelMax: 1000 })).toMatchObject({
      fits: false,
      contextSize: 1000,
    });
  });
});

describe('worthLookingUp', () => {
  it('skips prompts no default context can have cut (the smallest: 2048, cut to 1026)', () => {
    expect(LOOKUP_MIN_PROMPT_TOKENS).toBe(1026);
    expect(worthLookingUp(1025)).toBe(false);
    expect(worthLookingUp(1026)).toBe(true);
  });
});
