import { wireSite } from './wire';
// The devices grid's test kit: a fake Engine answering the paged
// GET /api/devices as the real one does, and the page rendered signed in.
import { screen } from '@testing-library/react';
import { useLocation } from 'react-router';
import type { Device, Site } from '../api/types';
import { SessionContext } from '../auth/session';
import DevicesPage from '../pages/devices/DevicesPage';
import { device } from '../pages/devices/fixtures';
import { ADMIN, type RecordedCall } from './fakeEngine';
import { renderWithProviders } from './render';
import { WithToasts } from './toasts';

export const SITES: Site[] = [
  wireSite({ site_id: 1, name: 'Head office', site_worker_slug: 'hq', site_worker_name: 'site:hq', device_count: 2, created_at: '2026-11-21T08:00:00Z' }),
  wireSite({ site_id: 2, name: 'Lab', site_worker_slug: 'lab', site_worker_name: 'site:lab', device_count: 2, created_at: '2026-11-21T08:00:00Z' }),
];

export const DEVICES = [
  device('web-1', { site_id: 1, site_name: 'Head office', connectivity_status: 'Connected', description: 'Front web server' }),
  device('db-1', { site_id: 1, site_name: 'Head office', connectivity_status: 'Offline', last_seen: null }),
  device('lab-1', { site_id: 2, site_name: 'Lab', connectivity_status: 'Connected', trust_state: 'quarantined' }),
  device('lab-2', { site_id: 2, site_name: 'Lab', connectivity_status: 'Disconnected' }),
];

/**
 * GET /api/devices as the Engine pages it: site/status drilldown, a draft
 * filter's hostname conditions, saved filters (by ID, from `savedFilters`),
 * sort, limit and offset, with the total.
 */
export function pagedDevices(list: () => Device[], savedFilters: Record<string, (d: Device) => boolean> = {}) {
  return (call: RecordedCall) => {
    let rows = list();
    const filterId = call.query.get('filter_id');
    if (filterId) rows = rows.filter(savedFilters[filterId] ?? (() => false));
    const site = call.query.get('site_id');
    const status = call.query.get('status');
    if (site) rows = rows.filter((d) => String(d.site_id) === site);
    if (status) rows = rows.filter((d) => d.connectivity_status.toLowerCase() === status);
    const filter = call.query.get('filter');
    if (filter) {
      const walk = (n: { field?: string; op?: string; value?: unknown; conditions?: unknown[] }): ((d: Device) => boolean) => {
        if (n.conditions) {
          const parts = n.conditions.map((c) => walk(c as typeof n));
          return (d) => parts.every((p) => p(d));
        }
        if (n.field === 'hostname' && n.op === 'contains') return (d) => d.hostname.includes(String(n.value));
        return () => true;
      };
      rows = rows.filter(walk(JSON.parse(filter)));
    }
    const sort = call.query.get('sort') ?? 'hostname';
    const desc = sort.startsWith('-');
    const key = sort.replace(/^-/, '');
    const value = (d: Device) =>
      key === 'last_seen' ? d.last_seen ?? '' : key.startsWith('metadata:') ? d.metadata_fields?.[key.slice(9)] ?? '' : d.hostname;
    rows = [...rows].sort((a, b) => value(a).localeCompare(value(b)) * (desc ? -1 : 1));
    const limit = Number(call.query.get('limit') ?? 100);
    const offset = Number(call.query.get('offset') ?? 0);
    return { body: { devices: rows.slice(offset, offset + limit), total: rows.length, limit, offset, online_window_seconds: 90 } };
  };
}

function LocationProbe() {
  const location = useLocation();
  return <div data-testid="location">{location.pathname + location.search}</div>;
}

export const query = () => new URLSearchParams(screen.getByTestId('location').textContent!.split('?')[1] ?? '');

export function renderPage(route = '/devices', user: typeof ADMIN = ADMIN) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user: user as never, signOut: async () => {} }}>
      <WithToasts>
        <DevicesPage />
        <LocationProbe />
      </WithToasts>
    </SessionContext.Provider>,
    { route },
  );
}

export const rowOf = (text: string) => screen.getByText(text).closest('.ag-row') as HTMLElement;

export const BASE = {
  'GET /api/sites': { body: { sites: SITES } },
  'GET /api/metadata_fields': { body: { fields: [], value_max_length: 1024 } },
  'GET /api/device_list_views': { body: { views: [] } },
};

