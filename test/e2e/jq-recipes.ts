// The jq recipes of docs/reviewing-runs.md and telemetry/README.md, and jq to run them:
// the jq-wasm devDependency (jq 1.7.1 compiled to WebAssembly: no binary needed), and a jq binary
// when one is on PATH.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './harness.js';

export type JqRaw = (input: string, program: string, flags: string[]) => Promise<string>;

export async function loadJq(): Promise<JqRaw> {
  try {
    const jq = await import('jq-wasm');
    return (input, program, flags) => jq.raw(input, program, flags);
  } catch (error) {
    throw new Error(
      `jq is missing: these tests run the documented jq recipes with the jq-wasm package (a devDependency). Run \`npm install\`. (${(error as Error).message})`,
    );
  }
}

export function systemJq(): string | null {
  try {
    execFileSync('jq', ['--version'], { stdio: 'ignore' });
    return 'jq';
  } catch {
    return null;
  }
}

export interface Recipe {
  readonly source: string;
  readonly line: string;
  readonly flags: string[];
  readonly program: string;
}

/** The jq commands in the sh code blocks of a markdown file: flags, `--arg` pairs and the single-quoted program. */
export function recipesIn(file: string): Recipe[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const recipes: Recipe[] = [];
  for (const block of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
    for (const line of block[1]!.split('\n')) {
      const at = line.search(/(?:^|\|\s*)jq /);
      if (at === -1 || line.trimStart().startsWith('#')) continue;
      const command = line.slice(line.indexOf('jq ', at) + 3);
      const quote = command.indexOf("'");
      const end = command.indexOf("'", quote + 1);
      const flags = command.slice(0, quote).trim().split(/\s+/).filter(Boolean);
      recipes.push({ source: file, line: line.trim(), flags, program: command.slice(quote + 1, end) });
    }
  }
  return recipes;
}

/** Every recipe of both pages. */
export const DOC_RECIPES: readonly Recipe[] = [...recipesIn('docs/reviewing-runs.md'), ...recipesIn('telemetry/README.md')];
