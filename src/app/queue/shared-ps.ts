import { setTimeout as delay } from 'node:timers/promises';
import type { LoadedModelsResult } from '../../ollama/loaded-models.js';
import { observePs, type PsAnswer, type SharedQueue } from '../../policy/shared-queue.js';
import type { QueueStore } from '../../store/queue/queue-store.js';
import { PS_FRESH_MS } from './residency.js';

/** A reader of another server asking `ollama ps` longer than this (its timeout is 3 s) is given up on. */
const ASK_LIMIT_MS = 5_000;
/** How often a server waiting for another's answer looks for it. */
const LOOK_EVERY_MS = 50;

type Step = { readonly use: PsAnswer } | { readonly waitFor: number } | { readonly ask: number };

interface SharedPsOptions {
  readonly store: QueueStore;
  /** This server's key in the queue. */
  readonly server: string;
  /** `ollama ps` itself. */
  readonly read: () => Promise<LoadedModelsResult>;
  /** Applied with the answer, in the same change (the dispatcher decides again). */
  readonly settle: (queue: SharedQueue, now: number) => SharedQueue;
  readonly defaultKeepAliveMs: number;
}

/**
 * `ollama ps` once for every server of one Ollama: a server that needs an answer takes a recent one
 * from the shared queue, waits for the one another server is asking, or asks itself and shares it.
 * So at most one `ollama ps` runs against an Ollama at a time. When the queue cannot be used, it asks.
 */
export function sharedPs(options: SharedPsOptions): (fresh: boolean) => Promise<LoadedModelsResult> {
  return async (fresh) => {
    try {
      let wantedAt: number | null = null;
      for (let round = 0; round < 3; round += 1) {
        const step = await options.store.update((queue, now) => {
          wantedAt ??= now;
          return nextStep(queue, now, wantedAt, fresh, options.server);
        });
        if ('use' in step) return resultOf(step.use);
        if ('waitFor' in step) await answerAfter(options.store, step.waitFor);
        else return await ask(options, step.ask);
      }
    } catch {
      // The shared queue cannot be used: ask on our own.
    }
    return options.read();
  };
}

/** Use the last answer if it will do; wait for one being asked; or ask. */
function nextStep(queue: SharedQueue, now: number, wantedAt: number, fresh: boolean, server: string) {
  const { last, asking } = queue.ps;
  if (last !== null && (fresh ? last.askedAt >= wantedAt : now - last.askedAt < PS_FRESH_MS)) {
    return { queue, result: { use: last } as Step };
  }
  if (asking !== null && asking.server !== server && now - asking.since < ASK_LIMIT_MS) {
    return { queue, result: { waitFor: asking.since } as Step };
  }
  return { queue: { ...queue, ps: { ...queue.ps, asking: { server, since: now } } }, result: { ask: now } as Step };
}

async function ask(options: SharedPsOptions, askedAt: number): Promise<LoadedModelsResult> {
  const result = await options.read();
  await options.store
    .update((queue, now) => {
      const answered = result.ok
        ? observePs(
            queue,
            { askedAt, models: [...result.models], sizes: Object.fromEntries(result.sizes) },
            {
              now,
              defaultKeepAliveMs: options.defaultKeepAliveMs,
            },
          )
        : { ...queue, ps: { ...queue.ps, asking: null } };
      return { queue: options.settle(answered, now), result: undefined };
    })
    .catch(() => {}); // the others ask on their own once the asking is stale
  return result;
}

/** Wait until the question asked at `since` is answered or given up. */
async function answerAfter(store: QueueStore, since: number): Promise<void> {
  for (;;) {
    await delay(LOOK_EVERY_MS);
    const { queue, now } = await store.read();
    if (queue.ps.asking?.since !== since || now - since >= ASK_LIMIT_MS) return;
  }
}

function resultOf(answer: PsAnswer): LoadedModelsResult {
  return { ok: true, models: answer.models, sizes: new Map(Object.entries(answer.sizes)) };
}
