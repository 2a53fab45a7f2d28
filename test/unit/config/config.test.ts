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

  it("sends one request of a model at a time unless told otherwise, reading Ollama's own setting as Ollama does", () => {
    expect(loadConfig({})).toMatchObject({ parallel: 1, parallelSource: "Ollama's default" });
    expect(loadConfig({ OLLAMA_NUM_PARALLEL: '4' })).toMatchObject({ parallel: 4, parallelSource: 'OLLAMA_NUM_PARALLEL' });
    // Ollama treats 0 and a value it cannot read as its default: so does this server, without refusing to start.
    expect(loadConfig({ OLLAMA_NUM_PARALLEL: '0' }).parallel).toBe(1);
    expect(loadConfig({ OLLAMA_NUM_PARALLEL: 'lots' }).parallel).toBe(1);
    expect(loadConfig({ OLLAMA_NUM_PARALLEL: '64' }).parallel).toBe(32);
    expect(loadConfig({ OLLAMA_NUM_PARALLEL: '4', OLLAMA_MCP_PARALLEL: '2' })).toMatchObject({
      parallel: 2,
      parallelSource: 'OLLAMA_MCP_PARALLEL',
    });
  });

  it('learns how many models fit together unless told', () => {
    expect(loadConfig({}).maxLoadedModels).toBeNull();
    expect(loadConfig({ OLLAMA_MAX_LOADED_MODELS: '0' }).maxLoadedModels).toBeNull(); // Ollama's automatic choice
    expect(loadConfig({ OLLAMA_MAX_LOADED_MODELS: '2' }).maxLoadedModels).toBe(2);
    expect(loadConfig({ OLLAMA_MAX_LOADED_MODELS: '2', OLLAMA_MCP_MAX_LOADED_MODELS: '3' }).maxLoadedModels).toBe(3);
  });

  it("gives the start of an answer Ollama's own load timeout, 5 minutes unless it is set", () => {
    expect(loadConfig({}).startTimeoutMs).toBe(300_000);
    expect(loadConfig({ OLLAMA_LOAD_TIMEOUT: '15m' }).startTimeoutMs).toBe(900_000);
    expect(loadConfig({ OLLAMA_LOAD_TIMEOUT: '600' }).startTimeoutMs).toBe(600_000); // whole seconds, as Ollama reads it
    expect(loadConfig({ OLLAMA_LOAD_TIMEOUT: 'soon' }).startTimeoutMs).toBe(300_000);
    expect(loadConfig({ OLLAMA_LOAD_TIMEOUT: '0' }).startTimeoutMs).toBe(3_600_000); // Ollama: no limit; here the longest allowed
    expect(loadConfig({ OLLAMA_LOAD_TIMEOUT: '15m', OLLAMA_MCP_START_TIMEOUT_MS: '60000' }).startTimeoutMs).toBe(60_000);
  });

  it("reads Ollama's keep-alive as Ollama does, for how long an idle model stays loaded", () => {
    expect(loadConfig({}).keepAliveMs).toBe(300_000);
    expect(loadConfig({ OLLAMA_KEEP_ALIVE: '1h' }).keepAliveMs).toBe(3_600_000);
    expect(loadConfig({ OLLAMA_KEEP_ALIVE: '-1' }).keepAliveMs).toBe(Infinity);
    expect(loadConfig({}).switchAfterMs).toBe(30_000);
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
    ['OLLAMA_MCP_PARALLEL', '0'],
    ['OLLAMA_MCP_PARALLEL', '33'],
    ['OLLAMA_MCP_MAX_LOADED_MODELS', '0'],
    ['OLLAMA_MCP_START_TIMEOUT_MS', '999'],
    ['OLLAMA_MCP_SWITCH_AFTER_MS', '-1'],
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
      httpAuth: 'token',
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
    ['OLLAMA_MCP_HTTP_AUTH', 'off'],
    ['OLLAMA_MCP_PROGRESS_INTERVAL_MS', '5'],
    ['OLLAMA_MCP_BUSY_RETRIES', '11'],
    ['OLLAMA_MCP_BUSY_RETRIES', '-1'],
    ['OLLAMA_MCP_LOG_RETENTION_DAYS', '-1'],
    ['OLLAMA_MCP_LOG_MAX_TOTAL_BYTES', '1GB'],
  ])('%s=%j is refused, naming the variable', (variable, value) => {
    expect(() => loadConfig({ [variable]: value })).toThrow(variable);
  });

  it('reads OLLAMA_MCP_HTTP_AUTH=none, and refuses it together with OLLAMA_MCP_HTTP_TOKEN', () => {
    expect(loadConfig({ OLLAMA_MCP_HTTP_AUTH: 'none' })).toMatchObject({ httpAuth: 'none', httpToken: undefined });
    expect(loadConfig({ OLLAMA_MCP_HTTP_AUTH: 'token' }).httpAuth).toBe('token');
    const both = () => loadConfig({ OLLAMA_MCP_HTTP_AUTH: 'none', OLLAMA_MCP_HTTP_TOKEN: 'a-long-random-secret-value' });
    expect(both).toThrow(ConfigError);
    expect(both).toThrow('OLLAMA_MCP_HTTP_AUTH=none contradicts OLLAMA_MCP_HTTP_TOKEN, which is set: unset one of them');
  });
});
