import { describe, expect, it } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { Incident } from '../../api/types';
import { fakeEngine, validationFailed, type RecordedCall } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import AlertsPage from './AlertsPage';

function incident(extra: Partial<Incident> = {}): Incident {
  return {
    id: 7,
    watchdog_id: 2,
    watchdog_name: 'CPU hot',
    guid: 'g-1',
    hostname: 'web-01',
    site_id: 1,
    severity: 'critical',
    title: 'CPU hot on web-01',
    state: 'Open',
    sampled: [],
    offline_only: false,
    opened_at: '2026-11-29T03:00:00Z',
    last_matched_at: '2026-11-29T03:00:00Z',
    acknowledged_by: null,
    acknowledged_at: null,
    suppressed_by: null,
    suppressed_at: null,
    suppress_reason: null,
    resolved_at: null,
    resolve_reason: null,
    outcomes: [],
    updated_at: '2026-11-29T03:00:00Z',
    ...extra,
  };
}

function engine() {
  let row = incident();
  const queue = () => ({
    body: {
      incidents: [row],
      total: 1,
      counts: [{ state: row.state, severity: 'critical', count: 1 }],
      by_state: { Open: row.state === 'Open' ? 1 : 0, Acknowledged: row.state === 'Acknowledged' ? 1 : 0, Suppressed: row.state === 'Suppressed' ? 1 : 0, Resolved: 0 },
    },
  });
  return fakeEngine({
    'GET /api/watchdogs/incidents': queue,
    'POST /api/watchdogs/incidents/7/acknowledge': () => {
      row = { ...row, state: 'Acknowledged', acknowledged_by: 'admin' };
      return { body: row };
    },
    'POST /api/watchdogs/incidents/7/state': (call: RecordedCall) => {
      const body = call.body as { state: string; reason: string };
      if (body.state === 'Suppressed' && !body.reason.trim()) return validationFailed({ reason: 'is required to suppress an incident' });
      row = { ...row, state: body.state, suppress_reason: body.state === 'Suppressed' ? body.reason : null };
      return { body: row };
    },
  });
}

describe('AlertsPage', () => {
  it('shows the queue with its counts and acknowledges an open incident', async () => {
    const user = userEvent.setup({ delay: null });
    const fake = engine();
    renderWithProviders(<AlertsPage />, { route: '/alerts' });
    const row = await screen.findByTestId('incident-7');
    expect(row).toHaveTextContent('CPU hot on web-01');
    expect(screen.getByTestId('count-Open')).toHaveTextContent('1');
    expect(fake.callsTo('GET', '/api/watchdogs/incidents')[0].query.get('state')).toBe('Open,Acknowledged,Suppressed');
    await user.click(within(row).getByRole('button', { name: 'Acknowledge' }));
    await waitFor(() => expect(screen.getByTestId('incident-7')).toHaveTextContent('Acknowledged'));
    expect(screen.getByTestId('incident-7')).toHaveTextContent('admin');
  });

  it('suppresses only with a reason', async () => {
    const user = userEvent.setup({ delay: null });
    const fake = engine();
    renderWithProviders(<AlertsPage />, { route: '/alerts' });
    await user.click(within(await screen.findByTestId('incident-7')).getByRole('button', { name: 'Suppress' }));
    const dialog = await screen.findByRole('dialog');
    const submit = within(dialog).getByRole('button', { name: 'Suppress' });
    expect(submit).toBeDisabled();
    await user.type(within(dialog).getByLabelText(/Reason/), '   ');
    expect(submit).toBeDisabled();
    expect(fake.callsTo('POST', '/api/watchdogs/incidents/7/state')).toHaveLength(0);
    await user.type(within(dialog).getByLabelText(/Reason/), 'planned load test');
    await user.click(submit);
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(fake.callsTo('POST', '/api/watchdogs/incidents/7/state')[0].body).toEqual({ state: 'Suppressed', reason: 'planned load test' });
    await waitFor(() => expect(screen.getByTestId('incident-7')).toHaveTextContent('Suppressed'));
    expect(screen.getByTestId('incident-7')).toHaveTextContent('planned load test');
    await user.click(within(screen.getByTestId('incident-7')).getByRole('button', { name: 'Open again' }));
    await waitFor(() => expect(screen.getByTestId('incident-7')).toHaveTextContent('Open'));
  });
});
