import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { shardOf } from '../../src/store/state/state-store.js';
import {
  makeSandbox,
  ROOT,
  SERVER_ENTRY,
  serverEnv,
  startServer,
  startTestServer,
  type RunningServer,
  type Sandbox,
} from '../e2e/harness.js';
import { cannotReach, NOBODY, serverFor } from '../helpers/other-user.js';

/** The detailed result: these tests read the whole record. */
async function call(server: RunningServer, name: string, args: Record<string, unknown>) {
  const result = await server.client.callTool({ name, arguments: { response_format: 'detailed', ...args } });
  const text = (result.content as { text: string }[]).map((c) => c.text).join('\n');
  return { structured: result.structuredContent as Record<string, any>, isError: result.isError === true, text };
}

const FAIL = { model: 'llama3.2', prompt: 'broken @fake:exit=1' };
const shardPath = (sandbox: Sandbox, taskId: string) =>
  path.join(sandbox.telemetryDir, 'state.tasks', `${shardOf(taskId).toString(16).padStart(2, '0')}.json`);
const copiesOf = (file: string) =>
  readdirSync(path.dirname(file))
    .filter((name) => name.startsWith(`${path.basename(file)}.corrupt-`))
    .map((name) => path.join(path.dirname(file), name));

describe('corrupt, empty and locked state files, through the built server', () => {
  /** A sandbox whose ledger holds 2 failures of task "t" and an open circuit for llama3.2. */
  async function withHistory(threshold = '2'): Promise<Sandbox> {
    const sandbox = makeSandbox();
    const first = await startServer(sandbox, { OLLAMA_MCP_BREAKER_THRESHOLD: threshold });
    for (let i = 0; i < 2; i += 1) await first.run({ ...FAIL, task_id: 't' });
    await first.close();
    return sandbox;
  }

  it('an empty (0-byte) state.json and shard: the loss is said on stderr and in what was lost, and each file is kept', async () => {
    const sandbox = await withHistory();
    const mainFile = path.join(sandbox.telemetryDir, 'state.json');
    writeFileSync(mainFile, '');
    writeFileSync(shardPath(sandbox, 't'), '');

    const server = await startTestServer({ OLLAMA_MCP_BREAKER_THRESHOLD: '2' }, sandbox);
    const status = await call(server, 'ollama_task_status', { task_id: 't' });
    expect(status.structured.known).toBe(false);
    expect(server.stderr()).toMatch(/state\.tasks\/..\.json is empty \(0 bytes\): the retry ledger of the tasks in this shard/);

    const run = await server.run({ model: 'llama3.2', prompt: 'hello', task_id: 't' });
    expect(run.metadata.status).toBe('ok');
    expect(server.stderr()).toMatch(
      /state\.json is empty \(0 bytes\): every model's circuit breaker .*moved it to .*state\.json\.corrupt-/,
    );
    expect(server.stderr()).toMatch(/\.json is empty \(0 bytes\): the retry ledger .*moved it to .*\.json\.corrupt-/);
    expect(copiesOf(mainFile)).toHaveLength(1);
    expect(copiesOf(shardPath(sandbox, 't'))).toHaveLength(1);
  });

  it('a shard that is not JSON is kept byte for byte; one malformed entry dropped keeps a copy too', async () => {
    const sandbox = await withHistory();
    const shard = shardPath(sandbox, 't');
    const saved = readFileSync(shard, 'utf8');
    const torn = saved.slice(0, Math.floor(saved.length / 2));
    writeFileSync(shard, torn);
    const server = await startTestServer({}, sandbox);
    await server.run({ model: 'llama3.2', prompt: 'hello', task_id: 't' });
    expect(copiesOf(shard).map((copy) => readFileSync(copy, 'utf8'))).toEqual([torn]);
    expect(server.stderr()).toMatch(/is not valid JSON: the retry ledger .*moved it to/);

    const withBad = JSON.parse(readFileSync(shard, 'utf8')) as { tasks: Record<string, unknown> };
    withBad.tasks.broken = { attempts: 'many' };
    const original = JSON.stringify(withBad);
    writeFileSync(shard, original);
    // The run reads the shard without the lock first (admission), then under it: the copy must still be made.
    await server.run({ ...FAIL, task_id: 't' });
    const copies = copiesOf(shard).map((copy) => readFileSync(copy, 'utf8'));
    expect(copies).toContain(original);
    expect(server.stderr()).toMatch(/dropped 1 malformed entry: task "broken"; a copy of the file is at/);
    expect(JSON.parse(readFileSync(shard, 'utf8')).tasks).not.toHaveProperty('broken');
  });

  it('state.tasks being a file stops start-up with one line naming the path', async () => {
    const sandbox = makeSandbox();
    writeFileSync(path.join(sandbox.telemetryDir, 'state.tasks'), 'oops');
    const { stderr, exitCode } = await execa(process.execPath, [SERVER_ENTRY], {
      env: serverEnv(sandbox),
      input: '',
      reject: false,
    });
    expect(exitCode).not.toBe(0);
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain(path.join(sandbox.telemetryDir, 'state.tasks'));
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it('a lock left by a SIGKILLed holder, dated an hour ahead (the clock stepped back): taken over at once, stderr says whose it was', async () => {
    const sandbox = await withHistory('100');
    const file = path.join(sandbox.telemetryDir, 'state.json');
    const holder = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { StateLock } from ${JSON.stringify(path.join(ROOT, 'dist/store/state/state-lock.js'))};
         const file = ${JSON.stringify(file)};
         await new StateLock(file + '.lock', { guards: file, staleMs: 10000, maxWaitMs: 15000, warn: () => {} }).acquire();
         process.stdout.write('locked\\n');
         setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      holder.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('locked') && resolve());
      holder.on('exit', (code) => reject(new Error(`lock holder exited early (${code})`)));
    });
    const exited = new Promise((resolve) => holder.on('exit', resolve));
    holder.kill('SIGKILL');
    await exited;
    const ahead = new Date(Date.now() + 3_600_000);
    utimesSync(`${file}.lock`, ahead, ahead);

    const server = await startTestServer({ OLLAMA_MCP_BREAKER_THRESHOLD: '100' }, sandbox);
    const started = performance.now();
    const third = await server.run({ ...FAIL, task_id: 't' });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(third.metadata.retry_count).toBe(2);
    expect(third.metadata.warnings).toEqual([]);
    const status = await call(server, 'ollama_task_status', { task_id: 't' });
    expect(status.structured).toMatchObject({ attempts: 3, failures: 3 });
    expect(server.stderr()).toContain(`state.json.lock was held by pid ${holder.pid} (gone): taken over`);
    expect(server.stderr()).not.toMatch(/live process/);
  }, 40_000);

  it('an empty lock and an empty journal temp file, left by a server killed at the wrong moment: the first update does not stall, and both go', async ({
    annotate,
  }) => {
    const sandbox = await withHistory('100');
    // A server SIGKILLed five minutes ago between creating the lock and writing its holder, and
    // another between creating an attempt's journal temp file and renaming it into place.
    const lock = path.join(sandbox.telemetryDir, 'state.json.lock');
    const temp = path.join(sandbox.telemetryDir, 'attempts', `.${randomUUID()}.json.${randomUUID()}.tmp`);
    mkdirSync(path.dirname(temp), { recursive: true });
    const then = new Date(Date.now() - 5 * 60_000);
    for (const file of [lock, temp]) {
      writeFileSync(file, '');
      utimesSync(file, then, then);
    }

    const server = await startTestServer({ OLLAMA_MCP_BREAKER_THRESHOLD: '100' }, sandbox);
    const started = performance.now();
    const third = await server.run({ ...FAIL, task_id: 't' });
    await annotate(`the run with the first ledger update took ${Math.round(performance.now() - started)} ms`);
    expect(third.metadata).toMatchObject({ status: 'crashed', retry_count: 2, warnings: [] });
    const status = await call(server, 'ollama_task_status', { task_id: 't' });
    expect(status.structured).toMatchObject({ attempts: 3, failures: 3 });
    expect(server.stderr()).toMatch(
      /state\.json\.lock was empty \(written 30\d s ago: a server was killed while taking it\): taken over/,
    );
    expect(server.stderr().match(/taken over/g)).toHaveLength(1);
    await expect.poll(() => existsSync(temp), { timeout: 10_000 }).toBe(false);
  }, 40_000);

  it('state.json with one field of the wrong type keeps its open circuit: runs are still refused, stderr says it once', async () => {
    const sandbox = await withHistory('2'); // llama3.2's circuit is open
    const mainFile = path.join(sandbox.telemetryDir, 'state.json');
    const state = JSON.parse(readFileSync(mainFile, 'utf8'));
    expect(state.breakers['llama3.2:latest'].state).toBe('open');
    writeFileSync(mainFile, JSON.stringify({ ...state, prunedAt: 'x' }));

    const server = await startTestServer({ OLLAMA_MCP_BREAKER_THRESHOLD: '2' }, sandbox);
    for (let i = 0; i < 2; i += 1) {
      const refused = await server.run({ model: 'llama3.2', prompt: 'hello' });
      expect(refused.metadata.status).toBe('circuit_open');
    }
    expect(server.stderr().match(/prunedAt \(was "x"\)/g)).toHaveLength(1);
    expect(JSON.parse(readFileSync(mainFile, 'utf8')).breakers['llama3.2:latest'].state).toBe('open');
  });

  it.skipIf(process.getuid?.() !== 0)(
    'state files the server may not read (EACCES, server run as nobody): every result and health say so, doctor shows no ✓ circuits',
    async ({ skip, onTestFinished }) => {
      // nobody may not reach the clone (a 0700 `mktemp -d`): the server runs from a copy it can reach.
      const nobody = serverFor(NOBODY);
      onTestFinished(nobody.dispose);
      const sandbox = await withHistory('100');
      // Only the telemetry dir is closed to nobody; the fake's trace and state dirs stay open.
      chmodSync(sandbox.traceDir, 0o777);
      chmodSync(sandbox.fakeStateDir, 0o777);
      // The dir itself is open to nobody (a dir nobody cannot write stops start-up, tested elsewhere);
      // the state files in it are root's 0600 and the ledger's dir root's 0700.
      chmodSync(path.dirname(sandbox.telemetryDir), 0o755);
      chmodSync(sandbox.telemetryDir, 0o777);
      const unusable = nobody.unusable ?? cannotReach(NOBODY, [sandbox.telemetryDir, sandbox.traceDir]);
      if (unusable !== null) {
        process.stderr.write(`skipped the state-files test as nobody: ${unusable}\n`);
        return skip(unusable);
      }
      const asNobody = ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, nobody.entry];
      const env = { ...serverEnv(sandbox), OLLAMA_BIN: nobody.fake };

      const doctor = await execa('setpriv', [...asNobody, 'doctor'], { env, reject: false });
      expect(doctor.exitCode).toBe(1);
      expect(doctor.stdout).toMatch(/EACCES/);
      expect(doctor.stdout).not.toMatch(/✓ circuits/);
      expect(doctor.stdout).toMatch(/✗ circuits: unknown/);

      const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
      const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
      const transport = new StdioClientTransport({ command: 'setpriv', args: asNobody, env, stderr: 'pipe' });
      let stderr = '';
      transport.stderr?.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
      const client = new Client({ name: 'faults', version: '1.0.0' });
      await client.connect(transport);
      try {
        const started = performance.now();
        const result = await client.callTool({
          name: 'ollama_run',
          arguments: { ...FAIL, task_id: 't', retry_count: 1, response_format: 'detailed' },
        });
        expect(performance.now() - started).toBeLessThan(5_000); // EACCES fails the lock at once
        const metadata = (result.structuredContent as { metadata: Record<string, any> }).metadata;
        expect(metadata.retry_count).toBe(1); // only what the caller said: the ledger cannot be read
        // Neither the circuit (at admission) nor the ledger (after the run) could be read.
        expect(metadata.warnings.map((w: { kind: string }) => w.kind)).toEqual(['circuit_not_updated', 'ledger_unreadable']);
        expect(metadata.warnings[1].message).toMatch(/EACCES/);
        const health = await client.callTool({ name: 'ollama_health', arguments: { response_format: 'detailed' } });
        const text = (health.content as { text: string }[])[0]!.text;
        expect(text).not.toMatch(/✓ circuits/);
        expect((health.structuredContent as { ok: boolean }).ok).toBe(false);
        expect(stderr).toMatch(/EACCES/);
      } finally {
        await client.close();
      }
      // Nothing was overwritten: root's ledger still holds the 2 failures.
      expect(statSync(shardPath(sandbox, 't')).uid).toBe(0);
      expect(JSON.parse(readFileSync(shardPath(sandbox, 't'), 'utf8')).tasks.t.failures).toBe(2);
    },
  );
});
