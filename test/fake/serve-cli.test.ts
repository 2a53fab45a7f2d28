// The CLI fake in shared mode (FAKE_OLLAMA_SERVE=1) behaves as the real CLI does with a real server:
// the heartbeat, a silent stdout until the generation starts, `--verbose` with the load the server
// measured, `ps` from the server, errors with their status, and the `@fake:` directives.
import { describe, expect, it } from 'vitest';
import { parsePsContext } from '../../src/ollama/context-window.js';
import { parseUsage } from '../../src/ollama/verbose-stats.js';
import { BUSY_LINE, at, cli, errorText, firstStdoutAt, run, untilRequest, useServe, waitForEvent } from './shared-mode.js';

const CONNECT_ERROR = "Error: ollama server not responding - could not connect to ollama server, run 'ollama serve' to start it";

describe('the heartbeat', () => {
  it('with nothing listening at OLLAMA_HOST, run, ps and list fail with the connect error of the version', async () => {
    const serve = await useServe();
    await serve.stop();
    for (const args of [['run', 'llama3.2', 'hi'], ['ps'], ['list']]) {
      const r = await cli(serve, args);
      expect(r.exitCode).toBe(1);
      expect(errorText(r.stderr)).toBe(CONNECT_ERROR);
    }
    const recent = await cli(serve, ['run', 'llama3.2', 'hi'], { env: { FAKE_OLLAMA_VERSION: '0.16.0' } });
    expect(errorText(recent.stderr)).toBe("Error: could not connect to ollama server, run 'ollama serve' to start it");
    const version = await cli(serve, ['--version']);
    expect(version).toMatchObject({
      exitCode: 0,
      stdout: 'Warning: could not connect to a running Ollama instance\nWarning: client version is 0.12.0\n',
    });
  });

  it("--version reports the server's version, and the client's when they differ", async () => {
    const serve = await useServe({ FAKE_OLLAMA_VERSION: '0.13.0' });
    expect((await cli(serve, ['--version'])).stdout).toBe('ollama version is 0.13.0\nWarning: client version is 0.12.0\n');
    expect((await cli(serve, ['--version'], { env: { FAKE_OLLAMA_VERSION: '0.13.0' } })).stdout).toBe(
      'ollama version is 0.13.0\n',
    );
  });
});

describe('what the CLI shows', () => {
  it('stdout stays silent while the request is queued and its model loads, the spinner runs on stderr', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '500' });
    const sub = run(serve, 'llama3.2', 'hi @fake:sleep_ms=200');
    const firstOut = firstStdoutAt(sub);
    const r = await sub;
    expect(r.stdout).toBe('fake answer from llama3.2: hi\n\n');
    expect(r.stderr.match(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/g)?.length ?? 0).toBeGreaterThanOrEqual(2); // a frame every ~100 ms over 600 ms
    const start = serve.events().find((e) => e.event === 'request_start')!;
    expect(await firstOut).toBeGreaterThanOrEqual(start.t);
  });

  it('--verbose: a cold load shows the load the server measured, a warm one about none', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '400' });
    const cold = parseUsage((await run(serve, 'llama3.2', 'hi', ['--verbose'])).stderr);
    const warm = parseUsage((await run(serve, 'llama3.2', 'hi again', ['--verbose'])).stderr);
    expect(cold.load_ms).toBeGreaterThanOrEqual(380);
    expect(warm.load_ms).toBeLessThan(100);
    expect(cold.total_ms).toBeGreaterThanOrEqual(cold.load_ms!);
    expect(warm.prompt_tokens).toBe(12); // a token per 4 bytes + 10, as in per-process mode
    expect(warm.output_tokens).toBe(6);
  });

  it('--verbose: time waiting for a parallel slot is not load time', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    await run(serve, 'llama3.2', 'warm up');
    const first = run(serve, 'llama3.2', 'a @fake:hang');
    await waitForEvent(serve, (e) => e.event === 'request_start' && e.id === 'r2', 'the first generation');
    const second = run(serve, 'llama3.2', 'b', ['--verbose']);
    await untilRequest(serve, second.pid, 'attached', 'the second request');
    await new Promise((resolve) => setTimeout(resolve, 300));
    first.kill('SIGINT');
    const usage = parseUsage((await second).stderr);
    expect(usage.load_ms).toBeLessThan(100);
    expect(usage.total_ms).toBeGreaterThanOrEqual(300);
    await first;
  });

  it('a thinking model streams its thinking block first; --hidethinking hides it', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    const thinking = await run(serve, 'qwen3:8b', 'hi');
    expect(thinking.stdout).toMatch(
      /^Thinking\.\.\.\nOkay, qwen3:8b got a prompt of 1 word\(s\)\..*\n\.\.\.done thinking\.\n\nfake answer from qwen3:8b: hi\n\n$/s,
    );
    const hidden = await run(serve, 'qwen3:8b', 'hi', ['--hidethinking']);
    expect(hidden.stdout).toBe('fake answer from qwen3:8b: hi\n\n');
  });

  it('SIGINT while queued behind another request exits 0 with nothing printed, and the server drops it', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    const busy = run(serve, 'llama3.2', 'a @fake:hang');
    await waitForEvent(serve, (e) => e.event === 'request_start', 'the first generation');
    const waiting = run(serve, 'llama3.2', 'b');
    const waitingId = (await untilRequest(serve, waiting.pid, 'attached', 'the second request')).id;
    waiting.kill('SIGINT');
    const r = await waiting;
    expect(r).toMatchObject({ exitCode: 0, stdout: '' });
    await waitForEvent(serve, (e) => e.event === 'request_cancelled' && e.id === waitingId, 'the cancel');
    busy.kill('SIGKILL');
    await busy;
  });
});

