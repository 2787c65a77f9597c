import { describe, expect, it } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { NotificationChannel } from '../../api/types';
import { fakeEngine, validationFailed, type RecordedCall } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import ChannelsPage from './ChannelsPage';

function channel(extra: Partial<NotificationChannel> = {}): NotificationChannel {
  return {
    id: 1,
    name: 'ops hook',
    kind: 'webhook',
    enabled: true,
    min_severity: 'warning',
    site_ids: null,
    repeat_minutes: 15,
    webhook: { url: 'https://hooks.example.test/cairn' },
    email: null,
    has_secret: true,
    created_by: 'admin',
    created_at: '2026-11-29T03:00:00Z',
    updated_by: 'admin',
    updated_at: '2026-11-29T03:00:00Z',
    ...extra,
  };
}

describe('ChannelsPage', () => {
  it('lists channels without their secrets and adds a webhook, showing the field the Engine refuses', async () => {
    const user = userEvent.setup({ delay: null });
    let rows = [channel()];
    const fake = fakeEngine({
      'GET /api/watchdogs/maintenance-windows': { body: { windows: [] } },
      'GET /api/watchdogs/channels': () => ({ body: { channels: rows } }),
      'POST /api/watchdogs/channels': (call: RecordedCall) => {
        const body = call.body as { webhook: { url: string }; name: string };
        if (!body.webhook.url.startsWith('https://')) return validationFailed({ 'webhook.url': 'must be an absolute http or https URL' });
        rows = [...rows, channel({ id: 2, name: body.name, webhook: body.webhook, repeat_minutes: 0 })];
        return { status: 201, body: rows[1] };
      },
    });
    renderWithProviders(<ChannelsPage />, { route: '/alerts/channels' });
    const row = await screen.findByTestId('channel-1');
    expect(row).toHaveTextContent('https://hooks.example.test/cairn');
    expect(row).toHaveTextContent('every 15 min while open');
    expect(row).toHaveTextContent('set');

    await user.click(screen.getByRole('button', { name: 'Add channel' }));
    const dialog = await screen.findByRole('dialog');
    await user.type(within(dialog).getByLabelText('Name'), 'pager');
    await user.type(within(dialog).getByLabelText('URL'), 'ftp://nope');
    await user.type(within(dialog).getByLabelText('Signing secret'), 'k3y');
    await user.click(within(dialog).getByRole('button', { name: 'Add' }));
    expect(await within(dialog).findByText('must be an absolute http or https URL')).toBeInTheDocument();
    await user.clear(within(dialog).getByLabelText('URL'));
    await user.type(within(dialog).getByLabelText('URL'), 'https://pager.example.test/in');
    await user.click(within(dialog).getByRole('button', { name: 'Add' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(await screen.findByTestId('channel-2')).toHaveTextContent('once');
    const posted = fake.callsTo('POST', '/api/watchdogs/channels');
    expect(posted[1].body).toMatchObject({ name: 'pager', kind: 'webhook', webhook: { url: 'https://pager.example.test/in' }, secret: 'k3y', email: null });
  });

  it('sends a test notification and shows what the Engine answered', async () => {
    const user = userEvent.setup({ delay: null });
    const fake = fakeEngine({
      'GET /api/watchdogs/maintenance-windows': { body: { windows: [] } },
      'GET /api/watchdogs/channels': { body: { channels: [channel(), channel({ id: 2, name: 'lan hook', webhook: { url: 'http://10.0.0.5/h' } })] } },
      'POST /api/watchdogs/channels/1/test': { body: { outcome: 'delivered', code: '', error: '', delivery: 'test-1-1', duration_ms: 42 } },
      'POST /api/watchdogs/channels/2/test': {
        body: {
          outcome: 'refused',
          code: 'notification_refused',
          error: 'webhook: 10.0.0.5 is a loopback, link-local, private or reserved address',
          delivery: 'test-2-1',
          duration_ms: 1,
        },
      },
    });
    renderWithProviders(<ChannelsPage />, { route: '/alerts/channels' });
    await user.click(within(await screen.findByTestId('channel-1')).getByRole('button', { name: 'Send test' }));
    expect(await screen.findByTestId('test-outcome')).toHaveTextContent('Test notification delivered to ops hook (42 ms).');
    expect(fake.callsTo('POST', '/api/watchdogs/channels/1/test')).toHaveLength(1);

    await user.click(within(screen.getByTestId('channel-2')).getByRole('button', { name: 'Send test' }));
    await waitFor(() =>
      expect(screen.getByTestId('test-outcome')).toHaveTextContent(
        'Test notification to lan hook refused: webhook: 10.0.0.5 is a loopback, link-local, private or reserved address',
      ),
    );
    expect(fake.callsTo('POST', '/api/watchdogs/channels/2/test')).toHaveLength(1);
  });

  it('adds maintenance windows for a site, a device and a watchdog picked by name', async () => {
    const user = userEvent.setup({ delay: null });
    let windows: unknown[] = [];
    const fake = fakeEngine({
      'GET /api/watchdogs/channels': { body: { channels: [] } },
      'GET /api/sites': { body: { sites: [{ site_id: 4, name: 'Berlin office' }, { site_id: 5, name: 'Lyon office' }] } },
      'GET /api/devices': {
        body: { devices: [{ guid: 'g-web', hostname: 'web-01', site_id: 4, site_name: 'Berlin office' }], total: 1 },
      },
      'GET /api/watchdogs': { body: { watchdogs: [{ id: 9, name: 'Disk full' }] } },
      'GET /api/watchdogs/maintenance-windows': () => ({ body: { windows } }),
      'POST /api/watchdogs/maintenance-windows': (call: RecordedCall) => {
        windows = [
          ...windows,
          { id: 3 + windows.length, site_id: null, guid: null, watchdog_id: null, active: false, created_by: 'admin', created_at: '2026-11-29T03:00:00Z', ...(call.body as object) },
        ];
        return { status: 201, body: windows[windows.length - 1] };
      },
    });
    renderWithProviders(<ChannelsPage />, { route: '/alerts/channels' });
    const pick = async (label: string, option: string) => {
      await user.click(screen.getByRole('combobox', { name: label }));
      await user.click(await screen.findByRole('option', { name: new RegExp(`^${option}`) }));
    };
    const covers = async (kind: string) => {
      await user.click(screen.getByRole('combobox', { name: /^Covers/ }));
      await user.click(await screen.findByRole('option', { name: kind }));
    };

    await user.type(await screen.findByLabelText('Window name'), 'patch night');
    await pick('Site', 'Berlin office');
    await user.click(screen.getByRole('button', { name: 'Add window' }));
    expect(await screen.findByTestId('window-3')).toHaveTextContent('site Berlin office');
    expect(screen.getByTestId('window-3')).toHaveTextContent('Sun, Sat 02:00 for 120 min (UTC)');

    await covers('a device');
    await user.type(screen.getByLabelText('Window name'), 'web maintenance');
    await pick('Device', 'web-01');
    await user.click(screen.getByRole('button', { name: 'Add window' }));
    expect(await screen.findByTestId('window-4')).toHaveTextContent('device web-01');

    await covers('a watchdog');
    await user.type(screen.getByLabelText('Window name'), 'disk cleanup');
    await pick('Watchdog', 'Disk full');
    await user.click(screen.getByRole('button', { name: 'Add window' }));
    expect(await screen.findByTestId('window-5')).toHaveTextContent('watchdog Disk full');

    const posted = fake.callsTo('POST', '/api/watchdogs/maintenance-windows').map((c) => c.body);
    const when = { weekdays: [0, 6], start_minute: 120, duration_minutes: 120, time_zone: 'UTC' };
    expect(posted).toEqual([
      { name: 'patch night', site_id: 4, guid: null, watchdog_id: null, ...when },
      { name: 'web maintenance', site_id: null, guid: 'g-web', watchdog_id: null, ...when },
      { name: 'disk cleanup', site_id: null, guid: null, watchdog_id: 9, ...when },
    ]);
  });
});
