import { describe, expect, it } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { fakeEngine } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { ClusterSection } from './ClusterSection';

const member = (id: string, over: Record<string, unknown> = {}) => ({
  member_id: id,
  role: 'engine',
  name: `host-${id}:1`,
  version: 'v1.0.0',
  sites: [],
  url: 'https://cairn.test',
  started_at: '2026-11-29T06:00:00Z',
  last_seen: '2026-11-29T06:00:10Z',
  state: 'up',
  ...over,
});

const pending = {
  id: 'adm-1',
  role: 'worker',
  name: 'host-b',
  sites: ['west'],
  version: 'v1.0.1',
  fingerprint: 'ab12-cd34-ef56-7890',
  state: 'pending',
  requested_at: '2026-11-29T06:01:00Z',
  expires_at: '2026-11-30T06:01:00Z',
  decided_at: null,
  delivered: false,
};

describe('ClusterSection', () => {
  it('lists members and pending admissions, issues a join code and approves', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/server/cluster': {
        body: {
          member_id: 'a',
          members: [member('a'), member('w', { role: 'worker', sites: ['west'], admission_id: 'adm-0', state: 'down' })],
          admissions: [pending],
          postgresql: { role: 'primary', version: '16.4' },
          temporal: { namespace: 'default', state: 'running' },
          banner: { severity: 'warning', message: '1 member(s) not seen for 35s; 1 admission(s) wait on a decision', pending_admissions: 1, members_down: 1, versions: ['v1.0.0'] },
        },
      },
      'GET /api/server/cluster/releases': { body: { current: { version: 'v1.0.0' }, engine: [], agent: [] } },
      'POST /api/server/cluster/join-codes': {
        status: 201,
        body: { id: 'c1', code: 'cjc_secretcode', role: 'worker', expires_at: '2026-11-29T07:00:00Z' },
      },
      'POST /api/server/cluster/admissions/adm-1/approve': {
        status: 202,
        body: { admission: pending, decision: 'approve', workflow_id: 'cluster-admission:adm-1' },
      },
    });
    renderWithProviders(<ClusterSection />);
    expect(await screen.findByText('host-a:1 (this replica) · configured by hand')).toBeInTheDocument();
    const members = screen.getByRole('table', { name: 'Cluster members' });
    expect(within(members).getByText('Site worker')).toBeInTheDocument();
    expect(within(members).getByText('down')).toBeInTheDocument();
    expect(screen.getByTestId('cluster-banner')).toHaveTextContent('1 member(s) not seen');
    expect(screen.getByText(/PostgreSQL primary 16.4/)).toBeInTheDocument();

    const admissions = screen.getByRole('table', { name: 'Pending admissions' });
    expect(within(admissions).getByText('ab12-cd34-ef56-7890')).toBeInTheDocument();

    await user.click(screen.getByRole('button', { name: 'Join code for a worker' }));
    expect(await screen.findByTestId('join-code')).toHaveTextContent('cjc_secretcode');
    expect(engine.callsTo('POST', '/api/server/cluster/join-codes')[0].body).toEqual({ role: 'worker' });

    await user.click(within(admissions).getByRole('button', { name: 'Approve' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/server/cluster/admissions/adm-1/approve')).toHaveLength(1));
  });
});
