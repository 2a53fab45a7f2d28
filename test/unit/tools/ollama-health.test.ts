import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import type { HealthReport } from '../../../src/health/health-report-schema.js';
import { registerTools } from '../../../src/mcp/tool-registry.js';
import { InstalledModels } from '../../../src/ollama/installed-models.js';
import { StateStore } from '../../../src/store/state/state-store.js';
import { ollamaHealthTool } from '../../../src/tools/ollama-health.js';
import { tempDir } from '../../helpers/temp-dir.js';

const FAKE_OLLAMA = path.resolve(__dirname, '../../fixtures/fake-ollama.mjs');

describe('ollama_health over MCP (in memory)', () => {
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
  });

  async function connect(fakeEnv: Record<string, string> = {}): Promise<Client> {
    const dir = tempDir('health-tool-');
    const config = loadConfig({ OLLAMA_BIN: FAKE_OLLAMA, OLLAMA_MCP_TELEMETRY_DIR: dir, OLLAMA_MCP_CONCURRENCY: '2' });
    const server = new Server({ name: 'test', version: '0.0.0' }, { capabilities: { tools: {} } });
    registerTools(server, [
      ollamaHealthTool(async () => ({
        config,
        store: new StateStore(path.join(dir, 'state.json'), { onWarning: () => {} }),
        runs: {
          inFlight: 0,
          queue: { running: 0, waiting: 0, limit: config.concurrency, loaded: [], capacity: 1, memoryBudget: null },
        },
        installedModels: new InstalledModels({
          bin: config.ollamaBin,
          env: { PATH: process.env.PATH, HOME: process.env.HOME, ...fakeEnv },
          ttlMs: config.modelListTtlMs,
        }),
      })),
    ]);
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'unit', version: '1.0.0' });
    await Promise.all([server.connect(serverTransport), client.connect(clientTransport)]);
    clients.push(client);
    return client;
  }

  it('is listed as read-only, with only response_format, and an outputSchema for both formats', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === 'ollama_health');
    expect(tool).toBeDefined();
    expect(tool!.description).toMatch(/^Check, without running a model, whether Ollama works/);
    expect(tool!.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    expect(tool!.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
    expect(Object.keys(tool!.inputSchema.properties ?? {})).toEqual(['response_format']);
    expect(tool!.outputSchema?.required).toEqual(['ok']);
    expect(Object.keys(tool!.outputSchema?.properties ?? {})).toEqual(
      expect.arrayContaining(['ok', 'problems', 'cli', 'server', 'models', 'circuits', 'runs', 'telemetry', 'config']),
    );
  });

  it('concise by default: ok, the models to pick from, and nothing empty', async () => {
    const client = await connect();
    await client.listTools();
    const result = await client.callTool({ name: 'ollama_health', arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({
      ok: true,
      models: { installed: expect.arrayContaining(['llama3.2:latest']) },
    });
    expect(JSON.stringify(result.structuredContent).length).toBeLessThan(400);
  });

  it('healthy, detailed: the whole report (validated by the client against outputSchema) and its text', async () => {
    const client = await connect();
    await client.listTools(); // lets the client validate structuredContent against the outputSchema
    const result = await client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    const report = result.structuredContent as HealthReport;
    expect(result.isError).toBeFalsy();
    expect(report).toMatchObject({
      ok: true,
      cli: { found: true, version: '0.12.0' },
      server: { reachable: true },
      runs: { concurrency: 2 },
    });
    expect(report.models.installed).toContain('llama3.2:latest');
    const text = (result.content as { type: string; text: string }[])[0]!.text;
    expect(text).toContain('✓ Ollama server: reachable');
  });

  it('unhealthy is still a successful call: isError false, ok false', async () => {
    const client = await connect({ FAKE_OLLAMA_SERVER: 'down' });
    await client.listTools();
    const result = await client.callTool({ name: 'ollama_health', arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ ok: false, problems: [expect.stringMatching(/not reachable/)] });
  });

  it('unknown arguments: the report anyway, the call problem first, isError true', async () => {
    const client = await connect();
    const result = await client.callTool({ name: 'ollama_health', arguments: { model: 'llama3.2' } });
    expect(result.isError).toBe(true);
    const report = result.structuredContent as HealthReport;
    expect(report.problems[0]).toMatch(/takes only response_format.*unknown argument `model`/);
    const detailed = await client.callTool({ name: 'ollama_health', arguments: { model: 'x', response_format: 'detailed' } });
    expect((detailed.structuredContent as HealthReport).server.reachable).toBe(true);
  });
});
