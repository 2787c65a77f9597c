import { describe, expect, it } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { fakeEngine, type RecordedCall } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WatchdogsTab } from './WatchdogsTab';

const watchdog = {
  id: 3, name: 'nginx down', description: '', severity: 'warning', enabled: true, site_ids: null,
  targets: { kind: 'all', device_guids: [], filter_ids: [] }, match: 'all', rules: [], actions: [],
  noise: { interval_seconds: 60, consecutive_matches: 1, cooldown_seconds: 0, auto_resolve_seconds: 0, boot_grace_seconds: 0, stale_seconds: 0 },
  revision: 1, evaluated_at: null, created_by: 'admin', created_at: '2026-11-29T03:00:00Z', updated_by: 'admin', updated_at: '2026-11-29T03:00:00Z',
};

describe('WatchdogsTab', () => {
  it('mutes a watchdog on the device only with a reason', async () => {
    const user = userEvent.setup({ delay: null });
    let override: { reason: string; created_by: string; created_at: string } | null = null;
    const rows = () => ({ watchdogs: [{ watchdog, targeted: true, override, incident: null }] });
    const fake = fakeEngine({
      'GET /api/devices/g-1/watchdogs': () => ({ body: rows() }),
      'POST /api/devices/g-1/watchdogs/overrides': (call: RecordedCall) => {
        const body = call.body as { muted: boolean; reason: string };
        override = body.muted ? { reason: body.reason, created_by: 'admin', created_at: '2026-11-29T03:05:00Z' } : null;
        return { body: rows() };
      },
    });
    renderWithProviders(<WatchdogsTab guid="g-1" />, { route: '/devices/web-1/watchdogs' });
    const row = await screen.findByTestId('watchdog-3');
    expect(row).toHaveTextContent('nginx down');
    await user.click(within(row).getByRole('button', { name: 'Mute' }));
    const dialog = await screen.findByRole('dialog');
    expect(within(dialog).getByRole('button', { name: 'Mute' })).toBeDisabled();
    await user.type(within(dialog).getByLabelText(/Reason/), 'replacing the disk');
    await user.click(within(dialog).getByRole('button', { name: 'Mute' }));
    await waitFor(() => expect(screen.getByTestId('watchdog-3')).toHaveTextContent('Muted: replacing the disk'));
    expect(fake.callsTo('POST', '/api/devices/g-1/watchdogs/overrides')[0].body).toEqual({ watchdog_id: 3, muted: true, reason: 'replacing the disk' });
    await user.click(within(screen.getByTestId('watchdog-3')).getByRole('button', { name: 'Unmute' }));
    await waitFor(() => expect(screen.getByTestId('watchdog-3')).not.toHaveTextContent('Muted'));
  });
});
