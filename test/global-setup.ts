import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { watchCheckout } from './helpers/checkout-watch.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A dir of this test run only (`inject('runDir')`), removed when the run ends: for notes between test files. */
    runDir: string;
  }
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Source files whose build in dist/ is missing or older than them. */
function staleSources(dir = path.join(ROOT, 'src')): string[] {
  const stale: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) stale.push(...staleSources(file));
    else if (entry.name.endsWith('.ts')) {
      const built = path.join(ROOT, 'dist', path.relative(path.join(ROOT, 'src'), file)).replace(/\.ts$/, '.js');
      let builtAt: number;
      try {
        builtAt = statSync(built).mtimeMs;
      } catch {
        builtAt = -1;
      }
      if (builtAt < statSync(file).mtimeMs) stale.push(path.relative(ROOT, file));
    }
  }
  return stale;
}

/** The e2e tests spawn dist/cli.js: build it when any source is newer, so no test runs old code. */
function build(): void {
  const stale = staleSources();
  if (stale.length === 0) return;
  process.stderr.write(`dist/ is older than ${stale.length} source file(s) (${stale[0]}, ...): building\n`);
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
}

/**
 * Builds dist/ if needed, gives the run its own dir in the temp dir (no fixed name other users could
 * hold), and fails the run if it leaves a file in the checkout.
 */
export default function setup(project: TestProject): () => void {
  build();
  const runDir = mkdtempSync(path.join(tmpdir(), 'ollama-runner-test-run-'));
  project.provide('runDir', runDir);
  const checkLeftovers = watchCheckout(ROOT);
  return () => {
    rmSync(runDir, { recursive: true, force: true });
    checkLeftovers();
  };
}
