// Peak memory of the server for one answer as large as the output cap: how much its VmHWM grows,
// relative to OLLAMA_MCP_MAX_OUTPUT_BYTES. `node bench/answer-memory.mjs [capMiB...]` (Linux: /proc).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { NODE_FAKE, closeAllServers, makeTempDir, removeAllTempDirs, startServer } from './lib.mjs';

const peakMiB = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

export async function measureAnswerMemory(capMiB) {
  const cap = capMiB * 2 ** 20;
  const dir = makeTempDir('answer-memory');
  const server = await startServer({
    bin: NODE_FAKE,
    telemetryDir: path.join(dir, 'telemetry'),
    env: { OLLAMA_MCP_MAX_OUTPUT_BYTES: String(cap) },
  });
  try {
    await server.run({ model: 'llama3.2', prompt: 'warm up' });
    const before = peakMiB(server.pid);
    const reply = await server.client.callTool(
      { name: 'ollama_run', arguments: { model: 'llama3.2', prompt: `@fake:flood_bytes=${cap - 1000}` } },
      undefined,
      { timeout: 300_000 },
    );
    if (reply.structuredContent?.status !== 'ok') throw new Error(`the answer did not succeed: ${JSON.stringify(reply.content)}`);
    return { capMiB, growthMiB: peakMiB(server.pid) - before, perCap: (peakMiB(server.pid) - before) / capMiB };
  } finally {
    await server.close();
  }
}

if (process.argv[1] && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  try {
    for (const capMiB of (process.argv.length > 2 ? process.argv.slice(2) : ['4', '100']).map(Number)) {
      const m = await measureAnswerMemory(capMiB);
      process.stdout.write(`cap ${capMiB} MiB: peak RSS grew ${m.growthMiB.toFixed(1)} MiB, ${m.perCap.toFixed(2)}x the cap\n`);
    }
  } finally {
    await closeAllServers();
    removeAllTempDirs();
  }
}
