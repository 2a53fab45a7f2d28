// Benchmark 6: what the agent reads. Clients such as Claude Code hand the model
// JSON.stringify(structuredContent) for every result, and the model-visible part of tools/list (names,
// titles, descriptions, input schemas) in every session: both are paid in the agent's context. Also the
// largest reply: the SDK's stdio client closes the connection on a line over 10 MiB.
//
// Standalone: `node bench/agent-view.mjs [--root DIR]` measures the build in DIR (default: this checkout),
// e.g. an older checkout built with `npm run build`, to compare. Only default calls are made (no
// response_format), so an older build answers them too.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { NODE_FAKE, ROOT, baseEnv, makeTempDir, removeTempDir } from './lib.mjs';

/** The figures of issue 19 before it was worked on, for the comparison. */
export const BEFORE = { ok: 711, failure: 835, escalation: 853, toolsVisible: 12_380, toolsWhole: 55_800 };
export const AGENT_TARGETS = {
  ok: 220,
  okAim: 150,
  failure: 600,
  toolsVisible: 5_120,
  toolsAim: 4_000,
  running: 500,
  replyMiB: 8,
};

const MiB = 1024 * 1024;

async function connect(root, env) {
  const telemetryDir = makeTempDir('bench-agent-');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [path.join(root, 'dist/cli.js')],
    env: baseEnv({ OLLAMA_BIN: NODE_FAKE, OLLAMA_MCP_TELEMETRY_DIR: telemetryDir, FAKE_OLLAMA_STATE_DIR: telemetryDir, ...env }),
    stderr: 'pipe',
  });
  const client = new Client({ name: 'ollama-runner-bench', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    async close() {
      await client.close().catch(() => {});
      removeTempDir(telemetryDir);
    },
  };
}

/** Bytes a structuredContent-reading client hands the model, and the part that is the answer itself. */
async function view(client, name, args) {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120_000 });
  const json = JSON.stringify(result.structuredContent ?? null);
  const answers = answersOf(result.structuredContent);
  return { bytes: json.length, beyondAnswer: json.length - answers, result };
}

/** Characters of answers in a result (`output`, or each job's), serialized as they are in the JSON. */
function answersOf(structured) {
  const outputs = Array.isArray(structured?.results) ? structured.results.map((r) => r.output ?? '') : [structured?.output ?? ''];
  return outputs.reduce((sum, output) => sum + JSON.stringify(output).length - 2, 0);
}

export async function measureAgentView({ root = ROOT } = {}) {
  const figures = {};
  const main = await connect(root, { OLLAMA_MCP_MAX_OUTPUT_BYTES: '8000000', OLLAMA_MCP_CONCURRENCY: '8' });
  try {
    const { tools } = await main.client.listTools();
    const visible = tools.map(({ name, title, description, inputSchema }) => ({ name, title, description, inputSchema }));
    figures.tools = {
      count: tools.length,
      visible: JSON.stringify(visible).length,
      whole: JSON.stringify({ tools }).length,
      instructions: (main.client.getInstructions() ?? '').length,
      longestDescription: Math.max(...tools.map((t) => Buffer.byteLength(t.description ?? ''))),
      // null on a build without it
      wait: JSON.stringify(visible.find((t) => t.name === 'ollama_wait'))?.length ?? null,
    };
    const c = main.client;
    figures.ok = (await view(c, 'ollama_run', { model: 'llama3.2', prompt: 'hi', task_id: 'bench-ok' })).beyondAnswer;
    figures.failure = (await view(c, 'ollama_run', { model: 'llama3.2', prompt: 'x @fake:exit=1', task_id: 'bench-fail' })).bytes;
    figures.escalation = (
      await view(c, 'ollama_run', {
        model: 'llama3.2',
        prompt: 'x @fake:exit=1',
        task_id: 'bench-esc',
        retry_count: 3,
        max_retries: 3,
      })
    ).bytes;
    const jobs = [1, 2].map((i) => ({ model: 'llama3.2', prompt: `job ${i}`, task_id: `bench-job-${i}` }));
    figures.batchJob = Math.round((await view(c, 'ollama_run_many', { jobs })).beyondAnswer / 2);
    figures.running = await runningReply(c);
    figures.largestReply = await largestReply(c);
  } finally {
    await main.close();
  }
  // A circuit opened by one failure (threshold 1), then a call it refuses.
  const tripped = await connect(root, { OLLAMA_MCP_BREAKER_THRESHOLD: '1' });
  try {
    await view(tripped.client, 'ollama_run', { model: 'llama3.2', prompt: 'x @fake:exit=1', task_id: 'bench-trip' });
    figures.circuitOpen = (
      await view(tripped.client, 'ollama_run', { model: 'llama3.2', prompt: 'x', task_id: 'bench-refused' })
    ).bytes;
  } finally {
    await tripped.close();
  }
  return figures;
}

