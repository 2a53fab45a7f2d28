import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../../src/config/config.js';
import { PACKAGE_ROOT } from '../../../src/config/telemetry-dir.js';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    expect(loadConfig({})).toMatchObject({
      ollamaBin: 'ollama',
      ollamaHost: undefined,
      telemetryDir: path.join(PACKAGE_ROOT, 'telemetry'), // tests run from a source checkout
      concurrency: 3,
      timeoutMs: 120_000,
      maxRetries: 3,
      breakerThreshold: 5,
      breakerCooldownMs: 60_000,
      logContent: false,
    });
    expect(loadConfig({}).telemetryDirReason).toMatch(/^running from a source checkout/);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      OLLAMA_BIN: '/opt/ollama',
      OLLAMA_HOST: 'http://10.0.0.2:11434',
      OLLAMA_MCP_TELEMETRY_DIR: '/tmp/t',
      OLLAMA_MCP_CONCURRENCY: '8',
      OLLAMA_MCP_TIMEOUT_MS: '5000',
      OLLAMA_MCP_MAX_RETRIES: '0',
      OLLAMA_MCP_BREAKER_THRESHOLD: '2',
      OLLAMA_MCP_BREAKER_COOLDOWN_MS: '1000',
      OLLAMA_MCP_LOG_CONTENT: 'true',
    });
    expect(config).toMatchObject({
      ollamaBin: '/opt/ollama',
      ollamaHost: 'http://10.0.0.2:11434',
      telemetryDir: '/tmp/t',
      concurrency: 8,
      timeoutMs: 5000,
      maxRetries: 0,
      breakerThreshold: 2,
      breakerCooldownMs: 1000,
      logContent: true,
    });
  });

  it('OLLAMA_MCP_SHARED_CONCURRENCY: off unless set, then 1-256', () => {
    expect(loadConfig({}).sharedConcurrency).toBeNull();
    expect(loadConfig({ OLLAMA_MCP_SHARED_CONCURRENCY: ' ' }).sharedConcurrency).toBeNull();
    expect(loadConfig({ OLLAMA_MCP_SHARED_CONCURRENCY: '2' }).sharedConcurrency).toBe(2);
    expect(() => loadConfig({ OLLAMA_MCP_SHARED_CONCURRENCY: '0' })).toThrow(
      'OLLAMA_MCP_SHARED_CONCURRENCY must be a whole number from 1 to 256, got `0`',
    );
  });

  it.each([
    ['OLLAMA_MCP_CONCURRENCY', '0'],
    ['OLLAMA_MCP_CONCURRENCY', '33'],
    ['OLLAMA_MCP_CONCURRENCY', 'three'],
    ['OLLAMA_MCP_SHARED_CONCURRENCY', '0'],
    ['OLLAMA_MCP_SHARED_CONCURRENCY', '257'],
    ['OLLAMA_MCP_SHARED_CONCURRENCY', 'two'],
    ['OLLAMA_MCP_TIMEOUT_MS', '1.5'],
    ['OLLAMA_MCP_MAX_RETRIES', '-1'],
    ['OLLAMA_MCP_BREAKER_THRESHOLD', '0'],
    ['OLLAMA_MCP_BREAKER_COOLDOWN_MS', '10'],
    ['OLLAMA_MCP_LOG_CONTENT', 'maybe'],
    ['OLLAMA_BIN', ''],
  ])('%s=%j stops start-up with a message naming the variable', (variable, value) => {
    const attempt = () => loadConfig({ [variable]: value });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(variable);
    try {
      attempt();
    } catch (error) {
      expect((error as ConfigError).variable).toBe(variable);
    }
  });
});

describe('loadConfig: settings for long runs, tiers, HTTP and log rotation', () => {
  it('has defaults', () => {
    expect(loadConfig({})).toMatchObject({
      progressIntervalMs: 5000,
      escalationMode: 'signal',
      preflight: true,
      modelListTtlMs: 30_000,
      configFile: undefined,
      httpToken: undefined,
      logMaxBytes: 52_428_800,
      logRetentionMs: 90 * 86_400_000,
      logMaxTotalBytes: 1_073_741_824,
      busyRetries: 3,
    });
  });

  it('reads them', () => {
    expect(
      loadConfig({
        OLLAMA_MCP_ESCALATION: 'block',
        OLLAMA_MCP_PREFLIGHT: '0',
        OLLAMA_MCP_CONFIG: '/etc/tiers.json',
        OLLAMA_MCP_HTTP_TOKEN: 'a-long-random-secret-value',
        OLLAMA_MCP_LOG_MAX_BYTES: '2048',
        OLLAMA_MCP_LOG_RETENTION_DAYS: '0',
        OLLAMA_MCP_LOG_MAX_TOTAL_BYTES: '0',
        OLLAMA_MCP_BUSY_RETRIES: '0',
      }),
    ).toMatchObject({
      escalationMode: 'block',
      preflight: false,
      configFile: '/etc/tiers.json',
      httpToken: 'a-long-random-secret-value',
      logMaxBytes: 2048,
      logRetentionMs: 0,
      logMaxTotalBytes: 0,
      busyRetries: 0,
    });
  });

  it.each([
    ['OLLAMA_MCP_ESCALATION', 'stop'],
    ['OLLAMA_MCP_HTTP_TOKEN', 'short'],
    ['OLLAMA_MCP_PROGRESS_INTERVAL_MS', '5'],
    ['OLLAMA_MCP_BUSY_RETRIES', '11'],
    ['OLLAMA_MCP_BUSY_RETRIES', '-1'],
    ['OLLAMA_MCP_LOG_RETENTION_DAYS', '-1'],
    ['OLLAMA_MCP_LOG_MAX_TOTAL_BYTES', '1GB'],
  ])('%s=%j is refused, naming the variable', (variable, value) => {
    expect(() => loadConfig({ [variable]: value })).toThrow(variable);
  });
});
