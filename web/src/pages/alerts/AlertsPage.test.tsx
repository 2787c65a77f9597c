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

  it('acknowledges the selected open incidents at once', async () => {
    const user = userEvent.setup({ delay: null });
    let rows = [incident({ id: 7 }), incident({ id: 8, title: 'Disk full on db-01' }), incident({ id: 9, state: 'Acknowledged', acknowledged_by: 'bob' })];
    const ack = (id: number) => () => {
      rows = rows.map((r) => (r.id === id ? { ...r, state: 'Acknowledged', acknowledged_by: 'admin' } : r));
      return { body: rows.find((r) => r.id === id) };
    };
    const fake = fakeEngine({
      'GET /api/watchdogs/incidents': () => ({
        body: { incidents: rows, total: rows.length, counts: [], by_state: { Open: rows.filter((r) => r.state === 'Open').length } },
      }),
      'POST /api/watchdogs/incidents/7/acknowledge': ack(7),
      'POST /api/watchdogs/incidents/8/acknowledge': ack(8),
    });
    renderWithProviders(<AlertsPage />, { route: '/alerts' });
    await screen.findByTestId('incident-8');
    const bulk = screen.getByTestId('bulk-acknowledge');
    expect(bulk).toBeDisabled();
    expect(within(screen.getByTestId('incident-9')).queryByRole('checkbox')).toBeNull();
    await user.click(screen.getByRole('checkbox', { name: 'Select every open incident' }));
    expect(bulk).toHaveTextContent('Acknowledge selected (2)');
    await user.click(bulk);
    await waitFor(() => expect(screen.getByTestId('incident-8')).toHaveTextContent('Acknowledged'));
    expect(screen.getByTestId('incident-7')).toHaveTextContent('Acknowledged');
    expect(fake.callsTo('POST', '/api/watchdogs/incidents/7/acknowledge')).toHaveLength(1);
    expect(fake.callsTo('POST', '/api/watchdogs/incidents/8/acknowledge')).toHaveLength(1);
    expect(screen.getByTestId('bulk-acknowledge')).toHaveTextContent('Acknowledge selected (0)');
  });
});
