import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DeviceDetails } from './types';
import { api, ApiError, csrfToken, onSessionProblem, parseRetryAfter, readCookie } from './client';

function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}) {
  return new Response(body === undefined ? null : JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  });
}

afterEach(() => {
  vi.unstubAllGlobals();
  document.cookie = 'cairn_csrf=; expires=Thu, 01 Jan 1970 00:00:00 GMT; path=/';
});

describe('readCookie', () => {
  it('finds a cookie among others', () => {
    expect(readCookie('cairn_csrf', 'a=1; cairn_csrf=abc%3D; b=2')).toBe('abc=');
    expect(readCookie('cairn_csrf', 'a=1')).toBeNull();
    expect(readCookie('x', '')).toBeNull();
  });
});

describe('csrfToken', () => {
  it('prefers the __Host- cookie of an HTTPS origin and falls back to the plain one', () => {
    expect(csrfToken('a=1; __Host-cairn_csrf=secure; cairn_csrf=plain')).toBe('secure');
    expect(csrfToken('a=1; cairn_csrf=plain')).toBe('plain');
    expect(csrfToken('__Host-cairn_csrf=only')).toBe('only');
    expect(csrfToken('a=1')).toBeNull();
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('42')).toBe(42);
    expect(parseRetryAfter(null)).toBeNull();
    expect(parseRetryAfter('soon')).toBeNull();
    const now = Date.parse('2026-11-21T08:00:00Z');
    expect(parseRetryAfter('Sat, 21 Nov 2026 08:00:30 GMT', now)).toBe(30);
  });
});

describe('api', () => {
  it('sends the CSRF cookie as X-CSRF-Token on changes, with same-origin credentials', async () => {
    document.cookie = 'cairn_csrf=tok123; path=/';
    const fetchMock = vi.fn(async () => jsonResponse(200, { ok: true }));
    vi.stubGlobal('fetch', fetchMock);

    await api('/api/sites', { body: { name: 'x' } });
    await api('/api/sites');

    const [postUrl, post] = fetchMock.mock.calls[0] as unknown as [string, RequestInit];
    expect(postUrl).toBe('/api/sites');
    expect(post.method).toBe('POST');
    expect(post.credentials).toBe('same-origin');
    expect((post.headers as Record<string, string>)['X-CSRF-Token']).toBe('tok123');
    expect((post.headers as Record<string, string>)['Content-Type']).toBe('application/json');
    expect(post.body).toBe('{"name":"x"}');

    const [, get] = fetchMock.mock.calls[1] as unknown as [string, RequestInit];
    expect(get.method).toBe('GET');
    expect((get.headers as Record<string, string>)['X-CSRF-Token']).toBeUndefined();
  });

  it('returns undefined for 204', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => new Response(null, { status: 204 })));
    await expect(api('/api/auth/logout', { method: 'POST' })).resolves.toBeUndefined();
  });

  it('turns the error body into an ApiError with fields and Retry-After', async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(async () =>
        jsonResponse(
          429,
          { error: 'rate_limited', message: 'too many attempts' },
          { 'Retry-After': '17', 'X-Request-Id': 'req-1' },
        ),
      ),
    );
    const err = (await api('/api/auth/login', { body: {} }).catch((e) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(429);
    expect(err.code).toBe('rate_limited');
    expect(err.retryAfter).toBe(17);
    expect(err.requestId).toBe('req-1');

    vi.stubGlobal(
      'fetch',
      vi.fn(async () =>
        jsonResponse(409, { error: 'conflict', message: 'taken', fields: { site_worker_slug: 'already used' } }),
      ),
    );
    const conflict = (await api('/api/sites', { body: {} }).catch((e) => e)) as ApiError;
    expect(conflict.fields).toEqual({ site_worker_slug: 'already used' });
  });

  it('copes with a non-JSON error page', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => new Response('<html>bad gateway</html>', { status: 502, statusText: 'Bad Gateway' })));
    const err = (await api('/api/sites').catch((e) => e)) as ApiError;
    expect(err.code).toBe('internal');
    expect(err.message).toContain('502');
  });

  it('reports a network failure as network_error', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => Promise.reject(new TypeError('Failed to fetch'))));
    const err = (await api('/api/sites').catch((e) => e)) as ApiError;
    expect(err.code).toBe('network_error');
    expect(err.status).toBe(0);
  });

  it('signals an ended session on 401 from a Token route, not from sign-in forms', async () => {
    const seen: string[] = [];
    const off = onSessionProblem((r) => seen.push(r));
    vi.stubGlobal('fetch', vi.fn(async () => jsonResponse(401, { error: 'unauthorized', message: 'sign in' })));
    await api('/api/sites').catch(() => undefined);
    await api('/api/auth/login', { body: {} }).catch(() => undefined);
    await api('/api/bootstrap/aegis/unlock', { body: {} }).catch(() => undefined);

    vi.stubGlobal('fetch', vi.fn(async () => jsonResponse(401, { error: 'invalid_credentials', message: 'wrong' })));
    await api('/api/auth/password/reset', { body: {} }).catch(() => undefined);

    vi.stubGlobal('fetch', vi.fn(async () => jsonResponse(423, { error: 'aegis_locked', message: 'locked' })));
    await api('/api/sites').catch(() => undefined);
    off();
    await api('/api/sites').catch(() => undefined);
    expect(seen).toEqual(['unauthorized', 'locked']);
  });
});

