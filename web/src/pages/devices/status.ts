// Connection status and list filters (SPEC "Device connection status"). Site
// drilldown URLs are /devices?site=<site_id>&status=<connected|disconnected|offline>;
// the token is read case-insensitively and written in lower case.
import type { ConnectivityStatus, Device } from '../../api/types';

export type StatusToken = 'connected' | 'disconnected' | 'offline';

export const STATUS_TOKENS: readonly StatusToken[] = ['connected', 'disconnected', 'offline'];

export const STATUS_LABEL: Record<StatusToken, ConnectivityStatus> = {
  connected: 'Connected',
  disconnected: 'Disconnected',
  offline: 'Offline',
};

/** The canonical token for `raw` ("CONNECTED", " Offline "), or null when it names no status. */
export function normalizeStatus(raw: string | null | undefined): StatusToken | null {
  if (!raw) return null;
  const t = raw.trim().toLowerCase();
  return (STATUS_TOKENS as readonly string[]).includes(t) ? (t as StatusToken) : null;
}

export type ChipColor = 'success' | 'warning' | 'default';

/** Connected green, Disconnected amber, Offline grey; anything else grey with its own text. */
export function statusChip(status: string | null | undefined): { label: string; color: ChipColor } {
  switch (normalizeStatus(status)) {
    case 'connected':
      return { label: 'Connected', color: 'success' };
    case 'disconnected':
      return { label: 'Disconnected', color: 'warning' };
    case 'offline':
      return { label: 'Offline', color: 'default' };
    default:
      return { label: status || 'Unknown', color: 'default' };
  }
}

export interface DeviceFilters {
  siteId: number | null;
  status: StatusToken | null;
  /** Hostname search text. */
  q: string;
}

/** Filters from the address. `statusRaw` keeps what was there, so the page can rewrite a non-canonical token. */
export function readFilters(params: URLSearchParams): DeviceFilters & { statusRaw: string | null } {
  const siteRaw = params.get('site');
  const site = siteRaw && /^\d+$/.test(siteRaw.trim()) ? Number(siteRaw.trim()) : null;
  const statusRaw = params.get('status');
  return {
    siteId: site !== null && site > 0 ? site : null,
    status: normalizeStatus(statusRaw),
    statusRaw,
    q: params.get('q') ?? '',
  };
}

/** The address query for `filters`, keeping unrelated parameters of `base`. */
export function writeFilters(filters: DeviceFilters, base: URLSearchParams = new URLSearchParams()): URLSearchParams {
  const next = new URLSearchParams(base);
  if (filters.siteId !== null) next.set('site', String(filters.siteId));
  else next.delete('site');
  if (filters.status) next.set('status', filters.status);
  else next.delete('status');
  if (filters.q) next.set('q', filters.q);
  else next.delete('q');
  return next;
}

/**
 * Applies the site and status filters in the console too: hostname search
 * results come unfiltered, and it keeps the grid right whatever the list
 * route does with its query.
 */
export function filterDevices(list: readonly Device[], { siteId, status }: Pick<DeviceFilters, 'siteId' | 'status'>): Device[] {
  return list.filter(
    (d) => (siteId === null || d.site_id === siteId) && (status === null || normalizeStatus(d.connectivity_status) === status),
  );
}
