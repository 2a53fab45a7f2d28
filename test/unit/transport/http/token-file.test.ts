import { chmodSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isHttpServerError } from '../../../../src/transport/http/errors.js';
import {
  loadOrCreateTokenFile,
  TOKEN_FILE_NAME,
  tokenFileProblem,
  tokenInText,
} from '../../../../src/transport/http/token-file.js';
import { tempDir } from '../../../helpers/temp-dir.js';

const POSIX = process.getuid !== undefined;
const mode = (file: string) => statSync(file).mode & 0o777;

describe('tokenFileProblem and tokenInText', () => {
  const own = { isFile: true, size: 44, uid: 1000, mode: 0o100600 };
  it('trusts a regular file of ours that only we can read', () => {
    expect(tokenFileProblem(own, 1000)).toBeNull();
  });
  it('says what is wrong with anything else', () => {
    expect(tokenFileProblem({ ...own, isFile: false }, 1000)).toBe('was not a regular file');
    expect(tokenFileProblem({ ...own, uid: 1001 }, 1000)).toBe('belonged to another user (uid 1001)');
    expect(tokenFileProblem({ ...own, mode: 0o100640 }, 1000)).toBe('could be read or changed by other users (mode 0640)');
    expect(tokenFileProblem({ ...own, mode: 0o100602 }, 1000)).toMatch(/mode 0602/);
    expect(tokenFileProblem({ ...own, size: 5000 }, 1000)).toBe('was too large to hold a token');
  });
  it('has no owner or mode to check without POSIX ids', () => {
    expect(tokenFileProblem({ ...own, uid: 0, mode: 0o100666 }, undefined)).toBeNull();
  });
  it('reads one token of 16+ printable characters without spaces', () => {
    expect(tokenInText('abcdefghijklmnop\n')).toBe('abcdefghijklmnop');
    expect(tokenInText('  abcdefghijklmnop  ')).toBe('abcdefghijklmnop');
    expect(tokenInText('short')).toBeNull();
    expect(tokenInText('abcdefgh ijklmnop')).toBeNull();
    expect(tokenInText('abcdefghijklmnop\u001b')).toBeNull();
    expect(tokenInText('')).toBeNull();
  });
});

describe('loadOrCreateTokenFile', () => {
  it('creates a random token, 0600, and keeps it at the next start', async () => {
    const dir = tempDir('token-file-');
    const created = await loadOrCreateTokenFile(dir);
    expect(created).toMatchObject({ file: path.join(dir, TOKEN_FILE_NAME), origin: 'created' });
    expect(created.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(readFileSync(created.file, 'utf8')).toBe(`${created.token}\n`);
    if (POSIX) expect(mode(created.file)).toBe(0o600);
    expect(await loadOrCreateTokenFile(dir)).toEqual({ file: created.file, token: created.token, origin: 'kept' });
    expect(readdirSync(dir)).toEqual([TOKEN_FILE_NAME]); // no temp file left
    expect((await loadOrCreateTokenFile(tempDir('token-file-'))).token).not.toBe(created.token);
  });

  it('agrees on one token when several servers start at once', async () => {
    const dir = tempDir('token-file-');
    const all = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateTokenFile(dir)));
    expect(new Set(all.map((t) => t.token)).size).toBe(1);
    expect(all.filter((t) => t.origin === 'created')).toHaveLength(1);
    expect(readFileSync(path.join(dir, TOKEN_FILE_NAME), 'utf8').trim()).toBe(all[0]!.token);
    expect(readdirSync(dir)).toEqual([TOKEN_FILE_NAME]);
  });

  it.skipIf(!POSIX)('replaces a file other users could read, saying why', async () => {
    const dir = tempDir('token-file-');
    const first = await loadOrCreateTokenFile(dir);
    chmodSync(first.file, 0o644);
    const second = await loadOrCreateTokenFile(dir);
    expect(second).toMatchObject({ origin: 'replaced', replacedBecause: 'could be read or changed by other users (mode 0644)' });
    expect(second.token).not.toBe(first.token);
    expect(mode(second.file)).toBe(0o600);
  });

  it('replaces a file that holds no token', async () => {
    const dir = tempDir('token-file-');
    writeFileSync(path.join(dir, TOKEN_FILE_NAME), 'not a token\n', { mode: 0o600 });
    const replaced = await loadOrCreateTokenFile(dir);
    expect(replaced.origin).toBe('replaced');
    expect(replaced.replacedBecause).toMatch(/did not hold a token/);
  });

  it.skipIf(!POSIX)('never follows a symbolic link put in its place, and leaves its target alone', async () => {
    const dir = tempDir('token-file-');
    const target = path.join(tempDir('token-file-'), 'elsewhere');
    writeFileSync(target, 'abcdefghijklmnopqrstuvwxyz\n', { mode: 0o600 });
    symlinkSync(target, path.join(dir, TOKEN_FILE_NAME));
    const replaced = await loadOrCreateTokenFile(dir);
    expect(replaced).toMatchObject({ origin: 'replaced', replacedBecause: 'was a symbolic link' });
    expect(replaced.token).not.toBe('abcdefghijklmnopqrstuvwxyz');
    expect(readFileSync(target, 'utf8')).toBe('abcdefghijklmnopqrstuvwxyz\n');
  });

  it('fails with a token_file_error naming the file and the way out when it cannot be kept', async () => {
    const dir = tempDir('token-file-');
    mkdirSync(path.join(dir, TOKEN_FILE_NAME)); // a directory in the way: never removed
    const attempt = loadOrCreateTokenFile(dir);
    await expect(attempt).rejects.toSatisfy(isHttpServerError);
    await expect(attempt).rejects.toMatchObject({
      kind: 'token_file_error',
      message: expect.stringMatching(
        new RegExp(`^cannot keep the HTTP token in ${path.join(dir, TOKEN_FILE_NAME)} \\(E[A-Z]+: .*set OLLAMA_MCP_HTTP_TOKEN$`),
      ),
    });
    expect(statSync(path.join(dir, TOKEN_FILE_NAME)).isDirectory()).toBe(true);
  });
});
