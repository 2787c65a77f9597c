// Query keys of the device pages and the live updates from the operator
// event stream (SPEC "Events": agent_status_changed, device_inventory_changed,
// device_services_changed carry the device's guid and/or hostname).
import type { QueryClient, QueryKey } from '@tanstack/react-query';
import type { Device, DeviceDetails } from '../../api/types';

/** Device pages refetch this often too: Offline is derived from heartbeat age, and no event says a device went quiet. */
export const DEVICE_POLL_MS = 30_000;

export const devicePath = (hostname: string) => `/devices/${encodeURIComponent(hostname)}`;

/** Every device list and search: ['devices', 'list', {...}] and ['devices', 'search', q]. */
export const DEVICES_QUERY = ['devices'] as const;
export const DEVICE_DETAILS = 'device-details';
export const DEVICE_ACTIVITY = 'device-activity';
/** The live process list; not refreshed by device events, since each fetch may ask the agent. */
export const DEVICE_PROCESSES = 'device-processes';
/** A device's agent update operations, keyed by guid. */
export const DEVICE_AGENT_UPDATES = 'device-agent-updates';
/** A device's 500 metadata rows (the Metadata tab), keyed by hostname like the details. */
export const DEVICE_METADATA = 'device-metadata';

// Hostnames are compared without case, so /devices/WEB-1 and /devices/web-1 share their cache.
export const deviceDetailsKey = (hostname: string) => [DEVICE_DETAILS, hostname.toLowerCase()] as const;
export const deviceActivityKey = (hostname: string) => [DEVICE_ACTIVITY, hostname.toLowerCase()] as const;
export const deviceAgentUpdatesKey = (guid: string) => [DEVICE_AGENT_UPDATES, guid] as const;
export const deviceProcessesKey = (hostname: string) => [DEVICE_PROCESSES, hostname.toLowerCase()] as const;
export const deviceMetadataKey = (hostname: string) => [DEVICE_METADATA, hostname.toLowerCase()] as const;

const str = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : null);

/** Hostnames (lower case) the cache knows for `guid`, from lists and detail pages. */
function hostnamesForGuid(queryClient: QueryClient, guid: string): Set<string> {
  const out = new Set<string>();
  for (const [, data] of queryClient.getQueriesData<Device[]>({ queryKey: DEVICES_QUERY })) {
    for (const d of Array.isArray(data) ? data : []) if (d.guid === guid) out.add(d.hostname.toLowerCase());
  }
  for (const [key, data] of queryClient.getQueriesData<DeviceDetails>({ queryKey: [DEVICE_DETAILS] })) {
    if (data?.device?.guid === guid && typeof key[1] === 'string') out.add(key[1]);
  }
  return out;
}

/** What a device event tells the devices grid: the device's guid and hostname, when the event names them. */
export interface DeviceGridEvent {
  guid: string | null;
  hostname: string | null;
}

const gridListeners = new Set<(e: DeviceGridEvent) => void>();

/**
 * Subscribes a devices grid to device events. The grid pages on demand, so
 * it decides itself what to reload (the blocks it holds, and only when the
 * device is among them) instead of every list being refetched.
 */
export function onDeviceGridEvent(listener: (e: DeviceGridEvent) => void): () => void {
  gridListeners.add(listener);
  return () => gridListeners.delete(listener);
}

/**
 * Marks what a device event changed as stale; the queries on screen refetch.
 * An in-flight fetch is kept rather than restarted, so a burst of events
 * from many agents cannot keep a list from ever loading. Whole device lists
 * are not refetched (at 50,000 devices each would be many pages): the grid
 * hears the event and refreshes what it holds.
 */
export function invalidateForDeviceEvent(queryClient: QueryClient, data: unknown): void {
  const d = data && typeof data === 'object' ? (data as Record<string, unknown>) : {};
  const hostname = str(d.hostname);
  const guid = str(d.guid);
  const opts = { cancelRefetch: false };

  for (const l of [...gridListeners]) l({ guid, hostname });

  const hosts = guid ? hostnamesForGuid(queryClient, guid) : new Set<string>();
  if (hostname) hosts.add(hostname.toLowerCase());
  // Without an identity the event could be about any device on screen.
  const matches = (key: QueryKey) => (hostname || guid ? typeof key[1] === 'string' && hosts.has(key[1]) : true);
  void queryClient.invalidateQueries(
    {
      predicate: (q) =>
        (q.queryKey[0] === DEVICE_DETAILS || q.queryKey[0] === DEVICE_ACTIVITY || q.queryKey[0] === DEVICE_METADATA) &&
        matches(q.queryKey),
    },
    opts,
  );
  void queryClient.invalidateQueries(
    { predicate: (q) => q.queryKey[0] === DEVICE_AGENT_UPDATES && (!guid || q.queryKey[1] === guid) },
    opts,
  );
}
