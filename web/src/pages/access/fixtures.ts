import { wireSite } from '../../test/wire';
import type { AuditEntry, Operator, Site } from '../../api/types';
import { ADMIN } from '../../test/fakeEngine';

export function operator(username: string, extra: Partial<Operator> = {}): Operator {
  return {
    ...ADMIN,
    username,
    role: 'operator',
    mfa_configured: false,
    site_ids: [],
    last_login_at: null,
    ...extra,
  };
}

export const ADMIN_OP: Operator = { ...ADMIN, site_ids: [], last_login_at: '2026-11-21T08:10:00Z' };

export function site(id: number, name: string): Site {
  const slug = name.toLowerCase().replace(/\s+/g, '-');
  return wireSite({ site_id: id, name, site_worker_slug: slug, site_worker_name: `site:${slug}`, device_count: 0 });
}

export function entry(id: number, extra: Partial<AuditEntry> = {}): AuditEntry {
  return {
    id,
    at: '2026-11-21T08:20:00Z',
    username: 'admin',
    role: 'admin',
    action: 'POST /api/sites',
    target: `site_id=${id}`,
    client_addr: '127.0.0.1',
    status: 201,
    outcome: 'success',
    request_id: `req-${id}`,
    api_token_id: null,
    ...extra,
  } as AuditEntry;
}
