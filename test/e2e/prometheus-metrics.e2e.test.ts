import { request } from 'node:http';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useHttpServer } from './harness.js';
import { notePrometheusSkipped, PROMETHEUS_AVAILABLE, startPrometheus, type Prometheus } from '../helpers/prometheus.js';

// `/metrics` of the `--http` server, as a real Prometheus scrapes it (with the server's bearer token).

notePrometheusSkipped();

describe('GET /metrics on the --http server', () => {
  const server = useHttpServer();
  let client: Client;

  beforeAll(async () => {
    client = new Client({ name: 'metrics-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.auth } }));
    const run = (args: Record<string, unknown>) => client.callTool({ name: 'ollama_run', arguments: args });
    await run({ model: 'llama3.2', prompt: 'one' });
    await run({ model: 'llama3.2', prompt: 'two' });
    // One task fails three times and escalates (max_retries 2).
    for (let i = 0; i < 3; i += 1) {
      await run({ model: 'qwen3:8b', prompt: 'broken @fake:exit=1', task_id: 'metrics-task', max_retries: 2 });
    }
  }, 60_000);

  afterAll(() => client?.close());

  const metricsUrl = () => `http://127.0.0.1:${server.port}/metrics`;

  it('needs the bearer token, like /mcp', async () => {
    const response = await fetch(metricsUrl());
    expect(response.status).toBe(401);
  });

  it('refuses a foreign Host (DNS rebinding), like /mcp', async () => {
    // fetch() may not set Host: a plain request does.
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const headers = { ...server.auth, Host: `evil.example:${server.port}` };
      request(metricsUrl(), { headers }, (response) => {
        response.resume();
        resolve(response.statusCode);
      })
        .on('error', reject)
        .end();
    });
    expect(status).toBe(403);
  });

  it('serves only GET', async () => {
    const response = await fetch(metricsUrl(), { method: 'POST', headers: server.auth, body: '' });
    expect(response.status).toBe(405);
  });

  it('answers the text format, with Prometheus names', async () => {
    const response = await fetch(metricsUrl(), { headers: server.auth });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    const text = await response.text();
    expect(text).toContain('# TYPE ollama_runner_attempts_total counter');
    expect(text).toContain('ollama_runner_attempts_total{gen_ai_request_model="llama3.2",ollama_runner_status="ok"} 2');
    expect(text).toContain('# TYPE mcp_server_operation_duration_seconds histogram');
    expect(text).toContain('# TYPE gen_ai_client_token_usage histogram');
  });

  describe.skipIf(!PROMETHEUS_AVAILABLE)('scraped by a real Prometheus', () => {
    let prometheus: Prometheus;

    beforeAll(async () => {
      prometheus = await startPrometheus({
        port: server.port,
        tokenFile: path.join(server.sandbox.telemetryDir, 'http-token'),
      });
    });

    afterAll(() => prometheus?.stop());

    /** The series of `expression` once Prometheus has them (it scrapes every second). */
    async function seriesOf(expression: string) {
      for (let i = 0; i < 150; i += 1) {
        const result = await prometheus.query(expression).catch(() => []);
        if (result.length > 0) return result;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      throw new Error(`Prometheus never returned ${expression}:\n${prometheus.output()}`);
    }

    const valueOf = async (expression: string) => Number((await seriesOf(expression))[0]!.value[1]);

    it('scrapes the target (up = 1)', async () => {
      expect(await valueOf('up{job="ollama-runner"}')).toBe(1);
    });

    it('has the attempts by model and status', async () => {
      expect(await valueOf('ollama_runner_attempts_total{gen_ai_request_model="llama3.2",ollama_runner_status="ok"}')).toBe(2);
      expect(await valueOf('ollama_runner_attempts_total{gen_ai_request_model="qwen3:8b",ollama_runner_status="crashed"}')).toBe(
        3,
      );
    });

    it('has the escalation by reason, and the circuit of each model', async () => {
      expect(await valueOf('ollama_runner_escalations_total{ollama_runner_escalation_reason="max_retries_exceeded"}')).toBe(1);
      expect(await valueOf('ollama_runner_circuit_state{gen_ai_request_model="llama3.2"}')).toBe(0);
    });

    it('has the MCP and GenAI durations and the token usage', async () => {
      expect(await valueOf('sum(mcp_server_operation_duration_seconds_count{gen_ai_tool_name="ollama_run"})')).toBe(5);
      expect(await valueOf('mcp_server_operation_duration_seconds_count{error_type="tool_error"}')).toBe(3);
      expect(await valueOf('sum(gen_ai_client_inference_duration_seconds_count)')).toBe(5);
      expect(await valueOf('gen_ai_client_token_usage_count{gen_ai_token_type="output"}')).toBe(2);
      expect(await valueOf('ollama_runner_queue_length{ollama_runner_queue_state="waiting"}')).toBe(0);
    });
  });
});
