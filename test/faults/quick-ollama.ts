import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A stand-in for `ollama run MODEL --nowordwrap` as a /bin/sh script, for tests that need
 * thousands of runs: the Node fake costs ~60 ms of CPU per start, this a few ms. It prints what the
 * real CLI prints on this path (spinner frames and their clear on stderr, the answer and a blank
 * line on stdout, exit 0) and writes the fake's start/exit trace lines, so overlap can be counted.
 * It imitates nothing else: `list` and the rest fail (run the server with OLLAMA_MCP_PREFLIGHT=0).
 */
export function writeQuickOllama(dir: string, answerBytes = 0, runMs = 0): string {
  const file = path.join(dir, 'quick-ollama.sh');
  const padding = 'a'.repeat(answerBytes);
  writeFileSync(
    file,
    `#!/bin/sh
trace() {
  [ -n "$FAKE_OLLAMA_TRACE_DIR" ] && printf '{"event":"%s","pid":%s,"t":%s,"argv":["run"]}\\n' "$1" $$ "$(date +%s%3N)" >> "$FAKE_OLLAMA_TRACE_DIR/trace.jsonl"
  return 0
}
if [ "$1" != run ]; then echo "Error: quick-ollama: $1 not imitated" >&2; exit 64; fi
trace start
cat > /dev/null
printf '\\033[?2026h\\033[?25l\\033[1G\\342\\240\\213 \\033[K\\033[?25h\\033[?2026l' >&2
${runMs > 0 ? `sleep ${(runMs / 1000).toFixed(3)}` : ''}
printf '%s\\n\\n' 'quick answer ${padding}'
printf '\\033[?25l\\033[2K\\033[1G\\033[?25h' >&2
trace exit
`,
  );
  chmodSync(file, 0o755);
  return file;
}
