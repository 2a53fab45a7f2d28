import { describe, expect, it } from 'vitest';
import { formatBytes, parseShownSize, sizeCellOf } from '../../../src/ollama/human-bytes.js';
import { parseModelTable } from '../../../src/ollama/installed-models.js';
import { parseLoadedModels } from '../../../src/ollama/loaded-models.js';

describe('sizes as the CLI prints them', () => {
  it('reads format.HumanBytes back: the value shown, and the least it stands for', () => {
    expect(parseShownSize('4.7 GB')).toEqual({ bytes: 4.7e9, atLeast: 4.65e9 });
    expect(parseShownSize('13 GB')).toEqual({ bytes: 13e9, atLeast: 13e9 }); // cut to whole units
    expect(parseShownSize('274 MB')).toEqual({ bytes: 274e6, atLeast: 274e6 });
    expect(parseShownSize('512 B')).toEqual({ bytes: 512, atLeast: 512 });
    expect(parseShownSize('-')).toBeNull();
    expect(parseShownSize('4.7 GiB')).toBeNull();
  });

  it('finds the SIZE cell after the name and the id', () => {
    expect(sizeCellOf('llama3.2:latest    a80c4f17acd5    2.0 GB    2 weeks ago    ')?.bytes).toBe(2e9);
    expect(sizeCellOf('gpt-oss:120b-cloud    569662207105    -    3 days ago')).toBeNull();
  });

  it("reads each model's file size from `ollama list` (a lower bound) and its loaded size from `ollama ps`", () => {
    const list = [
      'NAME                  ID              SIZE      MODIFIED    ',
      'qwen2.5-coder:7b      dae161e27b0e    4.7 GB    3 days ago    ',
      'nomic-embed-text:latest    0a109f422b47    274 MB    2 weeks ago    ',
      'gpt-oss:120b-cloud    569662207105    -         3 days ago    ',
    ].join('\n');
    expect(parseModelTable(list)).toEqual([
      { name: 'qwen2.5-coder:7b', fileBytes: 4.65e9 },
      { name: 'nomic-embed-text:latest', fileBytes: 274e6 },
      { name: 'gpt-oss:120b-cloud', fileBytes: null },
    ]);
    const ps = [
      'NAME                       ID              SIZE      PROCESSOR    CONTEXT    UNTIL               ',
      'qwen2.5-coder:7b           dae161e27b0e    6.0 GB    100% GPU     4096       4 minutes from now    ',
      'nomic-embed-text:latest    0a109f422b47    580 MB    100% GPU     2048       Forever    ',
      '',
    ].join('\n');
    const table = parseLoadedModels(ps);
    expect(table?.models).toEqual(['qwen2.5-coder:7b', 'nomic-embed-text:latest']);
    expect(table?.sizes).toEqual(
      new Map([
        ['qwen2.5-coder:7b', 6e9],
        ['nomic-embed-text:latest', 580e6],
      ]),
    );
  });

  it('prints bytes for people', () => {
    expect(formatBytes(5.8e9)).toBe('5.8 GB');
    expect(formatBytes(580e6)).toBe('580 MB');
    expect(formatBytes(12)).toBe('12 B');
  });
});