describe('flattenAgentHealth', () => {
  it('flattens the Engine grouping into one list, keeping the Agent Connection group', async () => {
    const { flattenAgentHealth } = await import('./endpoints');
    const role = (key: string) => ({
      key,
      role: key.replace('system:', ''),
      desired: 'running',
      observed: 'Healthy',
      recovery_attempts: 0,
      last_checked_at: null,
      last_healthy_at: null,
      last_error: '',
      context: {},
      updated_at: '2026-11-21T08:00:00Z',
    });
    const out = flattenAgentHealth({
      ...({} as DeviceDetails),
      device: {} as never,
      agent_health: {
        startup: role('system:system_heartbeat'),
        agent_connection: [role('system:api_websocket')],
        roles: [role('system:device_audit')],
      },
    });
    expect(out.roles?.map((r) => [r.key, r.group ?? null])).toEqual([
      ['system:system_heartbeat', null],
      ['system:api_websocket', 'Agent Connection'],
      ['system:device_audit', null],
    ]);
  });
});

describe('operations that outlive their request', () => {
  const accepted = (id: string) =>
    jsonResponse(202, { operation_id: id, status: 'running', url: `/api/operations/${id}` }, { Location: `/api/operations/${id}` });
  const status = (id: string, s: string, extra: Record<string, unknown> = {}) =>
    jsonResponse(200, { operation_id: id, status: s, summary: 'Refresh software inventory', url: `/api/operations/${id}`, ...extra });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('follows the operation and answers an action once it completed', async () => {
    vi.useFakeTimers();
    const fetchMock = vi
      .fn()
      .mockResolvedValueOnce(accepted('op-1'))
      .mockResolvedValueOnce(status('op-1', 'running', { phase: 'waiting_for_agent' }))
      .mockResolvedValueOnce(status('op-1', 'completed'));
    vi.stubGlobal('fetch', fetchMock);

    const done = api('/api/device/software/h/refresh', { method: 'POST' });
    await vi.runAllTimersAsync();
    await expect(done).resolves.toBeUndefined();
    expect(fetchMock.mock.calls.map((c) => c[0])).toEqual([
      '/api/device/software/h/refresh',
      '/api/operations/op-1',
      '/api/operations/op-1',
    ]);
  });

  it("throws a failed operation's code and message", async () => {
    vi.useFakeTimers();
    const fetchMock = vi
      .fn()
      .mockResolvedValueOnce(accepted('op-2'))
      .mockResolvedValueOnce(status('op-2', 'failed', { error: 'not_found', summary: 'Start cron: no such service' }));
    vi.stubGlobal('fetch', fetchMock);

    const done = api('/api/device/services/h/action', { body: { name: 'cron', action: 'start' } });
    const caught = done.catch((e: unknown) => e);
    await vi.runAllTimersAsync();
    const err = (await caught) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe('not_found');
    expect(err.message).toBe('Start cron: no such service');
  });

  it('reads again once after a read whose operation completed, and no more', async () => {
    vi.useFakeTimers();
    const fetchMock = vi
      .fn()
      .mockResolvedValueOnce(accepted('op-3'))
      .mockResolvedValueOnce(status('op-3', 'completed'))
      .mockResolvedValueOnce(jsonResponse(200, { processes: [] }));
    vi.stubGlobal('fetch', fetchMock);
    const read = api('/api/device/processes/h?max_age_seconds=0');
    await vi.runAllTimersAsync();
    await expect(read).resolves.toEqual({ processes: [] });

    fetchMock
      .mockResolvedValueOnce(accepted('op-4'))
      .mockResolvedValueOnce(status('op-4', 'completed'))
      .mockResolvedValueOnce(accepted('op-5'));
    const again = api('/api/device/processes/h?max_age_seconds=0').catch((e: unknown) => e);
    await vi.runAllTimersAsync();
    expect(((await again) as ApiError).code).toBe('operation_pending');
  });

  it('leaves a 202 without an operation as it is', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => jsonResponse(202, { id: 'x', status: 'pending' })));
    await expect(api('/api/admin/device-approvals/x/approve', { body: {} })).resolves.toEqual({ id: 'x', status: 'pending' });
  });
});
