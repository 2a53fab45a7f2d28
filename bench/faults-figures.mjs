// The issue-8 fault figures (items 3-7 and the "also" points) against a built server, printed one per line.
// Usage (root, Linux: it mounts small tmpfs filesystems): node bench/faults-figures.mjs [DIST_DIR, default dist]
// To compare with an older build, copy its dist/ and package.json into a folder inside the repo and pass that dist.
import { execSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync, statSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
const WT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { Client } = await import(WT + '/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js');
const { StdioClientTransport } = await import(WT + '/node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js');
const DIST = path.resolve(process.argv[2] ?? path.join(WT, 'dist'));
const FAKE = WT + '/test/fixtures/fake-ollama.mjs';
async function start(dir, extra = {}) {
  const t = new StdioClientTransport({
    command: process.execPath,
    args: [DIST + '/cli.js'],
    stderr: 'pipe',
    env: { PATH: process.env.PATH, OLLAMA_BIN: FAKE, OLLAMA_MCP_TELEMETRY_DIR: dir, ...extra },
  });
  let err = '';
  t.stderr?.on('data', (c) => (err += c));
  const c = new Client({ name: 'm', version: '1' });
  try {
    await c.connect(t);
  } catch (e) {
    console.log('START FAILED', dir, err);
    throw e;
  }
  const call = async (name, args) => {
    const r = await c.callTool({ name, arguments: { response_format: 'detailed', ...args } });
    return { r, text: r.content.map((x) => x.text).join('\n') };
  };
  return { c, call, err: () => err };
}
const mnt = (size) => {
  const d = mkdtempSync('/tmp/fm-');
  execSync(`mount -t tmpfs -o size=${size} tmpfs ${d}`);
  return d;
};
const out = new Proxy(
  {},
  {
    set(o, k, v) {
      o[k] = v;
      console.log(k, '=>', JSON.stringify(v));
      return true;
    },
  },
);
// 3. property-name ids
{
  const d = mkdtempSync('/tmp/fm-');
  const s = await start(d, { OLLAMA_MCP_BREAKER_THRESHOLD: '100' });
  for (const id of ['constructor', 'toString', 'valueOf', 'hasOwnProperty']) {
    const st = await s.call('ollama_task_status', { task_id: id });
    const rs = await s.call('ollama_reset', { task_id: id });
    await s.call('ollama_run', { model: 'llama3.2', prompt: '@fake:exit=1 x', task_id: id });
    const run = await s.call('ollama_run', { model: 'llama3.2', prompt: '@fake:exit=1 x', task_id: id });
    out[`3 ${id}: run retry_count / status / reset`] = [
      run.r.structuredContent?.metadata?.retry_count,
      st.text.split('\n')[0].slice(0, 60),
      rs.text.slice(0, 60),
    ];
  }
  await s.c.close();
}
if (process.argv[3] === '3') process.exit(0);
// 4+5. ledger holds 2 failures, then dir goes read-only
{
  const d = mnt('1m');
  const s = await start(d);
  for (let i = 0; i < 2; i++)
    await s.call('ollama_run', { model: 'llama3.2', prompt: '@fake:exit=1 x', task_id: 't', max_retries: 2 });
  await s.c.close();
  execSync(`mount -o remount,ro ${d}`);
  const s2 = await start(d);
  const t0 = Date.now();
  const r = await s2.call('ollama_run', { model: 'llama3.2', prompt: '@fake:exit=1 x', task_id: 't', max_retries: 2 });
  const m = r.r.structuredContent?.metadata;
  out['4/5 ro dir, ledger holds 2 failures, max_retries 2: ms, retry_count, escalate, warnings, verdict mentions ledger'] = [
    Date.now() - t0,
    m?.retry_count,
    m?.escalate,
    JSON.stringify(m?.warnings),
    /ledger/i.test(r.text),
  ];
  const h = await s2.call('ollama_health', {});
  out['4/7 health on ro dir: ok, mentions ledger write failure'] = [
    h.r.structuredContent?.ok,
    /ledger|state/i.test(JSON.stringify(h.r.structuredContent?.problems)),
  ];
  await s2.c.close();
  execSync(`umount ${d}`);
}
// 7. full disk
{
  const d = mnt('256k');
  const s = await start(d);
  await s.call('ollama_run', { model: 'llama3.2', prompt: 'x', task_id: 'a' });
  try {
    execSync(`dd if=/dev/zero of=${d}/fill bs=4k 2>/dev/null`);
  } catch {}
  const h = await s.call('ollama_health', {});
  out['7 health on full disk: ok'] = h.r.structuredContent?.ok;
  const t0 = Date.now();
  const r = await s.call('ollama_run', { model: 'llama3.2', prompt: '@fake:exit=1 x', task_id: 'a' });
  out['4 full disk run: ms, warnings'] = [Date.now() - t0, JSON.stringify(r.r.structuredContent?.metadata?.warnings)];
  await s.c.close();
  execSync(`umount ${d}`);
}
// 7. runs.jsonl a directory; shard unreadable (as nobody)
{
  const d = mkdtempSync('/tmp/fm-');
  mkdirSync(d + '/runs.jsonl');
  const s = await start(d);
  const h = await s.call('ollama_health', {});
  out['7 health, runs.jsonl is a dir: ok'] = h.r.structuredContent?.ok;
  await s.c.close();
}
// 6. empty state.json / empty shard
{
  const d = mkdtempSync('/tmp/fm-');
  const s = await start(d, { OLLAMA_MCP_BREAKER_THRESHOLD: '2' });
  for (let i = 0; i < 2; i++) await s.call('ollama_run', { model: 'llama3.2', prompt: '@fake:exit=1 x', task_id: 'e' });
  await s.c.close();
  writeFileSync(d + '/state.json', '');
  const shard = readdirSync(d + '/state.tasks').find((f) => statSync(d + '/state.tasks/' + f).size > 20);
  writeFileSync(d + '/state.tasks/' + shard, '');
  const s2 = await start(d, { OLLAMA_MCP_BREAKER_THRESHOLD: '2' });
  const st = await s2.call('ollama_task_status', { task_id: 'e' });
  await s2.call('ollama_run', { model: 'llama3.2', prompt: 'x', task_id: 'e' });
  out['6 empty state.json+shard: status says, stderr warns, copies kept'] = [
    st.text.split('\n')[0].slice(0, 50),
    s2.err().trim().slice(0, 200),
    readdirSync(d)
      .concat(readdirSync(d + '/state.tasks'))
      .filter((f) => f.includes('corrupt')),
  ];
  await s2.c.close();
}
// 6. state.tasks is a file
{
  const d = mkdtempSync('/tmp/fm-');
  writeFileSync(d + '/state.tasks', 'x');
  let e = '';
  try {
    execSync(`OLLAMA_BIN=${FAKE} OLLAMA_MCP_TELEMETRY_DIR=${d} node ${DIST}/cli.js </dev/null`, { stdio: 'pipe' });
  } catch (x) {
    e = String(x.stderr);
  }
  out['6 state.tasks is a file: stderr lines'] = [e.trim().split('\n').length, e.split('\n')[0].slice(0, 120)];
}
// Also: first prune writes; modes
{
  const d = mkdtempSync('/tmp/fm-');
  const s = await start(d);
  await s.call('ollama_run', { model: 'llama3.2', prompt: 'x', task_id: 'p' });
  await s.c.close();
  const files = readdirSync(d + '/state.tasks');
  out['also: shards after first run (count, KiB by du)'] = [
    files.length,
    execSync(`du -sk ${d}/state.tasks`).toString().split('\t')[0],
  ];
  const mode = (f) => (statSync(f).mode & 0o777).toString(8);
  out['modes: state.json, shard, state.tasks, runs.jsonl'] = [
    mode(d + '/state.json'),
    mode(d + '/state.tasks/' + files[0]),
    mode(d + '/state.tasks'),
    mode(d + '/runs.jsonl'),
  ];
}
// Also: telemetry dir under a ro parent
{
  const d = mnt('64k');
  execSync(`mount -o remount,ro ${d}`);
  let e = '';
  try {
    execSync(`OLLAMA_BIN=${FAKE} OLLAMA_MCP_TELEMETRY_DIR=${d}/sub node ${DIST}/cli.js </dev/null`, { stdio: 'pipe' });
  } catch (x) {
    e = String(x.stderr);
  }
  out['also: ro parent error'] = e.split('\n')[0].slice(0, 160);
  execSync(`umount ${d}`);
}

process.exit(0);