/** A run handed back as a job at once (reply_within_ms 0): both views' bytes; null on a build without jobs. */
async function runningReply(client) {
  const args = { model: 'llama3.2', prompt: 'x @fake:sleep_ms=500', task_id: 'bench-running', reply_within_ms: 0 };
  const result = await client.callTool({ name: 'ollama_run', arguments: args }, undefined, { timeout: 120_000 });
  if (result.structuredContent?.status !== 'running') return null;
  const collected = await client.callTool({ name: 'ollama_wait', arguments: { job_id: result.structuredContent.job_id } });
  if (collected.structuredContent?.status !== 'ok') throw new Error(`the job ended ${collected.structuredContent?.status}`);
  return { structured: JSON.stringify(result.structuredContent).length, text: result.content[0].text.length };
}

/** Six jobs of 0.9 MB answers: the size of the reply line, or why it never arrived. */
async function largestReply(client) {
  const jobs = Array.from({ length: 6 }, (_, i) => ({ model: 'llama3.2', prompt: `flood ${i} @fake:flood_bytes=900000` }));
  try {
    const result = await client.callTool({ name: 'ollama_run_many', arguments: { jobs, concurrency: 6 } }, undefined, {
      timeout: 120_000,
    });
    return { arrived: true, bytes: Buffer.byteLength(JSON.stringify({ jsonrpc: '2.0', id: 1, result })) };
  } catch (error) {
    return { arrived: false, error: error instanceof Error ? error.message : String(error) };
  }
}

/** Lines for the bench's output. */
export function agentViewLines(f) {
  const kb = (bytes) => `${bytes.toLocaleString('en-US')} bytes`;
  const reply = f.largestReply.arrived
    ? `${(f.largestReply.bytes / MiB).toFixed(2)} MiB`
    : `never arrived (${f.largestReply.error})`;
  return [
    `  result as the model reads it (JSON of structuredContent), beyond the answer: ok ${kb(f.ok)} (before ${BEFORE.ok})`,
    `  retryable failure ${kb(f.failure)} (before ${BEFORE.failure}); escalation ${kb(f.escalation)} (before ${BEFORE.escalation}); circuit-open refusal ${kb(f.circuitOpen)}; per batch job ${kb(f.batchJob)}`,
    `  tools/list: ${f.tools.count} tools, model-visible ${kb(f.tools.visible)} (before ${BEFORE.toolsVisible.toLocaleString('en-US')}), whole ${kb(f.tools.whole)}; instructions ${kb(f.tools.instructions)}; longest description ${kb(f.tools.longestDescription)}`,
    f.running === null
      ? '  running reply: none (a build without jobs)'
      : `  running reply (a run handed back as a job): structuredContent ${kb(f.running.structured)}, text ${kb(f.running.text)}; ollama_wait's tools/list entry ${kb(f.tools.wait)}`,
    `  largest reply, six jobs of 0.9 MB: ${reply} (before: never arrived, over the client's 10 MiB line limit)`,
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const at = process.argv.indexOf('--root');
  const root = at === -1 ? ROOT : path.resolve(process.argv[at + 1] ?? '.');
  const figures = await measureAgentView({ root });
  process.stdout.write(`agent view of ${path.relative(process.cwd(), root) || '.'}\n${agentViewLines(figures).join('\n')}\n`);
}