describe('ps asks the server', () => {
  it('lists what is loaded: the real columns, UNTIL in words, Forever and Stopping...', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50', FAKE_OLLAMA_VRAM_GB: '20' });
    expect((await cli(serve, ['ps'])).stdout).toBe('NAME    ID    SIZE    PROCESSOR    CONTEXT    UNTIL \n');
    await run(serve, 'llama3.2', 'hi');
    expect((await run(serve, 'qwen2.5-coder:7b', 'hi', ['--keepalive', '-1m'])).exitCode).toBe(0);
    const stopping = run(serve, 'qwen3:8b', 'hi @fake:hang', ['--keepalive', '0']);
    await waitForEvent(serve, (e) => e.event === 'request_start' && e.model === 'qwen3:8b', 'the third generation');
    const ps = (await cli(serve, ['ps'])).stdout.split('\n');
    stopping.kill('SIGINT');
    await stopping;
    await waitForEvent(serve, (e) => e.event === 'unload' && e.model === 'qwen3:8b', 'the unload');
    expect(ps[0]).toMatch(/^NAME {4,}ID {4,}SIZE {4,}PROCESSOR {4,}CONTEXT {4,}UNTIL +$/);
    expect(ps[1]).toMatch(/^qwen2\.5-coder:7b {4,}[0-9a-f]{12} {4,}4 GB {4,}100% GPU {4,}4096 {4,}Forever {4,}$/);
    expect(ps[2]).toMatch(/^llama3\.2:latest {4,}[0-9a-f]{12} {4,}4 GB {4,}100% GPU {4,}4096 {4,}4 minutes from now {4}$/);
    expect(ps[3]).toMatch(/^qwen3:8b {4,}[0-9a-f]{12} {4,}4 GB {4,}100% GPU {4,}4096 {4,}Stopping\.\.\. {4,}$/);
    expect(ps).toHaveLength(5);
    expect((await cli(serve, ['ps'])).stdout).not.toContain('qwen3:8b'); // unloaded once its request ended
  });

  it('shows a model too big for the VRAM split between CPU and GPU, and the context it was loaded with', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50', FAKE_OLLAMA_MODEL_GB: 'llama3.2=8' });
    await run(serve, 'llama3.2', 'hi', [], { FAKE_OLLAMA_NUM_CTX: 'llama3.2=8192' });
    const ps = (await cli(serve, ['ps'])).stdout;
    expect(ps.split('\n')[1]).toMatch(/^llama3\.2:latest {4,}[0-9a-f]{12} {4,}8 GB {4,}25%\/75% CPU\/GPU {4,}8192 {4,}/);
    expect(parsePsContext(ps, 'llama3.2')).toEqual({ hasColumn: true, context: 8192 });
  });

  it('stop unloads a model through the server', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    await run(serve, 'llama3.2', 'hi');
    expect((await cli(serve, ['stop', 'llama3.2'])).exitCode).toBe(0);
    expect(serve.events().find((e) => e.event === 'unload')?.reason).toBe('stop');
    expect((await cli(serve, ['ps'])).stdout.split('\n')).toHaveLength(2);
  });
});

