import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLIENT_LIMITS_MS, replyWithinMs } from '../../../src/tools/reply-within.js';
import { untilHandedOver, withinBudget } from '../../../src/tools/job-reply.js';

/** The TypeScript SDK's Client gives up on a tools/call after 60 s. */
const SDK_LIMIT_MS = 60_000;

describe('replyWithinMs', () => {
  it("the caller's reply_within_ms wins over the configured value and the client's limit, also when it is 0", () => {
    expect(replyWithinMs(5_000, 120_000, 'codex-mcp-client')).toBe(5_000);
    expect(replyWithinMs(0, 120_000, 'codex-mcp-client')).toBe(0);
  });

  it("without an argument the configured value (OLLAMA_MCP_REPLY_WITHIN_MS) wins over the client's limit, also when it is 0", () => {
    expect(replyWithinMs(undefined, 120_000, 'codex-mcp-client')).toBe(120_000);
    expect(replyWithinMs(undefined, 0, 'codex-mcp-client')).toBe(0);
  });

  it('answers Codex (which gives up at 300 s) within 270 s', () => {
    expect(replyWithinMs(undefined, null, 'codex-mcp-client')).toBe(270_000);
  });

  it.each([...CLIENT_LIMITS_MS])('answers %s at least 10 s before its limit of %d ms', (client, limit) => {
    const budget = replyWithinMs(undefined, null, client);
    expect(budget).toBeGreaterThan(0);
    expect(budget).toBeLessThanOrEqual(limit - 10_000);
  });

  it("an unknown or unnamed client is answered well within the TypeScript SDK's 60 s", () => {
    for (const client of ['some-agent', 'mcp-inspector', undefined]) {
      const budget = replyWithinMs(undefined, null, client);
      expect(budget).toBeGreaterThan(0);
      expect(budget).toBeLessThanOrEqual(SDK_LIMIT_MS - 10_000);
    }
  });
});

describe('withinBudget', () => {
  afterEach(() => void vi.useRealTimers());

  it('gives the value of work that ends within the budget', async () => {
    vi.useFakeTimers();
    let finish!: (value: string) => void;
    const work = new Promise<string>((resolve) => (finish = resolve));
    const reply = withinBudget(work, 1_000);
    await vi.advanceTimersByTimeAsync(999);
    finish('answer');
    await expect(reply).resolves.toBe('answer');
  });

  it('gives null once the budget passed, while the work goes on', async () => {
    vi.useFakeTimers();
    const reply = withinBudget(new Promise<string>(() => {}), 1_000);
    let settled = false;
    void reply.then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await expect(reply).resolves.toBeNull();
  });

  it('with a budget of 0 hands work that is not yet done over at once', async () => {
    await expect(withinBudget(new Promise<string>(() => {}), 0)).resolves.toBeNull();
  });

  it('passes on the failure of work that fails within the budget', async () => {
    await expect(withinBudget(Promise.reject(new Error('spawn failed')), 1_000)).rejects.toThrow('spawn failed');
  });
});

describe('untilHandedOver', () => {
  it("a client's cancel before the hand-over aborts the work, with the request's reason", () => {
    const request = new AbortController();
    const { controller } = untilHandedOver(request.signal);
    expect(controller.signal.aborted).toBe(false);
    request.abort(new Error('client cancelled'));
    expect(controller.signal.aborted).toBe(true);
    expect(controller.signal.reason).toEqual(new Error('client cancelled'));
  });

  it('a request already aborted aborts the work at once', () => {
    const request = new AbortController();
    request.abort();
    expect(untilHandedOver(request.signal).controller.signal.aborted).toBe(true);
  });

  it('once handed over, the end of the request no longer aborts the work; its own controller still does', () => {
    const request = new AbortController();
    const { controller, handOver } = untilHandedOver(request.signal);
    handOver();
    request.abort();
    expect(controller.signal.aborted).toBe(false);
    controller.abort();
    expect(controller.signal.aborted).toBe(true);
  });
});
