import { describe, expect, it } from 'vitest';
import { refusal, type Listener } from '../../../../src/transport/http/guards.js';

const TOKEN = 'a-token-long-enough-to-be-accepted-0123456789';
const listener = (over: Partial<Listener> = {}): Listener => ({
  auth: { kind: 'bearer', token: TOKEN, hint: 'See the token file.' },
  port: 3333,
  hostNames: new Set(['localhost', '127.0.0.1']),
  closing: false,
  ...over,
});
const request = (headers: Record<string, string> = {}, url = '/mcp', method = 'POST') => ({
  headers: { host: 'localhost:3333', authorization: `Bearer ${TOKEN}`, ...headers },
  url,
  method,
});

describe('refusal (the checks before a body is read)', () => {
  it('lets a request with the right Host, Origin, token, route and method through', () => {
    expect(refusal(request({ origin: 'http://127.0.0.1:3333' }), listener())).toBeNull();
    expect(refusal(request({}, '/mcp?x=1', 'DELETE'), listener())).toBeNull();
  });

  it('checks in order: Host, Origin, token, route, method, shutdown', () => {
    const everythingWrong = request(
      { host: 'evil.example:3333', origin: 'http://evil.example', authorization: 'Bearer no' },
      '/x',
      'PUT',
    );
    expect(refusal(everythingWrong, listener({ closing: true }))?.message).toMatch(/invalid Host header "evil.example:3333"/);
    expect(
      refusal({ ...everythingWrong, headers: { ...everythingWrong.headers, host: 'localhost:3333' } }, listener())?.message,
    ).toMatch(/invalid Origin header/);
    expect(refusal(request({ authorization: 'Bearer wrong-token' }, '/x', 'PUT'), listener())).toMatchObject({
      status: 401,
      headers: { 'WWW-Authenticate': 'Bearer realm="mcp", error="invalid_token"' },
    });
    expect(refusal(request({}, '/x', 'PUT'), listener())?.status).toBe(404);
    expect(refusal(request({}, '/mcp', 'PUT'), listener())).toMatchObject({
      status: 405,
      headers: { Allow: 'GET, POST, DELETE' },
    });
    expect(refusal(request(), listener({ closing: true }))?.status).toBe(503);
  });

  it('/metrics, when served: GET only, behind the Host and token checks; else not found', () => {
    const metrics = listener({ metrics: true });
    expect(refusal(request({}, '/metrics', 'GET'), metrics)).toBeNull();
    expect(refusal(request({}, '/metrics', 'POST'), metrics)).toMatchObject({ status: 405, headers: { Allow: 'GET' } });
    expect(refusal(request({ authorization: 'Bearer wrong-token' }, '/metrics', 'GET'), metrics)?.status).toBe(401);
    expect(refusal(request({ host: 'evil.example:3333' }, '/metrics', 'GET'), metrics)?.status).toBe(403);
    expect(refusal(request({}, '/metrics', 'GET'), listener())?.status).toBe(404);
  });

  it('says where the token is when none was sent, and logs it', () => {
    const refused = refusal({ headers: { host: 'localhost:3333' }, url: '/mcp', method: 'GET' }, listener());
    expect(refused).toMatchObject({ status: 401, headers: { 'WWW-Authenticate': 'Bearer realm="mcp"' } });
    expect(refused?.message).toContain('See the token file.');
    expect(refused?.log).toContain('without a bearer token');
  });

  it('asks for no token when access is open', () => {
    expect(
      refusal({ headers: { host: 'localhost:3333' }, url: '/mcp', method: 'GET' }, listener({ auth: { kind: 'none' } })),
    ).toBeNull();
  });

  it('refuses a Host on another port', () => {
    expect(refusal(request({ host: 'localhost:3334' }), listener())?.status).toBe(403);
  });
});
