import { describe, expect, it } from 'vitest';
import { isRedisUrlError, parseRedisUrl, redactRedisUrl, withoutSecret } from '../../../src/config/redis-url.js';

describe('parseRedisUrl', () => {
  it('reads host, port, db, user and password, and TLS from rediss://', () => {
    expect(parseRedisUrl('redis://alice:p%40ss@gpu-box:6380/2')).toEqual({
      tls: false,
      host: 'gpu-box',
      port: 6380,
      db: 2,
      username: 'alice',
      password: 'p@ss',
      redacted: 'redis://alice:***@gpu-box:6380/2',
    });
    expect(parseRedisUrl('rediss://:secret@10.0.0.5')).toMatchObject({ tls: true, port: 6379, db: 0, password: 'secret' });
    expect(parseRedisUrl('redis://[::1]:7000')).toMatchObject({ host: '::1', port: 7000 });
  });

  it.each([
    ['http://u:topsecret@host:6379', /scheme must be redis:\/\/ \(or rediss:\/\/ for TLS\), got `http:\/\/`/],
    ['redis://u:topsecret@host:6379/zero', /database must be a whole number .* got `\/zero`/],
    ['redis://u:topsecret@host:6379/1/2', /database must be a whole number/],
    ['redis://u:topsecret@host:6379/0?tls=1', /query or fragment/],
    ['not a url topsecret', /is not a URL/],
    ['redis://u:topsecret@host:99999', /is not a URL/],
    ['redis://u:top/secret@host:6379', /./],
  ])('%s is refused with a clear message that does not show the password', (raw, expected) => {
    const parsed = parseRedisUrl(raw);
    expect(isRedisUrlError(parsed)).toBe(true);
    const { error } = parsed as { error: string };
    expect(error).toMatch(expected);
    if (raw.includes('@')) expect(error).not.toContain('secret');
  });
});

describe('redactRedisUrl / withoutSecret', () => {
  it('keeps the user, hides the password', () => {
    expect(redactRedisUrl('redis://bob:hunter2@h:1/0')).toBe('redis://bob:***@h:1/0');
    expect(redactRedisUrl('rediss://:hunter2@h')).toBe('rediss://:***@h');
    expect(redactRedisUrl('redis://h:1')).toBe('redis://h:1');
    expect(redactRedisUrl('redis://bob:p@ss@h:1/0')).toBe('redis://bob:***@h:1/0');
    expect(parseRedisUrl('redis://bob:p@ss@h:1/0')).toMatchObject({
      host: 'h',
      password: 'p@ss',
      redacted: 'redis://bob:***@h:1/0',
    });
  });

  it('scrubs the password from any text, raw or URL-encoded', () => {
    expect(withoutSecret('WRONGPASS for p@ss and p%40ss', { password: 'p@ss' })).toBe('WRONGPASS for *** and ***');
    expect(withoutSecret('nothing to hide', { password: undefined })).toBe('nothing to hide');
  });
});
