import { describe, expect, it } from 'vitest';
import { role } from './fixtures';
import { groupRoles, roleName, worstObserved, contextEntries } from './roles';

describe('groupRoles', () => {
  it('puts the API WebSocket and VPN tunnel under Agent Connection only, and takes out the startup timeline', () => {
    const g = groupRoles([
      role('system:vpn_tunnel', { observed: 'Recovering', context: { virtual_ip: '100.64.0.7' } }),
      role('system:device_audit'),
      role('system:system_heartbeat', { context: { context: 'startup' } }),
      role('system:api_websocket'),
      role('system:current_user', { observed: 'Unhealthy' }),
    ]);
    expect(g.connection.map((r) => r.key)).toEqual(['system:api_websocket', 'system:vpn_tunnel']);
    expect(g.startup?.key).toBe('system:system_heartbeat');
    expect(g.roles.map((r) => r.key)).toEqual(['system:current_user', 'system:device_audit']);
    expect(worstObserved(g.connection)).toBe('Recovering');
  });

  it('honours a grouping the Engine already made, and keeps a non-startup heartbeat row under Roles', () => {
    const g = groupRoles([
      role('system:tunnel_probe', { group: 'Agent Connection' }),
      role('system:system_heartbeat', { context: { context: 'steady' } }),
    ]);
    expect(g.connection.map((r) => r.key)).toEqual(['system:tunnel_probe']);
    expect(g.startup).toBeNull();
    expect(g.roles.map((r) => r.key)).toEqual(['system:system_heartbeat']);
  });

  it('handles a missing snapshot', () => {
    expect(groupRoles(null)).toEqual({ connection: [], startup: null, roles: [] });
    expect(worstObserved([])).toBeNull();
  });
});

describe('roleName', () => {
  it('names known roles and humanises others', () => {
    expect(roleName('system:rdp')).toBe('RDP');
    expect(roleName('system:vpn_tunnel')).toBe('VPN tunnel');
    expect(roleName('system:new_thing')).toBe('New thing');
  });
});

describe('contextEntries', () => {
  it('shows scalar context values and skips nested ones and the marker', () => {
    expect(
      contextEntries({ context: 'startup', phase: 'running', attempts: 2, ok: true, milestones: [{ name: 'x' }], nested: { a: 1 }, gone: null }),
    ).toEqual([
      ['phase', 'running'],
      ['attempts', '2'],
      ['ok', 'true'],
    ]);
  });
});
