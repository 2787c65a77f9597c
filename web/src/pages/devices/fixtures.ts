import type { Device, DeviceDetails, RoleHealth } from '../../api/types';

export function device(hostname: string, extra: Partial<Device> = {}): Device {
  return {
    guid: `guid-${hostname}`,
    agent_id: `agent-${hostname}`,
    hostname,
    description: '',
    site_id: 1,
    site_name: 'Head office',
    last_seen: '2026-11-21T08:00:00Z',
    agent_socket: true,
    connectivity_status: 'Connected',
    operating_system: 'Debian GNU/Linux 12 (bookworm)',
    agent_version: '0.4.0',
    trust_state: 'active',
    metadata_fields: {},
    ...extra,
  };
}

export function role(key: string, extra: Partial<RoleHealth> = {}): RoleHealth {
  return {
    key,
    desired: 'running',
    observed: 'Healthy',
    last_checked_at: '2026-11-21T08:00:00Z',
    last_healthy_at: '2026-11-21T08:00:00Z',
    last_error: '',
    recovery_attempts: 0,
    ...extra,
  };
}

/** Details where every collection is "not collected yet". */
export function bareDetails(hostname: string, extra: Partial<Device> = {}): DeviceDetails {
  return {
    device: { ...device(hostname, extra), metrics: null },
    hardware: null,
    os: null,
    network: null,
    sessions: null,
    uptime: null,
    software: null,
    services: null,
    processes: null,
    patches: null,
    roles: null,
    metrics: null,
    last_status: null,
  };
}
