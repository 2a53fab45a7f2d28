import { describeCliFailure, runCliCommand, type CliFailureCause } from './cli-command.js';
import { sizeCellOf } from './human-bytes.js';
import { canonicalModelName, MODEL_NAME_PATTERN } from './model-name.js';

type Env = Readonly<Record<string, string | undefined>>;

/** An `ollama ps` that takes longer than this is given up: the dispatcher goes on with what it knows. */
const PS_TIMEOUT_MS = 3_000;

/** The rows of an `ollama ps` table: the models loaded, and the bytes each takes. */
interface LoadedTable {
  readonly models: string[];
  readonly sizes: Map<string, number>;
}

/**
 * The models of an `ollama ps` table (`NAME  ID  SIZE  PROCESSOR  CONTEXT  UNTIL`), canonical names in
 * its order, and the memory each takes (SIZE: weights, context cache, compute graph); null when not that table.
 */
export function parseLoadedModels(stdout: string): LoadedTable | null {
  const lines = stdout.split(/\r?\n/);
  if (!/^NAME\s+ID\s/.test(lines[0] ?? '')) return null;
  const table: LoadedTable = { models: [], sizes: new Map() };
  for (const row of lines.slice(1)) {
    const name = row.trim().split(/\s+/, 1)[0] ?? '';
    if (name === '') continue;
    if (!MODEL_NAME_PATTERN.test(name)) return null;
    const key = canonicalModelName(name);
    if (table.models.includes(key)) continue;
    table.models.push(key);
    const size = sizeCellOf(row);
    if (size !== null) table.sizes.set(key, size.bytes);
  }
  return table;
}

/** What `ollama ps` said: the loaded models and their sizes in bytes (absent when unreadable), or why it could not say. */
export type LoadedModelsResult =
  | { readonly ok: true; readonly models: readonly string[]; readonly sizes: ReadonlyMap<string, number> }
  | {
      readonly ok: false;
      /** What failed: the CLI's own failure kinds (`unreachable`, `timeout`...), or a table it could not read. */
      readonly cause: CliFailureCause | 'unexpected_output';
      readonly reason: string;
    };

/** Ask `ollama ps` which models Ollama has loaded. Never rejects. */
export async function readLoadedModels(request: { readonly bin: string; readonly env: Env }): Promise<LoadedModelsResult> {
  const result = await runCliCommand({ bin: request.bin, args: ['ps'], env: request.env, timeoutMs: PS_TIMEOUT_MS });
  if (result.exitCode !== 0 || result.spawnError !== null || result.timedOut) {
    return { ok: false, ...describeCliFailure(request.bin, ['ps'], result, PS_TIMEOUT_MS) };
  }
  const table = parseLoadedModels(result.stdout);
  if (table === null) {
    const first = result.stdout.split('\n', 1)[0]?.slice(0, 80) ?? '';
    const reason = `\`${request.bin} ps\` printed something other than its table (${JSON.stringify(first)})`;
    return { ok: false, cause: 'unexpected_output', reason };
  }
  return { ok: true, ...table };
}
