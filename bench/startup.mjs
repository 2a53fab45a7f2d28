// Benchmark 4: start-up to the first `initialize` reply, `node dist/cli.js` (stdio) against a
// minimal SDK server with one tool (bench/min-server.mjs), and the idle RSS of both.
//
// Each sample spawns the server with `node`, writes the `initialize` request at once (as an MCP
// client does: it does not wait for the process to be ready), and stops the clock when the reply
// line arrives on stdout. Then the client sends `notifications/initialized`, the server is left
// idle for IDLE_MS, and its RSS is read from /proc/<pid>/status. The two servers alternate.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { BENCH_DIR, ROOT, SERVER_ENTRY, baseEnv, makeTempDir, removeTempDir, summarize } from './lib.mjs';

const IDLE_MS = 300;
const INITIALIZE = `${JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'ollama-runner-bench', version: '1.0.0' } },
})}\n`;
const INITIALIZED = `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`;

/** RSS in MB from /proc (null where there is none). */
function rssMb(pid) {
  try {
    const kb = /^VmRSS:\s*(\d+)\s*kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) / 1024 : null;
  } catch {
    return null;
  }
}

function startOnce(script, env) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [script], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let replyMs = null;
    const fail = (why) => {
      child.kill('SIGKILL');
      reject(new Error(`${path.relative(ROOT, script)}: ${why}; stderr: ${stderr.slice(-400)}`));
    };
    const timer = setTimeout(() => fail('no initialize reply within 15 s'), 15_000);
    child.on('error', (error) => fail(error.message));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      if (replyMs !== null || !stdout.includes('\n')) return;
      replyMs = performance.now() - t0;
      clearTimeout(timer);
      const reply = JSON.parse(stdout.slice(0, stdout.indexOf('\n')));
      if (reply.id !== 1 || !reply.result?.serverInfo) return fail(`unexpected first line ${stdout.slice(0, 200)}`);
      child.stdin.write(INITIALIZED);
      setTimeout(() => {
        const rss = rssMb(child.pid);
        const killer = setTimeout(() => child.kill('SIGKILL'), 3_000);
        child.once('exit', () => {
          clearTimeout(killer);
          resolve({ replyMs, rss });
        });
        child.stdin.end(); // a stdio server exits when its input ends
      }, IDLE_MS);
    });
    child.once('exit', (code, signal) => {
      if (replyMs === null) fail(`exited (${code ?? signal}) before replying`);
    });
    child.stdin.write(INITIALIZE);
  });
}

/**
 * @param {{ samples: number, fakeBin: string }} options
 */
export async function measureStartup({ samples, fakeBin }) {
  const dir = makeTempDir('startup');
  const minimal = path.join(BENCH_DIR, 'min-server.mjs');
  const ourEnv = baseEnv({ OLLAMA_BIN: fakeBin, OLLAMA_MCP_TELEMETRY_DIR: path.join(dir, 'telemetry') });
  const results = { ours: [], minimal: [] };
  try {
    // One of each first, not recorded: the file system cache and the compile cache warm up.
    await startOnce(SERVER_ENTRY, ourEnv);
    await startOnce(minimal, baseEnv());
    for (let i = 0; i < samples; i += 1) {
      const order = i % 2 === 0 ? ['ours', 'minimal'] : ['minimal', 'ours'];
      for (const which of order)
        results[which].push(await (which === 'ours' ? startOnce(SERVER_ENTRY, ourEnv) : startOnce(minimal, baseEnv())));
    }
  } finally {
    removeTempDir(dir);
  }
  const stats = (list) => ({
    reply: summarize(list.map((r) => r.replyMs)),
    rss: list.some((r) => r.rss === null) ? null : summarize(list.map((r) => r.rss)),
  });
  const ours = stats(results.ours);
  const min = stats(results.minimal);
  return { samples, idleMs: IDLE_MS, ours, minimal: min, ratio: ours.reply.p50 / min.reply.p50 };
}

// Run on its own: `node bench/startup.mjs [starts=12] [--ab OTHER_ROOT]`. `--ab` alternates this build
// with OTHER_ROOT/dist/cli.js (e.g. a copy of the base commit's dist/ with package.json beside it and
// node_modules linked) and the minimal server, in one loop, so all three meet the same machine.
if (process.argv[1] && path.resolve(process.argv[1]) === path.join(BENCH_DIR, 'startup.mjs')) {
  const args = process.argv.slice(2);
  const abIndex = args.indexOf('--ab');
  const otherRoot = abIndex === -1 ? null : args.splice(abIndex, 2)[1];
  const samples = Number(args[0] ?? 12);
  const dir = makeTempDir('startup-ab');
  const env = baseEnv({ OLLAMA_BIN: '/bin/false', OLLAMA_MCP_TELEMETRY_DIR: path.join(dir, 'telemetry') });
  const entries = {
    this: SERVER_ENTRY,
    ...(otherRoot ? { other: path.resolve(otherRoot, 'dist/cli.js') } : {}),
    minimal: path.join(BENCH_DIR, 'min-server.mjs'),
  };
  const results = Object.fromEntries(Object.keys(entries).map((name) => [name, []]));
  try {
    for (const entry of Object.values(entries)) await startOnce(entry, env); // warm-up, not recorded
    for (let i = 0; i < samples; i += 1) {
      const names = Object.keys(entries);
      for (const name of i % 2 === 0 ? names : names.reverse()) results[name].push(await startOnce(entries[name], env));
    }
  } finally {
    removeTempDir(dir);
  }
  const minimalP50 = summarize(results.minimal.map((r) => r.replyMs)).p50;
  // Per round, over the minimal server started next to it: steadier than the ratio of medians on a busy machine.
  const pairedRatio = (list) => summarize(list.map((r, i) => r.replyMs / results.minimal[i].replyMs)).p50;
  for (const [name, list] of Object.entries(results)) {
    const reply = summarize(list.map((r) => r.replyMs));
    const rss = summarize(list.map((r) => r.rss ?? NaN));
    console.log(
      `${name.padEnd(8)} first reply p50 ${reply.p50.toFixed(1)} ms  p95 ${reply.p95.toFixed(1)} ms  ratio ${(reply.p50 / minimalP50).toFixed(3)}x (paired ${pairedRatio(list).toFixed(3)}x)  idle RSS p50 ${rss.p50.toFixed(1)} MB  (n=${list.length})`,
    );
  }
}
