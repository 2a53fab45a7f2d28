import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/config.js';
import { publicConfig } from '../../../src/health/collect-health.js';

describe('team mode settings (OLLAMA_MCP_STATE_URL, OLLAMA_MCP_STATE_PREFIX)', () => {
  it('default to the state files and the ollama-mcp: prefix', () => {
    expect(loadConfig({})).toMatchObject({ stateUrl: undefined, statePrefix: 'ollama-mcp:' });
    expect(loadConfig({ OLLAMA_MCP_STATE_URL: '  ' }).stateUrl).toBeUndefined();
  });

  it('are read, and the password never reaches the public config', () => {
    const config = loadConfig({
      OLLAMA_MCP_STATE_URL: 'rediss://team:hunter22@redis.lan:6380/3',
      OLLAMA_MCP_STATE_PREFIX: 'team-a:',
    });
    expect(config).toMatchObject({ stateUrl: 'rediss://team:hunter22@redis.lan:6380/3', statePrefix: 'team-a:' });
    const shown = publicConfig(config);
    expect(shown.state_url).toBe('rediss://team:***@redis.lan:6380/3');
    expect(JSON.stringify(shown)).not.toContain('hunter22');
  });

  it.each([
    ['OLLAMA_MCP_STATE_URL', 'http://u:hunter22@redis.lan', /OLLAMA_MCP_STATE_URL: the scheme must be redis:\/\//],
    ['OLLAMA_MCP_STATE_URL', 'redis://u:hunter22@redis.lan/db1', /database must be a whole number/],
    ['OLLAMA_MCP_STATE_PREFIX', 'has space', /OLLAMA_MCP_STATE_PREFIX must be 1 to 100 printable characters/],
    ['OLLAMA_MCP_STATE_PREFIX', '', /OLLAMA_MCP_STATE_PREFIX must be/],
  ])('%s=%j stops start-up, naming the variable, without the password', (variable, value, expected) => {
    let error: unknown;
    try {
      loadConfig({ [variable]: value });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(variable);
    expect((error as Error).message).toMatch(expected);
    expect((error as Error).message).not.toContain('hunter22');
  });
});
