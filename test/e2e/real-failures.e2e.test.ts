// The real CLI's failures (ollama-cli.md, "Errors and exit codes"), printed by the fake exactly as
// Ollama v0.33 prints them, through the built server: the status each one gets, whether it escalates,
// whether it may be retried, and whether it touched the model's circuit.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { readRuns, startTestServer, useServer } from './harness.js';

const INSTALLED = [
  'llama3.2:latest',
  'llava:7b',
  'nomic-embed-text:latest',
  'x/flux2-klein:latest',
  'localhost:5000/team/model:v1',
  '_private:latest',
  ...Array.from({ length: 20 }, (_, i) => `case${i}:latest`),
];

describe('real Ollama failures through the built server', () => {
  const server = useServer({
    // A remote Ollama: the dial errors name it.
    OLLAMA_HOST: 'http://10.0.0.5:11434',
    FAKE_OLLAMA_MODELS: INSTALLED.join(','),
    FAKE_OLLAMA_CLOUD_AVAILABLE: 'glm-5',
    // High enough that no case opens a circuit: consecutive_failures shows what each one counted.
    OLLAMA_MCP_BREAKER_THRESHOLD: '100',
  });
  let files: string;
  beforeAll(() => {
    files = path.join(server.sandbox.root, 'files');
    mkdirSync(files);
  });

  let next = 0;
  /** A model of its own for each case, so its circuit shows only that case. */
  const freshModel = () => `case${next++}`;

  const expectations = {
    unreachable: {
      status: 'ollama_unreachable',
      escalate: true,
      escalation_reason: 'ollama_unreachable',
      retryable: false,
      failures: 0,
    },
    busy: { status: 'server_busy', escalate: false, escalation_reason: null, retryable: true, failures: 0 },
    rateLimited: { status: 'rate_limited', escalate: false, escalation_reason: null, retryable: true, failures: 0 },
    denied: {
      status: 'cloud_access_denied',
      escalate: true,
      escalation_reason: 'cloud_access_denied',
      retryable: false,
      failures: 0,
    },
    tooLong: { status: 'prompt_too_long', escalate: false, escalation_reason: null, retryable: false, failures: 0 },
    unsupported: { status: 'model_unsupported', escalate: false, escalation_reason: null, retryable: false, failures: 0 },
    crashed: { status: 'crashed', escalate: false, escalation_reason: null, retryable: true, failures: 1 },
  } as const;

  it.each([
    [
      'Head ...: connect: no route to host',
      'no_route',
      expectations.unreachable,
      'dial tcp 10.0.0.5:11434: connect: no route to host',
    ],
    ['Head ...: no such host', 'no_such_host', expectations.unreachable, 'lookup 10.0.0.5 on 127.0.0.53:53: no such host'],
    ['Head ...: i/o timeout', 'io_timeout', expectations.unreachable, 'i/o timeout'],
    ['Head ...: connection timed out', 'connect_timeout', expectations.unreachable, 'connect: connection timed out'],
    ['Head ...: network is unreachable', 'net_unreachable', expectations.unreachable, 'connect: network is unreachable'],
    ['503 server busy', 'busy', expectations.busy, '503 Service Unavailable: server busy'],
    ['429 usage limit', 'usage_limit', expectations.rateLimited, "429 Too Many Requests: you've reached your hourly usage limit"],
    ['403 subscription', 'subscription', expectations.denied, '403 Forbidden: this model requires a subscription'],
    ['403 cloud disabled', 'cloud_disabled', expectations.denied, '403 Forbidden: ollama cloud is disabled'],
    ['400 prompt longer than the context', 'context_length', expectations.tooLong, 'shorten the prompt or split it'],
    ['MLX context overflow', 'context_length_mlx', expectations.tooLong, "exceeds the model's maximum context length"],
    ['400 does not support generate', 'no_generate', expectations.unsupported, 'does not support generate'],
    ['500 llama-server process has terminated', 'runner_terminated', expectations.crashed, 'llama-server process has terminated'],
    [
      '500 model runner has unexpectedly stopped',
      'runner_stopped',
      expectations.crashed,
      'model runner has unexpectedly stopped',
    ],
    ['500 out-of-memory during startup', 'oom', expectations.crashed, 'out-of-memory during startup'],
  ] as const)('%s', async (_name, kind, want, errorText) => {
    const model = freshModel();
    const r = await server.run({ model, prompt: `hi @fake:error=${kind}`, task_id: `t-${kind}` });
    expect(r.isError).toBe(true);
    expect(r.metadata).toMatchObject({
      status: want.status,
      ok: false,
      escalate: want.escalate,
      escalation_reason: want.escalation_reason,
      retryable: want.retryable,
    });
    expect(r.metadata.circuit).toMatchObject({ state: 'closed', consecutive_failures: want.failures });
    expect(r.metadata.error?.message).toContain(errorText);
  });

  it('a registry that cannot be reached during an allowed pull is pull_failed: retryable, not escalated, circuit untouched', async () => {
    const r = await server.run({
      model: 'mistral',
      prompt: 'hi @fake:error=registry_unreachable',
      allow_pull: true,
      task_id: 't-pull',
    });
    expect(r.metadata).toMatchObject({ status: 'pull_failed', escalate: false, retryable: true });
    expect(r.metadata.circuit.consecutive_failures).toBe(0);
    expect(r.metadata.error?.message).toContain(
      'pull model manifest: Get "https://registry.ollama.ai/v2/library/mistral/manifests/latest": dial tcp: lookup registry.ollama.ai',
    );
  });

  it('only "file does not exist" is a missing model; the cloud hint of the multi-line error is kept', async () => {
    const r = await server.run({ model: 'glm-5', prompt: 'hi', allow_pull: true });
    expect(r.metadata).toMatchObject({ status: 'model_not_found', escalate: true, escalation_reason: 'model_not_found' });
    expect(r.metadata.error?.message).toContain('pull model manifest: file does not exist');
    expect(r.metadata.error?.message).toContain('"glm-5:cloud" is available as a cloud model');
  });

  it('429 is retried like server_busy: it spends max_retries, then escalates', async () => {
    const call = { model: freshModel(), prompt: 'hi @fake:error=usage_limit', task_id: 't-429', max_retries: 1 };
    const first = await server.run(call);
    expect(first.metadata).toMatchObject({ status: 'rate_limited', escalate: false, retryable: true, retries_left: 1 });
    // Retried inside the call first (OLLAMA_MCP_BUSY_RETRIES, 3): the caller sees the 429 only after those.
    expect(first.metadata.busy_retries).toBe(3);
    const second = await server.run(call);
    expect(second.metadata).toMatchObject({ status: 'rate_limited', escalate: true, escalation_reason: 'max_retries_exceeded' });
    expect(second.metadata.circuit.consecutive_failures).toBe(0);
  });

  it('an image generation model is model_unsupported', async () => {
    const r = await server.run({ model: 'x/flux2-klein', prompt: 'a cat' });
    expect(r.metadata).toMatchObject({ status: 'model_unsupported', escalate: false, retryable: false });
    expect(r.metadata.error?.message).toContain('image generation models are not currently supported');
    expect(r.metadata.circuit.consecutive_failures).toBe(0);
  });

  it('an embedding model (a JSON vector, exit 0) is model_unsupported, never ok, and returns no vector', async () => {
    const r = await server.run({ model: 'nomic-embed-text', prompt: 'embed me' });
    expect(r.isError).toBe(true);
    expect(r.metadata).toMatchObject({ status: 'model_unsupported', ok: false, exit_code: 0, escalate: false, retryable: false });
    expect(r.output).toBe('');
    expect(r.metadata.error?.message).toMatch(/embedding model/);
    expect(r.metadata.circuit.consecutive_failures).toBe(0);
  });

  it('sign-in: the real notice is signin_required; an answer quoting the sentence is ok', async () => {
    const signin = await server.run({ model: 'gpt-oss:120b-cloud', prompt: 'hi' });
    expect(signin.metadata).toMatchObject({ status: 'signin_required', escalate: true, escalation_reason: 'signin_required' });
    const quote = 'The%20CLI%20says%20%22You%20need%20to%20be%20signed%20in%20to%20Ollama%20to%20run%20Cloud%20models.%22';
    const answer = await server.run({ model: 'llama3.2', prompt: `what does it say? @fake:answer=${quote}` });
    expect(answer.metadata).toMatchObject({ status: 'ok', escalate: false });
    expect(answer.output).toBe('The CLI says "You need to be signed in to Ollama to run Cloud models."');
  });

  it('a vision model attaches an image the prompt names; a file it cannot read is input_file_error', async () => {
    const image = path.join(files, 'cat.png');
    writeFileSync(image, Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), Buffer.alloc(32, 7)]));
    const ok = await server.run({ model: 'llava:7b', prompt: `describe ${image}` });
    expect(ok.metadata.status).toBe('ok');
    expect(ok.output).not.toContain(image); // the CLI took the path out of the prompt and attached the file

    const notAnImage = path.join(files, 'notes.jpg');
    writeFileSync(notAnImage, 'meeting notes\n');
    const r = await server.run({ model: 'llava:7b', prompt: `describe ${notAnImage}`, task_id: 't-file' });
    expect(r.metadata).toMatchObject({ status: 'input_file_error', escalate: false, retryable: false });
    expect(r.metadata.error?.message).toContain('invalid file type: text/plain; charset=utf-8');
    expect(r.metadata.error?.message).toMatch(/Remove the path from the prompt/);
    expect(r.metadata.circuit.consecutive_failures).toBe(0);

    const directory = path.join(files, 'album.png');
    mkdirSync(directory);
    const dir = await server.run({ model: 'llava:7b', prompt: `describe ${directory}` });
    expect(dir.metadata.status).toBe('input_file_error');
    expect(dir.metadata.error?.message).toContain(`read ${directory}: is a directory`);
  });

  it('installed models named with a registry host and port, or a leading _, are found and run', async () => {
    for (const model of ['localhost:5000/team/model:v1', '_private']) {
      const r = await server.run({ model, prompt: 'hi' });
      expect(r.metadata.status, model).toBe('ok');
      expect(r.output).toBe(`fake answer from ${model}: hi`);
    }
  });

  it('every one of these attempts is in runs.jsonl with its status', () => {
    const statuses = new Set(readRuns(server.sandbox).map((line) => line.status));
    for (const status of [
      'ollama_unreachable',
      'server_busy',
      'pull_failed',
      'rate_limited',
      'cloud_access_denied',
      'prompt_too_long',
      'model_unsupported',
      'input_file_error',
      'crashed',
      'signin_required',
      'model_not_found',
    ]) {
      expect(statuses, status).toContain(status);
    }
  });
});

