import { describe, expect, it } from 'vitest';
import { hostNameOf, parseHosts, resolveHost, type HostSpec } from '../../../src/config/hosts.js';
import { loadConfig } from '../../../src/config/config.js';
import { ollamaKeyOf } from '../../../src/policy/host-key.js';

const same = (a: string, b: string) => ollamaKeyOf(a) === ollamaKeyOf(b);
const message = (raw: string) => {
  const result = parseHosts(raw, undefined, same);
  return 'kind' in result ? result.message : null;
};

describe('OLLAMA_MCP_HOSTS', () => {
  it('unset: the one OLLAMA_HOST (or the default), nothing changes for one host', () => {
    expect(parseHosts(undefined, 'gpu:11434', same)).toEqual([{ host: 'gpu:11434', weight: 1, maxLoaded: null, parallel: null }]);
    expect(parseHosts(' ', undefined, same)).toEqual([{ host: '', weight: 1, maxLoaded: null, parallel: null }]);
  });

  it('reads each host with its weight, max_loaded and parallel', () => {
    expect(parseHosts('gpu-box:11434;weight=3;max_loaded=2, 127.0.0.1:11434;parallel=4', undefined, same)).toEqual([
      { host: 'gpu-box:11434', weight: 3, maxLoaded: 2, parallel: null },
      { host: '127.0.0.1:11434', weight: 1, maxLoaded: null, parallel: 4 },
    ]);
  });

  it('names the entry and the key of every mistake', () => {
    expect(message('a:1,b:2;weight=0')).toBe(
      'OLLAMA_MCP_HOSTS: entry 2 (`b:2;weight=0`): weight must be a whole number from 1 to 100, got `0`',
    );
    expect(message('a:1;colour=red')).toMatch(/^OLLAMA_MCP_HOSTS: entry 1 \(`a:1;colour=red`\): unknown setting `colour=red`/);
    expect(message('a:1;parallel=x')).toMatch(/entry 1 .*parallel must be a whole number from 1 to 64, got `x`/);
    expect(message('a:1;max_loaded=2;max_loaded=3')).toMatch(/entry 1 .*max_loaded is given twice/);
    expect(message('a:1,,b:2')).toMatch(/entry 2 \(``\) has no host/);
    expect(message('a b:1')).toMatch(/entry 1 .*the host must be host, host:port/);
    expect(message('localhost:11434,127.0.0.1')).toMatch(/entry 2 .*names the same Ollama as `localhost:11434`/);
  });

  it('a bad list stops start-up with the variable named', () => {
    expect(() => loadConfig({ OLLAMA_MCP_HOSTS: 'a:1;weight=-1' })).toThrow(/OLLAMA_MCP_HOSTS: entry 1/);
    expect(loadConfig({ OLLAMA_MCP_HOSTS: 'a:1,b:2' }).hosts.map((h) => h.host)).toEqual(['a:1', 'b:2']);
  });

  it('a pinned host is found by any spelling of it', () => {
    const hosts = parseHosts('gpu-box:11434,127.0.0.1:11500', undefined, same) as readonly HostSpec[];
    expect(resolveHost(hosts, 'gpu-box', same)).toBe('gpu-box:11434');
    expect(resolveHost(hosts, 'http://127.0.0.1:11500', same)).toBe('127.0.0.1:11500');
    expect(resolveHost(hosts, 'other:1', same)).toBeNull();
    expect(hostNameOf({ host: '' })).toBe('127.0.0.1:11434');
  });
});
