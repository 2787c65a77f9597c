import { wireSummary } from '../../test/wire';
import type { Device, DeviceDetails, PatchRow, RoleHealth } from '../../api/types';

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
    agent_build_id: '',
    trust_state: 'active',
    metadata_fields: {},
    ...extra,
  };
}

export function role(key: string, extra: Partial<RoleHealth> = {}): RoleHealth {
  return {
    key,
    role: key.replace('system:', ''),
    context: {},
    updated_at: '2026-11-21T08:00:00Z',
    desired: 'running',
    observed: 'Healthy',
    last_checked_at: '2026-11-21T08:00:00Z',
    last_healthy_at: '2026-11-21T08:00:00Z',
    last_error: '',
    recovery_attempts: 0,
    ...extra,
  };
}

/** A patch row with the fields a test does not care about empty, as the Engine sends them. */
export function patch(p: Partial<PatchRow> & Pick<PatchRow, 'patch_key' | 'title' | 'state' | 'source'>): PatchRow {
  return {
    kb: '',
    package: '',
    installed_version: '',
    candidate_version: '',
    severity: '',
    revision: 0,
    update_id: '',
    installed_at: null,
    updated_at: '2026-11-21T08:00:00Z',
    ...p,
  };
}

/** Details where every collection is "not collected yet". */
export function bareDetails(hostname: string, extra: Partial<Device> = {}): DeviceDetails {
  return {
    device: wireSummary(device(hostname, extra)),
    hardware: null,
    os: null,
    network: null,
    sessions: null,
    uptime: null,
    software: null,
    services: null,
    processes: null,
    process_command_lines_redacted: false,
    patches: null,
    roles: null,
    agent_health: { startup: null, agent_connection: [], roles: [] },
    collected_at: null,
    inventory_updated_at: null,
    metrics: null,
    last_status: null,
  };
}

/** A device with every collection filled in. */
export function fullDetails(): DeviceDetails {
  return {
    device: wireSummary(device('web-1', { description: 'Front web server', metadata_fields: { '12': 'rack 4' } })),
    agent_health: { startup: null, agent_connection: [], roles: [] },
    process_command_lines_redacted: false,
    collected_at: '2026-11-21T08:00:00Z',
    inventory_updated_at: '2026-11-21T08:00:00Z',
    metrics: { cpu_percent: 12.5, memory_used_bytes: 2 * 1024 ** 3, memory_total_bytes: 8 * 1024 ** 3, uptime_seconds: 93600, logged_in_users: ['alice'] },
    os: { family: 'linux', name: 'Debian GNU/Linux 12 (bookworm)', id: 'debian', version: '12', kernel_version: '6.1.0-18-amd64', arch: 'amd64', hostname: 'web-1' },
    uptime: { boot_time: '2026-11-20T06:00:00Z', uptime_seconds: 93600, boot_id: 'boot-abc' },
    hardware: {
      cpu_model: 'AMD EPYC 7302P',
      cpu_cores: 4,
      cpu_threads: 8,
      memory_total_bytes: 8 * 1024 ** 3,
      system_vendor: 'QEMU',
      system_model: 'Standard PC',
      virtualization: 'kvm',
      disks: [{ name: 'vda', size_bytes: 40 * 1024 ** 3, removable: false, cdrom: false, mountpoint: '/', fs_type: 'ext4', used_bytes: 10 * 1024 ** 3, free_bytes: 30 * 1024 ** 3 }],
    },
    network: [
      { name: 'eth0', mac: '52:54:00:12:34:56', mtu: 1500, up: true, loopback: false, addresses: ['192.0.2.10/24', 'fe80::1/64'] },
    ],
    sessions: [{ username: 'alice', type: 'ssh', tty: 'pts/0', remote: '198.51.100.7', active: true, helper_ready: false, login_at: '2026-11-21T07:00:00Z' }],
    software: [
      { name: 'openssl', version: '3.0.11-1', source: 'dpkg', arch: 'amd64' },
      { name: 'nginx', version: '1.22.1-9', source: 'dpkg', arch: 'amd64', icon_hash: 'ab'.repeat(32) },
    ],
    services: [
      { name: 'nginx.service', display_name: 'A high performance web server', state: 'running', sub_state: 'running' },
      { name: 'cron.service', state: 'failed', sub_state: 'failed' },
    ],
    processes: [{ pid: 4242, ppid: 1, name: 'nginx', user: 'www-data', command: 'nginx: worker process', cpu_percent: 1.5, rss_bytes: 12 * 1024 ** 2 }],
    patches: [
      patch({ patch_key: 'apt:openssl', title: 'openssl security update', state: 'pending', source: 'apt', package: 'openssl', installed_version: '3.0.11-1', candidate_version: '3.0.13-1' }),
      patch({ patch_key: 'apt:nginx', title: 'nginx', state: 'installed', source: 'apt', package: 'nginx', installed_version: '1.22.1-9' }),
    ],
    roles: [
      role('system:api_websocket', { context: { worker: 'site:hq' } }),
      role('system:vpn_tunnel', { observed: 'Recovering', last_error: 'no handshake', recovery_attempts: 2, context: { virtual_ip: '100.64.0.7', tunnel_id: 't-9' } }),
      role('system:system_heartbeat', { context: { context: 'startup', boot_id: 'boot-abc' } }),
      role('system:device_audit'),
      role('system:current_user', { observed: 'Unhealthy', last_error: 'no desktop session' }),
    ],
    last_status: {
      phase: 'running',
      agent_version: '0.4.0',
      started_at: '2026-11-21T07:59:00Z',
      milestones: [
        { name: 'config loaded', at: '2026-11-21T07:59:01Z', ok: true },
        { name: 'socket connected', at: '2026-11-21T07:59:05Z', ok: false, detail: 'route refresh' },
      ],
    },
  };
}