describe('a remote OLLAMA_HOST that cannot be reached, and versions, through the built server', () => {
  it('runs end as ollama_unreachable (circuit untouched) and ollama_health says the server is not reachable', async () => {
    const server = await startTestServer({ OLLAMA_HOST: 'http://gpu-box:11434', FAKE_OLLAMA_SERVER: 'no_such_host' });
    const r = await server.run({ model: 'llama3.2', prompt: 'hi', task_id: 'remote-1' });
    expect(r.metadata).toMatchObject({
      status: 'ollama_unreachable',
      escalate: true,
      escalation_reason: 'ollama_unreachable',
      retryable: false,
    });
    expect(r.metadata.circuit).toMatchObject({ state: 'closed', consecutive_failures: 0 });
    expect(r.metadata.error?.message).toBe(
      'Head "http://gpu-box:11434/": dial tcp: lookup gpu-box on 127.0.0.53:53: no such host',
    );
    const health = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    const report = health.structuredContent as { server: { reachable: boolean; version: string | null } };
    expect(report.server).toMatchObject({ reachable: false, version: null });
  });

  it('ollama_health reports the CLI version and the server version apart', async () => {
    const server = await startTestServer({ FAKE_OLLAMA_VERSION: '0.33.0', FAKE_OLLAMA_CLIENT_VERSION: '0.13.1' });
    const health = await server.client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
    const report = health.structuredContent as {
      cli: { version: string };
      server: { version: string };
      warnings: string[];
    };
    expect(report.cli.version).toBe('0.13.1');
    expect(report.server.version).toBe('0.33.0');
    expect(report.warnings.join('\n')).toMatch(/the ollama CLI \(0\.13\.1\) and the Ollama server \(0\.33\.0\)/);
    const text = (health.content as { text: string }[]).map((c) => c.text).join('\n');
    expect(text).toContain('(version 0.33.0)');
  });
});
