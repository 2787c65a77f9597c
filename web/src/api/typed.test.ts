import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildURL, call, type BodyOf, type ResponseOf } from './typed';
import type { Site, User } from './types';

afterEach(() => vi.unstubAllGlobals());

describe('buildURL', () => {
  it('fills path parameters, escaped, and appends only defined query values', () => {
    expect(buildURL('/api/sites/{site_id}/auto-approval', { site_id: 4 })).toBe('/api/sites/4/auto-approval');
    expect(buildURL('/api/device/details/{hostname}', { hostname: 'a b/c' })).toBe('/api/device/details/a%20b%2Fc');
    expect(buildURL('/api/server/audit', null, { limit: 5, before_id: undefined, username: '' })).toBe(
      '/api/server/audit?limit=5',
    );
    expect(() => buildURL('/api/sites/{site_id}/auto-approval', {})).toThrow(/site_id/);
  });
});

describe('call', () => {
  it('sends the method, path and body the document names and returns the answer', async () => {
    const fetchMock = vi.fn(async () => new Response(JSON.stringify({ site_id: 4, enabled: true, auto_approve_until: null })));
    vi.stubGlobal('fetch', fetchMock);
    const out = await call('post', '/api/sites/{site_id}/auto-approval', { path: { site_id: '4' }, body: { enabled: true } });
    expect(out.enabled).toBe(true);
    expect(fetchMock).toHaveBeenCalledWith('/api/sites/4/auto-approval', expect.objectContaining({ method: 'POST' }));
  });
});

// The point of the generated types, checked by `tsc -b` (npm run build):
// each @ts-expect-error below fails the build the day its line compiles.
export function typeChecks(site: Site, user: User) {
  // @ts-expect-error the Engine sends no such field
  void site.nickname;
  // @ts-expect-error a number, not a string
  const name: number = user.username;
  const me: ResponseOf<'/api/auth/me', 'get'> = user;
  // @ts-expect-error sites are created with name and site_worker_slug
  const bad: BodyOf<'/api/sites', 'post'> = { title: 'x' };
  // @ts-expect-error no such route
  void call('get', '/api/no-such-route');
  return [name, me, bad];
}
