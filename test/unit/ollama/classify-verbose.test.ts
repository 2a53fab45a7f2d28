import { describe, expect, it } from 'vitest';
import { classifyOutcome } from '../../../src/ollama/classify-outcome.js';
import { errorFromStderr } from '../../../src/ollama/cli-errors.js';
import { processOutcome } from '../../helpers/process-outcome.js';

// With --verbose always on, stderr may end with the stats: they must never become the error text.
const STATS =
  'total duration:       2.413914171s\nload duration:        1.0514ms\nprompt eval count:    26 token(s)\n' +
  'eval count:           291 token(s)\neval duration:        2.353478s\neval rate:            123.65 tokens/s\n\u001b[?25l\u001b[?25h';

describe('classification with the --verbose stats on stderr', () => {
  it('a clean answer is ok, whatever the stats say', () => {
    expect(classifyOutcome(processOutcome({ stdout: 'fine\n\n', stderrTail: STATS })).status).toBe('ok');
  });

  it('a process that died after the stats is described by its signal or exit code, not by a stats line', () => {
    const killed = classifyOutcome(processOutcome({ exitCode: null, signal: 'SIGSEGV', stdout: 'half', stderrTail: STATS }));
    expect(killed).toMatchObject({ status: 'crashed', error: 'the ollama CLI was killed by SIGSEGV' });
    const exited = classifyOutcome(processOutcome({ exitCode: 2, stderrTail: STATS }));
    expect(exited).toMatchObject({ status: 'crashed', error: 'the ollama CLI exited with code 2' });
  });

  it('an Error line still wins over stats around it', () => {
    const busy = classifyOutcome(
      processOutcome({
        exitCode: 1,
        stderrTail: `${STATS}\u001b[2K\u001b[1GError: 503 Service Unavailable: server busy, please try again.\n`,
      }),
    );
    expect(busy.status).toBe('server_busy');
    expect(errorFromStderr(`${STATS}something odd happened\n`)).toBe('something odd happened');
  });
});
