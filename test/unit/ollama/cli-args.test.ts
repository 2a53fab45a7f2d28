import { describe, expect, it } from 'vitest';
import { buildRunArgs } from '../../../src/ollama/cli-args.js';
import { canonicalModelName } from '../../../src/ollama/model-name.js';

describe('buildRunArgs', () => {
  it('always turns word wrap off, asks for the token stats and never puts the prompt on argv', () => {
    expect(buildRunArgs('llama3.2', {})).toEqual(['run', 'llama3.2', '--nowordwrap', '--verbose']);
  });

  it('passes format, think and keepalive in --flag=value form', () => {
    expect(buildRunArgs('m', { format: 'json', think: false, keepalive: '5m' })).toEqual([
      'run',
      'm',
      '--nowordwrap',
      '--verbose',
      '--format=json',
      '--think=false',
      '--keepalive=5m',
    ]);
    expect(buildRunArgs('m', { format: { type: 'object' }, think: 'high' })).toContain('--format={"type":"object"}');
  });
});

describe('canonicalModelName', () => {
  it('treats name, name:latest and library/name:latest as one model', () => {
    expect(canonicalModelName('llama3.2')).toBe('llama3.2:latest');
    expect(canonicalModelName('library/llama3.2:latest')).toBe('llama3.2:latest');
    expect(canonicalModelName('registry.ollama.ai/library/llama3.2')).toBe('llama3.2:latest');
    expect(canonicalModelName('qwen2.5-coder:7b')).toBe('qwen2.5-coder:7b');
    expect(canonicalModelName('hf.co/user/model:Q4')).toBe('hf.co/user/model:q4');
  });
});
