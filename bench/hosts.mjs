// Issue 29, "several Ollama hosts": two fake `ollama serve` instances (test/fixtures/fake-ollama.md,
// "Shared server mode"), each with one 4 GB model fitting in its 6 GB, loads of 0.6 s, answers of 0.5 s.
// Host 1 holds sim-a, host 2 sim-b (one pinned call each loads them first, not counted). Then 12 calls
// alternating sim-a, sim-b, all at once, through one server:
// - `residency`: OLLAMA_MCP_HOSTS lists both hosts, the server routes (docs/hosts.md);
// - `one`: one host (the same server work on one Ollama, sim-a loaded first);
// - `rrIn`, `rrOut`: round-robin over the two hosts, ignoring what they hold (each call pinned with `host`
//   to host `i % 2`): with two models alternating, round-robin lands in phase with the models (call i on
//   the host that holds its model) or out of phase (every call on the other's host), by luck of the counter.
// Loads come from the fakes' traces (`load_done`), wall time from the first call to the last answer. The
// issue's target: no load beyond the two of the warm-up, wall within 1.5x the ideal (6 answers per host
// one after the other).
//
// `node bench/hosts.mjs [runs]` runs it alone (after `npm run build`); `measureHosts()` returns the
// figures and `hostsRows()` the rows in the shape `npm run bench` prints.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { NODE_FAKE, makeTempDir, removeTempDir, runStandalone, startFakeServe, startServer, summarize } from './lib.mjs';

const MODELS = 'sim-a:latest,sim-b:latest';
const CALLS = 12;
const LOAD_MS = 600;
const ANSWER_MS = 500;
/** Each host answers its 6 calls one after the other, the two hosts side by side. */
const IDEAL_MS = (CALLS / 2) * ANSWER_MS;
export const VARIANTS = ['residency', 'one', 'rrIn', 'rrOut'];

async function runOnce(variant) {
  const dir = makeTempDir('hosts');
  const hostCount = variant === 'one' ? 1 : 2;
  const serves = [];
  let server = null;
  try {
    for (let i = 0; i < hostCount; i += 1) {
      const serveDir = path.join(dir, `serve-${i}`);
      mkdirSync(serveDir);
      serves.push(await startFakeServe(serveDir, MODELS, { FAKE_OLLAMA_LOAD_MS: String(LOAD_MS) }));
    }
    const hosts = serves.map((serve) => serve.env.OLLAMA_HOST);
    server = await startServer({
      bin: NODE_FAKE,
      telemetryDir: path.join(dir, 'telemetry'),
      env: {
        FAKE_OLLAMA_SERVE: '1',
        FAKE_OLLAMA_MODELS: MODELS,
        OLLAMA_MCP_HOSTS: hosts.join(','),
        OLLAMA_NUM_PARALLEL: '',
        OLLAMA_MAX_LOADED_MODELS: '',
      },
    });
    const statuses = [];
    const call = async (model, prompt, host) => {
      const args = { model, prompt, response_format: 'detailed', ...(host ? { host } : {}) };
      const result = await server.client.callTool({ name: 'ollama_run', arguments: args }, undefined, { timeout: 300_000 });
      return result.structuredContent?.metadata?.status ?? 'no metadata';
    };
    // The warm-up: host 1 holds sim-a, host 2 sim-b.
    await call('sim-a', 'warm a', hosts[0]);
    if (hostCount === 2) await call('sim-b', 'warm b', hosts[1]);
    const loadsBefore = serves.reduce((sum, serve) => sum + serve.loads(), 0);
    const hostOf = (i) => {
      if (variant === 'rrIn') return hosts[i % 2];
      if (variant === 'rrOut') return hosts[(i + 1) % 2];
      return undefined;
    };
    const t0 = performance.now();
    const results = await Promise.all(
      Array.from({ length: CALLS }, (_, i) =>
        call(i % 2 === 0 ? 'sim-a' : 'sim-b', `call ${i} @fake:sleep_ms=${ANSWER_MS}`, hostOf(i)),
      ),
    );
    const wallMs = performance.now() - t0;
    statuses.push(...results);
    const loads = serves.reduce((sum, serve) => sum + serve.loads(), 0) - loadsBefore;
    return { loads, wallMs, failed: statuses.filter((st) => st !== 'ok') };
  } finally {
    await server?.close().catch(() => {});
    await Promise.allSettled(serves.map((serve) => serve.stop()));
    removeTempDir(dir);
  }
}

const median = (xs) => summarize(xs).p50;

/** Every variant `runs` times, in an order rotated each round; medians. */
export async function measureHosts({ runs = 3, log = () => {} } = {}) {
  const samples = Object.fromEntries(VARIANTS.map((n) => [n, []]));
  for (let round = 0; round < runs; round += 1) {
    const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]);
    for (const name of order) {
      const r = await runOnce(name);
      samples[name].push(r);
      log(
        `round ${round + 1}/${runs} ${name}: ${r.loads} loads, ${(r.wallMs / 1000).toFixed(2)} s${r.failed.length ? `, failed: ${r.failed.join(', ')}` : ''}`,
      );
    }
  }
  const variants = Object.fromEntries(
    VARIANTS.map((n) => [
      n,
      {
        loads: median(samples[n].map((r) => r.loads)),
        wallMs: median(samples[n].map((r) => r.wallMs)),
        failed: samples[n].flatMap((r) => r.failed),
      },
    ]),
  );
  return { runs, loadMs: LOAD_MS, answerMs: ANSWER_MS, idealMs: IDEAL_MS, variants };
}

/** Rows in run.mjs's shape (measure, value, baseline, target, pass, note): issue 29's "Done when". */
export function hostsRows(f) {
  const s = (x) => `${(x / 1000).toFixed(2)} s`;
  const { residency, one, rrIn, rrOut } = f.variants;
  const failed = [...residency.failed, ...one.failed, ...rrIn.failed, ...rrOut.failed];
  const ratio = residency.wallMs / f.idealMs;
  return [
    {
      measure: `${CALLS} calls alternating 2 models, 2 hosts each holding one: routing by residency`,
      value: `${residency.loads} loads, ${s(residency.wallMs)} (${ratio.toFixed(2)}x the ideal ${s(f.idealMs)})`,
      baseline: `1 host: ${one.loads} loads, ${s(one.wallMs)}; round-robin in phase: ${rrIn.loads} loads, ${s(rrIn.wallMs)}; out of phase: ${rrOut.loads} loads, ${s(rrOut.wallMs)}`,
      target: '0 loads, wall <= 1.5x the ideal',
      pass: failed.length === 0 && residency.loads === 0 && ratio <= 1.5,
      note: `medians of ${f.runs} runs each, alternated; loads ${f.loadMs / 1000} s, answers ${f.answerMs / 1000} s, one model fits per host${failed.length ? `; calls not ok: ${failed.join(', ')}` : ''}`,
    },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runStandalone(measureHosts, hostsRows);
