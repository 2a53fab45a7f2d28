import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { FAKE_OLLAMA, readRunTrace, serverEnv, waitFor, type Sandbox } from '../e2e/harness.js';
import { startRawServer } from './raw-stdio.js';

/**
 * An `ollama` whose `ps` hangs (it writes a mark first): a run with a large prompt makes the server
 * look its context up with `ollama ps` after the verdict is recorded and before the line is written,
 * which holds the server in that window long enough to kill it there.
 */
function psHangsWrapper(sandbox: Sandbox, name: string): { bin: string; mark: string } {
  const bin = path.join(sandbox.root, `ollama-ps-hangs-${name}`);
  const mark = path.join(sandbox.root, `ps-started-${name}`);
  writeFileSync(
    bin,
    `#!/bin/sh\nif [ "$1" = ps ]; then echo started >> '${mark}'; exec sleep 10; fi\nexec '${process.execPath}' '${FAKE_OLLAMA}' "$@"\n`,
  );
  chmodSync(bin, 0o755);
  return { bin, mark };
}

/** A raw server that starts one `ollama_run` with `args`, and is SIGKILLed when `ready` says so. */
async function crashDuring(
  sandbox: Sandbox,
  env: Record<string, string>,
  args: Record<string, unknown>,
  ready: () => boolean,
  what: string,
): Promise<void> {
  const server = startRawServer(serverEnv(sandbox, env));
  await server.initialize();
  server.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'ollama_run', arguments: args } });
  await waitFor(ready, 15_000, what);
  server.child.kill('SIGKILL');
  await server.exited;
}

/** A server SIGKILLed while its model runs an attempt of `taskId` (the next server settles it as `interrupted`). */
export async function crashWhileRunning(
  sandbox: Sandbox,
  taskId: string,
  env: Record<string, string> = {},
  extraArgs: Record<string, unknown> = {},
): Promise<void> {
  const marker = `crash-${taskId}-${Math.random().toString(36).slice(2)}`;
  const prompted = () => readRunTrace(sandbox).some((e) => e.event === 'prompt' && e.prompt?.includes(marker) === true);
  const args = { model: 'llama3.2', prompt: `${marker} @fake:hang`, task_id: taskId, ...extraArgs };
  await crashDuring(sandbox, env, args, prompted, 'the model process to read its prompt');
}

/**
 * A server SIGKILLed after it recorded the verdict of an attempt of `taskId` in the ledger, before its
 * runs.jsonl line (`prompt` decides the verdict; its large token count makes the server look up the
 * model's context in that window).
 */
export async function crashAfterVerdict(
  sandbox: Sandbox,
  taskId: string,
  prompt = 'a long document',
  env: Record<string, string> = {},
  extraArgs: Record<string, unknown> = {},
): Promise<void> {
  const { bin, mark } = psHangsWrapper(sandbox, `${taskId}-${Math.random().toString(36).slice(2)}`);
  const args = { model: 'llama3.2', prompt: `${prompt} @fake:prompt_tokens=200000`, task_id: taskId, ...extraArgs };
  await crashDuring(sandbox, { ...env, OLLAMA_BIN: bin }, args, () => existsSync(mark), 'the context lookup after the verdict');
}
