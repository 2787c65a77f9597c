// Test fixtures shaped as the Engine sends them: the console's types are
// generated from the API document, so a fixture must carry every field the
// Engine always sends. These fill the ones a test does not care about.
import type { Device, DeviceSummary, Site } from '../api/types';

export function wireSite(s: Partial<Site> & Pick<Site, 'site_id' | 'name'>): Site {
  return {
    site_worker_slug: '',
    site_worker_name: '',
    public_base_url: '',
    public_hostname: '',
    device_count: 0,
    auto_approve_until: null,
    created_at: '2026-11-21T08:00:00Z',
    updated_at: '2026-11-21T08:00:00Z',
    agent_binary_source: 'engine',
    install_links: {},
    ...s,
  };
}

/** What the device summary (details, enrollment) adds to a listed device. */
export function wireSummary(d: Device, extra: Partial<DeviceSummary> = {}): DeviceSummary {
  return {
    ...d,
    site_worker_slug: '',
    boot_id: '',
    helper_contexts: [],
    metrics: null,
    capabilities: [],
    enrolled_at: '2026-11-21T08:00:00Z',
    cloned_from: null,
    ...extra,
  };
}
