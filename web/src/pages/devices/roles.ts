// Role health rows (SPEC "Agent role health snapshot"): the API WebSocket and
// VPN-tunnel roles form the Agent Connection group and are not repeated
// under Roles; system:system_heartbeat with context "startup" is the startup
// timeline.
import type { RoleHealth } from '../../api/types';

export const AGENT_CONNECTION = 'Agent Connection';
export const CONNECTION_KEYS = ['system:api_websocket', 'system:vpn_tunnel'] as const;
export const STARTUP_KEY = 'system:system_heartbeat';

const ROLE_NAMES: Record<string, string> = {
  'system:api_websocket': 'API WebSocket',
  'system:vpn_tunnel': 'VPN tunnel',
  'system:system_heartbeat': 'Startup timeline',
  'system:system_context': 'System context',
  'system:current_user': 'Current user',
  'system:device_audit': 'Device audit',
  'system:file_management': 'File management',
  'system:patch_management': 'Patch management',
  'system:process_management': 'Process management',
  'system:registry_management': 'Registry management',
  'system:service_management': 'Service management',
  'system:software_management': 'Software management',
  'system:remote_shell': 'Remote shell',
  'system:vnc': 'VNC',
  'system:rdp': 'RDP',
};

/**
 * The roles an operator may stop and start (agent/proto StoppableRoles);
 * the others are the agent's own process, its connection, or have nothing
 * the agent could stop, and the Engine refuses them (role_not_stoppable).
 */
export const STOPPABLE_ROLES = [
  'remote_shell',
  'file_management',
  'process_management',
  'service_management',
  'software_management',
  'patch_management',
  'registry_management',
  'vnc',
] as const;

/** "system:remote_shell" → "remote_shell" when an operator may stop and start it, else null. */
export function stoppableRole(key: string): string | null {
  const bare = key.replace(/^system:/, '');
  return (STOPPABLE_ROLES as readonly string[]).includes(bare) ? bare : null;
}

/** "system:device_audit" → "Device audit"; unknown roles by their own name. */
export function roleName(key: string): string {
  if (ROLE_NAMES[key]) return ROLE_NAMES[key];
  const bare = key.replace(/^system:/, '').replace(/[_\s]+/g, ' ').trim();
  return bare ? bare[0].toUpperCase() + bare.slice(1) : key;
}

export interface GroupedRoles {
  connection: RoleHealth[];
  startup: RoleHealth | null;
  roles: RoleHealth[];
}

function isConnection(r: RoleHealth): boolean {
  return (CONNECTION_KEYS as readonly string[]).includes(r.key) || r.group === AGENT_CONNECTION;
}

/** A role's context: whatever object the agent reported for it (the document says "any JSON"). */
export function roleContext(r: RoleHealth): Record<string, unknown> | null {
  const c = r.context;
  return c !== null && typeof c === 'object' && !Array.isArray(c) ? (c as Record<string, unknown>) : null;
}

function isStartup(r: RoleHealth): boolean {
  return r.key === STARTUP_KEY && roleContext(r)?.context === 'startup';
}

export function groupRoles(rows: readonly RoleHealth[] | null | undefined): GroupedRoles {
  const out: GroupedRoles = { connection: [], startup: null, roles: [] };
  for (const r of rows ?? []) {
    if (isConnection(r)) out.connection.push(r);
    else if (isStartup(r) && !out.startup) out.startup = r;
    else out.roles.push(r);
  }
  // WebSocket before tunnel, then the rest by name.
  const order = (r: RoleHealth) => {
    const i = (CONNECTION_KEYS as readonly string[]).indexOf(r.key);
    return i < 0 ? CONNECTION_KEYS.length : i;
  };
  out.connection.sort((a, b) => order(a) - order(b) || roleName(a.key).localeCompare(roleName(b.key)));
  out.roles.sort((a, b) => roleName(a.key).localeCompare(roleName(b.key)));
  return out;
}

const SEVERITY: Record<string, number> = { Healthy: 0, Stopped: 0, Recovering: 1, Unhealthy: 2 };

/** The group's state: its worst row; null for an empty group. */
export function worstObserved(rows: readonly RoleHealth[]): string | null {
  if (rows.length === 0) return null;
  return rows.reduce((worst, r) => ((SEVERITY[r.observed] ?? 3) > (SEVERITY[worst] ?? 3) ? r.observed : worst), rows[0].observed);
}

/**
 * The context entries a table can show: scalar values as text. Nested
 * values (the startup row carries its milestones) are shown elsewhere or
 * not at all; the "context" marker itself is skipped.
 */
export function contextEntries(context: Record<string, unknown> | null | undefined): [string, string][] {
  return Object.entries(context ?? {})
    .filter(([k, v]) => k !== 'context' && v !== null && ['string', 'number', 'boolean'].includes(typeof v))
    .map(([k, v]) => [k.replace(/_/g, ' '), String(v)]);
}
