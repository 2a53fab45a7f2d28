// Issue 28, "one queue per Ollama": several agent sessions in front of ONE `ollama serve`, each with its
// own server process (as every Claude Code or Codex window has), against the same sessions' work through
// one server. The fake shared `ollama serve` (test/fixtures/fake-ollama.md, "Shared server mode") plays
// Ollama: one 4 GB model fits in its 6 GB (capacity 1), loads take 0.6 s, answers 0.1 s.
//
// Each session delegates its own model's work (A: sim-a, B: sim-b, C: sim-c) in three bursts of three
// parallel `ollama_run` calls, a burst starting when the session's previous burst has answered; all
// sessions start at once. Through one server (one MCP client for all sessions), through one server per
// session, all on one data dir, dispatching from the shared queue, and the same with per-process dispatch
// (OLLAMA_MCP_SHARED_QUEUE=0, as before the shared queue); alternated round by round.
// Loads come from the fake's trace (`load_done`), wall time from the first call to the last answer.
// The issue's target: N servers take at most one load more than one server, wall within 1.15x.
//
// `node bench/shared-ollama.mjs [runs]` runs it alone (after `npm run build`); `measureSharedOllama()`
// returns the figures and `sharedOllamaRows()` the rows in the shape `npm run bench` prints.
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { NODE_FAKE, makeTempDir, removeTempDir, runStandalone, startFakeServe, startServer, summarize } from './lib.mjs';

const MODELS = 'sim-a:latest,sim-b:latest,sim-c:latest';
const SESSION_MODELS = ['sim-a', 'sim-b', 'sim-c'];
const BURSTS = 3;
const CALLS_PER_BURST = 3;
const LOAD_MS = 600;
const ANSWER_MS = 100;
// [sessions, servers, shared queue]: one2 and one3 send every session's calls through one server; two and
// three give each its own (alone2, alone3: each dispatching from its own queue only).
export const VARIANTS = {
  one2: [2, 1, true],
  two: [2, 2, true],
  alone2: [2, 2, false],
  one3: [3, 1, true],
  three: [3, 3, true],
  alone3: [3, 3, false],
};

/** One run of a variant: a fresh Ollama, `servers` servers on ONE telemetry dir, `sessions` sessions spread over them. */
async function runOnce([sessions, servers, shared]) {
  const dir = makeTempDir('shared');
  // Default VRAM 6 GB, models 4 GB: one fits.
  const serve = await startFakeServe(dir, MODELS, { FAKE_OLLAMA_LOAD_MS: String(LOAD_MS) });
  const started = [];
  try {
    for (let i = 0; i < servers; i += 1) {
      started.push(
        await startServer({
          bin: NODE_FAKE,
          telemetryDir: path.join(dir, 'telemetry'), // the same for all: the default for one user's servers
          // As shipped, learning from Ollama itself (unset the bench's "runs everything at once" defaults).
          env: {
            ...serve.env,
            OLLAMA_MCP_PREFLIGHT: '0',
            OLLAMA_NUM_PARALLEL: '',
            OLLAMA_MAX_LOADED_MODELS: '',
            OLLAMA_MCP_SHARED_QUEUE: shared ? '1' : '0',
          },
        }),
      );
    }
    const statuses = [];
    const call = async (server, model, prompt) => {
      const result = await server.client.callTool(
        { name: 'ollama_run', arguments: { model, prompt, response_format: 'detailed' } },
        undefined,
        { timeout: 300_000 },
      );
      statuses.push(result.structuredContent?.metadata?.status ?? 'no metadata');
    };
    // A session: its bursts one after another, each burst's calls in parallel, all through its server.
    const session = async (s) => {
      const server = started[s % servers];
      for (let b = 0; b < BURSTS; b += 1) {
        await Promise.all(
          Array.from({ length: CALLS_PER_BURST }, (_, c) =>
            call(server, SESSION_MODELS[s], `session ${s} burst ${b} call ${c} @fake:sleep_ms=${ANSWER_MS}`),
          ),
        );
      }
    };
    const loadsBefore = serve.loads(); // servers that start up load nothing, but count from here anyway
    const t0 = performance.now();
    await Promise.all(Array.from({ length: sessions }, (_, s) => session(s)));
    const wallMs = performance.now() - t0;
    const failed = statuses.filter((st) => st !== 'ok');
    return { loads: serve.loads() - loadsBefore, wallMs, calls: statuses.length, failed };
  } finally {
    await Promise.allSettled(started.map((s) => s.close()));
    await serve.stop();
    removeTempDir(dir);
  }
}