describe('directives and failures in shared mode', () => {
  it('answer=, empty and flood_bytes shape what the server streams', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    expect((await run(serve, 'llama3.2', 'x @fake:answer=hello%20there')).stdout).toBe('hello there\n\n');
    expect((await run(serve, 'llama3.2', 'x @fake:empty')).stdout).toBe('\n\n');
    const flood = await run(serve, 'llama3.2', 'x @fake:flood_bytes=200000');
    expect(flood.stdout.length).toBe(200_002);
    expect(flood.stdout.startsWith('the quick brown fox')).toBe(true);
  });

  it('error=busy is the 503 at once, without queueing; error=context_length the 400 once the model is loaded', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    const busy = await run(serve, 'llama3.2', 'x @fake:error=busy');
    expect(errorText(busy.stderr)).toBe(BUSY_LINE);
    expect(at(serve.events(), 'queued')).toBe(-1);
    const long = await run(serve, 'llama3.2', 'x @fake:error=context_length');
    expect(errorText(long.stderr)).toMatch(/^Error: 400 Bad Request: the prompt is longer than the context length/);
    expect(serve.loads()).toBe(1);
  });

  it('error=runner_terminated fails the load (nothing stays loaded); on a loaded model the runner dies and reloads', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    const failed = await run(serve, 'llama3.2', 'x @fake:error=runner_terminated');
    expect(failed.exitCode).toBe(1);
    expect(errorText(failed.stderr)).toBe('Error: 500 Internal Server Error: llama-server process has terminated: exit status 2');
    expect(serve.events().some((e) => e.event === 'load_failed')).toBe(true);
    expect(serve.loads()).toBe(0);
    await run(serve, 'llama3.2', 'fine');
    expect(errorText((await run(serve, 'llama3.2', 'x @fake:error=oom')).stderr)).toMatch(
      /^Error: 500 Internal Server Error: llama-server reported out-of-memory/,
    );
    await run(serve, 'llama3.2', 'fine');
    expect(serve.loads()).toBe(2);
    expect(
      serve
        .events()
        .filter((e) => e.event === 'unload')
        .map((e) => e.reason),
    ).toEqual(['reload']);
  });

  it('FAKE_OLLAMA_BROKEN_MODELS in the server or the CLI environment fails the load', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50', FAKE_OLLAMA_BROKEN_MODELS: 'qwen3:8b' });
    const TERMINATED = 'Error: 500 Internal Server Error: llama-server process has terminated: exit status 2';
    expect(errorText((await run(serve, 'qwen3:8b', 'x')).stderr)).toBe(TERMINATED);
    expect(errorText((await run(serve, 'llama3.2', 'x', [], { FAKE_OLLAMA_BROKEN_MODELS: 'llama3.2' })).stderr)).toBe(TERMINATED);
    expect(serve.loads()).toBe(0);
  });

  it('exit=N is applied by the CLI when the generation starts; its closed connection cancels the request', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    const r = await run(serve, 'llama3.2', 'x @fake:exit=3 @fake:stderr=boom @fake:sleep_ms=400');
    expect(r.exitCode).toBe(3);
    expect(errorText(r.stderr)).toBe('Error: boom');
    expect(serve.loads()).toBe(1);
    await waitForEvent(serve, (e) => e.event === 'request_cancelled', 'the cancel');
  });

  it('crash_signal dies by the signal after the first answer chunk; the server cancels', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    const r = await run(serve, 'llama3.2', 'one two three @fake:crash_signal=SIGSEGV @fake:sleep_ms=400');
    expect(r.signal).toBe('SIGSEGV');
    expect(r.stdout).toBe('fake');
    await waitForEvent(serve, (e) => e.event === 'request_cancelled', 'the cancel');
  });

  it('an empty prompt only loads the model; --format json answers JSON', async () => {
    const serve = await useServe({ FAKE_OLLAMA_LOAD_MS: '50' });
    expect(await cli(serve, ['run', 'llama3.2'])).toMatchObject({ exitCode: 0, stdout: '' });
    expect(serve.loads()).toBe(1);
    expect(at(serve.events(), 'request_start')).toBe(-1);
    const json = await run(serve, 'llama3.2', 'hi', ['--format', 'json']);
    expect(JSON.parse(json.stdout)).toEqual({ answer: 'fake answer from llama3.2: hi' });
  });
});
