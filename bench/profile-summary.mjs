// Summarise a V8 .cpuprofile (from `BENCH_CPU_PROF=<dir> npm run bench`): where the server's CPU
// time goes, by package/file and by function (self time), plus inclusive time of chosen frames.
// Usage: node bench/profile-summary.mjs <file.cpuprofile> [top=25]
import { readFileSync } from 'node:fs';

const [file, topText = '25'] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-summary.mjs <file.cpuprofile> [top]\n');
  process.exit(2);
}
const top = Number(topText);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// Self time per node from the sample timeline.
const self = new Map();
for (let i = 0; i < profile.samples.length; i += 1) {
  const dt = profile.timeDeltas[i + 1] ?? 0;
  self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
}
const totalUs = [...self.values()].reduce((a, b) => a + b, 0);
const idleUs = [...self].filter(([id]) => nodes.get(id).callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
const busyUs = totalUs - idleUs;

const where = (url) => {
  if (!url) return '(native/vm)';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.startsWith('node:')) return url;
  const d = /\/dist\/(.+)$/.exec(url);
  return d ? `dist/${d[1]}` : url;
};
const add = (map, key, t) => map.set(key, (map.get(key) ?? 0) + t);
const byWhere = new Map();
const byFn = new Map();
for (const [id, t] of self) {
  const { functionName, url, lineNumber } = nodes.get(id).callFrame;
  if (functionName === '(idle)') continue;
  add(byWhere, where(url), t);
  add(byFn, `${functionName || '(anonymous)'}  ${where(url)}:${lineNumber + 1}`, t);
}

// Inclusive time: a sample counts once for every distinct matching frame on its stack.
const inclusive = new Map();
const patterns = {
  'zod (parse/safeParse/toJSONSchema)': (f) => /node_modules\/zod/.test(f.url),
  'proper-lockfile': (f) => /proper-lockfile/.test(f.url),
  'lowdb/steno (state file writes)': (f) => /node_modules\/(lowdb|steno)/.test(f.url),
  execa: (f) => /node_modules\/execa/.test(f.url),
  'MCP SDK': (f) => /@modelcontextprotocol/.test(f.url),
  'dist/store': (f) => /dist\/store\//.test(f.url),
  'dist/telemetry': (f) => /dist\/telemetry\//.test(f.url),
  'garbage collector': (f) => f.functionName === '(garbage collector)',
};
for (const [id, t] of self) {
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const frame = nodes.get(cur).callFrame;
    for (const [name, test] of Object.entries(patterns)) {
      if (!seen.has(name) && test(frame)) {
        seen.add(name);
        add(inclusive, name, t);
      }
    }
  }
}

const pct = (t) => `${((100 * t) / busyUs).toFixed(1).padStart(5)}%`;
const print = (title, map, n) => {
  process.stdout.write(`\n${title}\n`);
  for (const [k, t] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n)) {
    process.stdout.write(`  ${pct(t)}  ${(t / 1000).toFixed(0).padStart(6)} ms  ${k}\n`);
  }
};
process.stdout.write(
  `${file}: ${(totalUs / 1e6).toFixed(1)} s profiled, ${(busyUs / 1e6).toFixed(2)} s on CPU (${((100 * busyUs) / totalUs).toFixed(0)}%)\n`,
);
print('Self time by package / file (share of CPU time)', byWhere, top);
print('Inclusive time (share of CPU time)', inclusive, 20);
print('Self time by function', byFn, top);
