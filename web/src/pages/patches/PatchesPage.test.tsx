import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { PatchAuditRow, PatchPolicyRow, User } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine, validationFailed } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import PatchesPage, { draftOf, severityCounts } from './PatchesPage';

afterEach(() => vi.unstubAllGlobals());

const auditRow = (guid: string, site: number, severity: string, extra: Partial<PatchAuditRow> = {}) =>
  ({
    device_guid: guid,
    hostname: guid,
    site_id: site,
    site_name: site === 1 ? 'Alpha' : 'Beta',
    state: 'pending',
    severity,
    security: false,
    ...extra,
  }) as PatchAuditRow;

const policy = (id: number, name: string, extra: Partial<PatchPolicyRow> = {}) =>
  ({
    policy_id: id,
    name,
    type: 'site',
    role_scope: 'Server',
    locked: false,
    enabled: true,
    site_id: 1,
    device_filter_id: null,
    rules: [{ rule_type: 'package', match_type: 'equals', value: 'hello', action: 'approve' }],
    exclusions: [],
    defaults: { deferral_days: null, reboot_policy: '' },
    maintenance_window: null,
    raw_device_count: 3,
    eligible_device_count: 2,
    target_sites: [1],
    pending_update_count: 4,
    pending_update_device_count: 2,
    pending_update_breakdown: [{ layer: 'site', count: 4, device_count: 2 }],
    created_by: 'admin',
    created_at: '2026-11-29T06:00:00Z',
    updated_at: '2026-11-29T06:00:00Z',
    last_evaluated_at: null,
    ...extra,
  }) as PatchPolicyRow;

const META = {
  types: ['global', 'site', 'device_filter'],
  role_scopes: ['Server', 'Workstation'],
  rule_types: [
    { rule_type: 'severity', match_types: ['equals'] },
    { rule_type: 'title', match_types: ['equals', 'title_contains'] },
    { rule_type: 'package', match_types: ['equals'] },
  ],
  match_types: ['equals', 'title_contains'],
  actions: ['approve', 'block'],
  reboot_policies: ['never', 'when_required', 'always'],
  weekdays: [],
  exclusions: [],
  defaults: { deferral_days: 0, reboot_policy: 'never' },
  sites: [{ site_id: 1, name: 'Alpha' }],
  filters: [],
  limits: {},
  decisions: [],
  layers: {},
};

function renderPage(user: User = ADMIN) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user, signOut: async () => {} }}>
      <PatchesPage />
    </SessionContext.Provider>,
    { route: '/patches' },
  );
}

describe('severityCounts', () => {
  it('counts pending rows per site and severity, unrated when the provider gives none', () => {
    const counts = severityCounts([
      auditRow('a', 1, 'Critical', { security: true }),
      auditRow('a', 1, 'critical'),
      auditRow('b', 1, ''),
      auditRow('c', 2, 'Low'),
      auditRow('c', 2, 'Low', { state: 'installed' }),
    ]);
    expect(counts).toHaveLength(2);
    expect(counts[0]).toMatchObject({ site_name: 'Alpha', devices: 2, security: 1 });
    expect(counts[0].bySeverity).toEqual({ Critical: 2, Important: 0, Moderate: 0, Low: 0, Unrated: 1 });
    expect(counts[1].bySeverity.Low).toBe(1);
  });
});

describe('PatchesPage', () => {
  function engine(extra: Record<string, unknown> = {}) {
    return fakeEngine({
      'GET /api/patches/audit': { body: { rows: [auditRow('a', 1, 'Important')], next_cursor: null } },
      'GET /api/patches/policies': {
        body: { policies: [policy(1, 'Global (Server)', { type: 'global', locked: true, site_id: null }), policy(5, 'Alpha servers')] },
      },
      'GET /api/patches/policies/metadata': { body: META },
      ...(extra as Record<string, never>),
    });
  }

  it('shows the audit counts and the policies with their counts', async () => {
    engine();
    renderPage();
    const grid = await screen.findByRole('table', { name: 'Pending patches by site' });
    const alpha = within(grid).getByText('Alpha').closest('tr') as HTMLElement;
    expect(within(alpha).getAllByText('1')).toHaveLength(2); // Important and devices
    const policies = await screen.findByRole('table', { name: 'Patch policies' });
    const site = within(policies).getByText(/Alpha servers/).closest('tr') as HTMLElement;
    expect(within(site).getByText('2 / 3')).toBeInTheDocument();
    expect(within(site).getByText(/4 on 2 devices \(site: 4\)/)).toBeInTheDocument();
    const global = within(policies).getByText(/Global \(Server\)/).closest('tr') as HTMLElement;
    expect(within(global).getByText('locked')).toBeInTheDocument();
    expect(within(global).queryByRole('button', { name: 'Delete' })).toBeNull();
  });

  it('previews a draft, then shows the policy_conflict the save answers', async () => {
    const fake = engine({
      'POST /api/patches/policies/conflicts': {
        body: {
          ...policy(-1, 'Alpha servers'),
          conflict: true,
          same_layer_conflicts: [
            {
              policy_id: 7,
              name: 'Alpha blocker',
              type: 'site',
              rule: { rule_type: 'package', match_type: 'equals', value: 'hello', action: 'approve' },
              other_rule: { rule_type: 'package', match_type: 'equals', value: 'hello', action: 'block' },
            },
          ],
          parent_overrides: [],
          targets: [],
        },
      },
      'PUT /api/patches/policies/5': validationFailed(
        { 'rules[package:equals:hello]': 'contradicts block rule of policy 7 (Alpha blocker) in the same layer' },
        409,
        'policy_conflict',
      ),
    });
    renderPage();
    const policies = await screen.findByRole('table', { name: 'Patch policies' });
    const site = within(policies).getByText(/Alpha servers/).closest('tr') as HTMLElement;
    await userEvent.click(within(site).getByRole('button', { name: 'Edit' }));
    const value = await screen.findByLabelText('Rule 1 value');
    await userEvent.clear(value);
    await userEvent.type(value, 'hello');
    await userEvent.click(screen.getByRole('button', { name: 'Preview' }));
    const preview = await screen.findByTestId('policy-preview');
    expect(preview).toHaveTextContent('2 of 3 devices eligible');
    expect(preview).toHaveTextContent('Conflicts with Alpha blocker: it blocks package hello.');
    expect(fake.callsTo('POST', '/api/patches/policies/conflicts')[0].body).toMatchObject({
      name: 'Alpha servers',
      type: 'site',
      site_id: 1,
      rules: [{ rule_type: 'package', value: 'hello', action: 'approve' }],
    });
    await userEvent.click(screen.getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(fake.callsTo('PUT', '/api/patches/policies/5')).toHaveLength(1));
    expect(await screen.findByText(/contradicts block rule of policy 7/)).toBeInTheDocument();
  });

  it('offers no changes to operators', async () => {
    engine();
    renderPage({ ...ADMIN, username: 'olga', role: 'operator' });
    const policies = await screen.findByRole('table', { name: 'Patch policies' });
    expect(within(policies).queryByRole('button', { name: 'Edit' })).toBeNull();
    expect(screen.queryByRole('button', { name: 'New policy' })).toBeNull();
  });

  it('keeps a stored row editable as a draft', () => {
    expect(draftOf(policy(5, 'Alpha servers'))).toMatchObject({ type: 'site', site_id: 1, role_scope: 'Server' });
    expect(draftOf()).toMatchObject({ type: 'site', rules: [] });
  });
});
