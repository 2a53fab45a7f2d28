import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { announceAccess, resolveHttpAccess, type HttpAccess } from '../../../../src/transport/http/access.js';
import { tempDir } from '../../../helpers/temp-dir.js';

const URL = 'http://127.0.0.1:3333/mcp';
const COMMAND = `claude mcp add --transport http ollama-runner ${URL}`;

describe('resolveHttpAccess', () => {
  it('requires a token by default: the one kept in the data dir, and says where it is in the 401 hint', async () => {
    const dir = tempDir('http-access-');
    const access = await resolveHttpAccess({ mode: 'token', token: undefined, dataDir: dir });
    expect(access.source).toBe('file');
    expect(access.auth).toMatchObject({ kind: 'bearer', token: expect.stringMatching(/^.{43}$/) });
    const hint = access.auth.kind === 'bearer' ? access.auth.hint : '';
    expect(hint).toContain(path.join(dir, 'http-token'));
    expect(hint).toContain('OLLAMA_MCP_HTTP_TOKEN');
  });

  it('uses OLLAMA_MCP_HTTP_TOKEN when set, and writes no file', async () => {
    const access = await resolveHttpAccess({ mode: 'token', token: 'a-long-random-secret-value', dataDir: '/nonexistent' });
    expect(access).toMatchObject({ source: 'variable', auth: { kind: 'bearer', token: 'a-long-random-secret-value' } });
  });

  it('checks nothing with OLLAMA_MCP_HTTP_AUTH=none', async () => {
    expect(await resolveHttpAccess({ mode: 'none', token: undefined, dataDir: '/nonexistent' })).toEqual({
      auth: { kind: 'none' },
      source: 'none',
    });
  });
});

describe('announceAccess', () => {
  const fromFile = (origin: 'created' | 'kept' | 'replaced'): HttpAccess => ({
    auth: { kind: 'bearer', token: 'T0KEN-abcdefghijklmnop', hint: '' },
    source: 'file',
    tokenFile: {
      file: "/home/o'neil/state/http-token",
      token: 'T0KEN-abcdefghijklmnop',
      origin,
      ...(origin === 'replaced' ? { replacedBecause: 'could be read or changed by other users (mode 0644)' } : {}),
    },
  });

  it('shows the token itself only on a terminal; a log gets a command that reads the file', () => {
    expect(announceAccess(URL, fromFile('created'), true, 'box').command).toBe(
      `${COMMAND} --header "Authorization: Bearer T0KEN-abcdefghijklmnop"`,
    );
    expect(announceAccess(URL, fromFile('created'), false, 'box').command).toBe(
      `${COMMAND} --header "Authorization: Bearer $(cat '/home/o'\\''neil/state/http-token')"`,
    );
  });

  it('says whether the token was created, kept or replaced, and why', () => {
    expect(announceAccess(URL, fromFile('created'), false, 'box').notes[0]).toMatch(
      /^clients must send the bearer token just created in /,
    );
    expect(announceAccess(URL, fromFile('kept'), false, 'box').notes[0]).toMatch(/^clients must send the bearer token kept in /);
    expect(announceAccess(URL, fromFile('replaced'), false, 'box').notes[0]).toBe(
      "replaced the bearer token in /home/o'neil/state/http-token: the old file could be read or changed by other users (mode 0644); clients set up with the old token need the new one",
    );
  });

  it('names the variable, never its value, when the token comes from OLLAMA_MCP_HTTP_TOKEN', () => {
    const access: HttpAccess = { auth: { kind: 'bearer', token: 'secret-secret-secret', hint: '' }, source: 'variable' };
    const { notes, command } = announceAccess(URL, access, true, 'box');
    expect(command).toBe(`${COMMAND} --header "Authorization: Bearer $OLLAMA_MCP_HTTP_TOKEN"`);
    expect([...notes, command].join('\n')).not.toContain('secret-secret-secret');
  });

  it('warns that every local user gets in without authentication', () => {
    const { notes, command } = announceAccess(URL, { auth: { kind: 'none' }, source: 'none' }, true, 'box');
    expect(notes[0]).toMatch(/^no authentication \(OLLAMA_MCP_HTTP_AUTH=none\): every local user/);
    expect(command).toBe(COMMAND);
  });

  it('puts the machine name in place of a wildcard address', () => {
    const access: HttpAccess = { auth: { kind: 'none' }, source: 'none' };
    expect(announceAccess('http://0.0.0.0:3333/mcp', access, true, 'gpu-box').command).toBe(
      'claude mcp add --transport http ollama-runner http://gpu-box:3333/mcp',
    );
  });
});
