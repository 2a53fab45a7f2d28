// `keepalive` takes what `ollama run --keepalive` takes (Go's time.ParseDuration), and only that.
import { describe, expect, it } from 'vitest';
import { readRunTrace, readRuns, spawnCount, useServer } from './harness.js';

describe('keepalive reaches `ollama run` as given, and a value the CLI would refuse spawns nothing', () => {
  const server = useServer();

  /** The argv of the one `ollama run` whose prompt carried `marker`. */
  function argvOf(marker: string): string[] | undefined {
    const events = readRunTrace(server.sandbox);
    const pid = events.find((e) => e.event === 'prompt' && e.prompt?.includes(marker))?.pid;
    return events.find((e) => e.event === 'start' && e.pid === pid)?.argv;
  }

  it.each([
    ['0', 'unload the model at once'],
    ['.5s', 'half a second'],
    ['+5s', 'an explicit plus sign'],
    ['5µs', 'micro as U+00B5'],
    ['5μs', 'micro as U+03BC, as Go also reads it'],
  ])('keepalive %j (%s) reaches ollama run as --keepalive=VALUE', async (keepalive) => {
    const marker = `keepalive ${keepalive} check`;
    const result = await server.run({ model: 'llama3.2', prompt: marker, keepalive });
    expect(result.metadata).toMatchObject({ status: 'ok', ok: true, escalate: false });
    expect(result.output).toBe(`fake answer from llama3.2: ${marker}`);
    expect(argvOf(marker)).toContain(`--keepalive=${keepalive}`);
  });

  it.each([['5x'], ['soon'], ['']])(
    'keepalive %j is refused before any spawn, quoted, with what is accepted',
    async (keepalive) => {
      const spawnsBefore = spawnCount(server.sandbox);
      const result = await server.run({ model: 'llama3.2', prompt: 'never run', keepalive });
      expect(result.isError).toBe(true);
      expect(result.metadata).toMatchObject({ status: 'invalid_input', ok: false, escalate: false });
      expect(result.metadata.error?.message).toContain('`keepalive`: must be a duration such as "5m"');
      expect(result.metadata.error?.message).toContain(`got ${JSON.stringify(keepalive)}`);
      expect(spawnCount(server.sandbox)).toBe(spawnsBefore);
      expect(readRuns(server.sandbox).at(-1)).toMatchObject({ status: 'invalid_input' });
    },
  );
});