const median = (xs) => summarize(xs).p50;

/** Every variant `runs` times, in an order rotated each round; medians, and N servers against one. */
export async function measureSharedOllama({ runs = 3, log = () => {} } = {}) {
  const names = Object.keys(VARIANTS);
  const samples = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < runs; round += 1) {
    const order = names.map((_, i) => names[(i + round) % names.length]);
    for (const name of order) {
      const r = await runOnce(VARIANTS[name]);
      samples[name].push(r);
      log(
        `round ${round + 1}/${runs} ${name}: ${r.loads} loads, ${(r.wallMs / 1000).toFixed(2)} s${r.failed.length ? `, failed: ${r.failed.join(', ')}` : ''}`,
      );
    }
  }
  const summary = (s) => ({
    runs: s,
    loads: median(s.map((r) => r.loads)),
    wallMs: median(s.map((r) => r.wallMs)),
    failed: s.flatMap((r) => r.failed),
  });
  const variants = Object.fromEntries(
    names.map((n) => [n, { sessions: VARIANTS[n][0], servers: VARIANTS[n][1], ...summary(samples[n]) }]),
  );
  // The ratio of medians, and the range of the per-round ratios (runs of one round ran back to back).
  const ratio = (many, one) => {
    const wall = samples[many].map((r, i) => r.wallMs / samples[one][i].wallMs);
    return {
      loads: variants[many].loads / variants[one].loads,
      extraLoads: variants[many].loads - variants[one].loads,
      wall: variants[many].wallMs / variants[one].wallMs,
      wallRange: [Math.min(...wall), Math.max(...wall)],
    };
  };
  return {
    runs,
    loadMs: LOAD_MS,
    answerMs: ANSWER_MS,
    variants,
    two: ratio('two', 'one2'),
    three: ratio('three', 'one3'),
    alone2: ratio('alone2', 'one2'),
    alone3: ratio('alone3', 'one3'),
  };
}

/** Rows in run.mjs's shape (measure, value, baseline, target, pass, note): issue 28's "Done when". */
export function sharedOllamaRows(f) {
  const s = (x) => `${(x / 1000).toFixed(2)} s`;
  return [
    ['two', 'one2', 'alone2', 2],
    ['three', 'one3', 'alone3', 3],
  ].map(([many, one, alone, n]) => {
    const r = f[many];
    const m = f.variants[many];
    const o = f.variants[one];
    const a = f.variants[alone];
    const failed = [...m.failed, ...o.failed, ...a.failed];
    return {
      measure: `${n} sessions x ${BURSTS} bursts x ${CALLS_PER_BURST} calls, 1 model fits: ${n} servers (shared queue) vs 1`,
      value: `${m.loads} loads, ${s(m.wallMs)}: ${r.wall.toFixed(2)}x wall (rounds ${r.wallRange.map((x) => x.toFixed(2)).join('-')}x), ${r.loads.toFixed(2)}x loads`,
      baseline: `${o.loads} loads, ${s(o.wallMs)} (1 server); per-process dispatch: ${a.loads} loads, ${s(a.wallMs)}, ${f[alone].wall.toFixed(2)}x wall`,
      target: '<= 1 load more, wall <= 1.15x',
      pass: failed.length === 0 && r.extraLoads <= 1 && r.wall <= 1.15,
      note: `medians of ${f.runs} runs each, alternated; loads ${f.loadMs / 1000} s, answers ${f.answerMs / 1000} s; servers on one data dir${failed.length ? `; calls not ok: ${failed.join(', ')}` : ''}`,
    };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runStandalone(measureSharedOllama, sharedOllamaRows);
