import { describe, expect, it } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { WatchdogMetadata } from '../../api/types';
import { fakeEngine, validationFailed, type RecordedCall } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import WatchdogsPage from './WatchdogsPage';

const md: WatchdogMetadata = {
  subjects: [
    { subject: 'cpu_percent', label: 'CPU usage', unit: 'percent', operators: ['gt', 'lt'], threshold: true, target: '', value: false, description: '' },
    { subject: 'service', label: 'Service state', unit: '', operators: ['not_running'], threshold: false, target: 'service name', value: false, description: '' },
  ],
  severities: ['info', 'warning', 'critical'],
  matches: ['all', 'any'],
  target_kinds: ['all', 'devices', 'filters'],
  actions: ['track', 'toast', 'service_control', 'run_assembly'],
  service_actions: ['start', 'stop', 'restart'],
  states: ['Open', 'Acknowledged', 'Suppressed', 'Resolved'],
  min_interval_seconds: 30,
  default_interval_seconds: 60,
  max_seconds: 604800,
};

describe('WatchdogsPage', () => {
  it('builds a rule, previews it and saves, showing the field the Engine refuses', async () => {
    const user = userEvent.setup({ delay: null });
    let saves = 0;
    const fake = fakeEngine({
      'GET /api/watchdogs': { body: { watchdogs: [] } },
      'GET /api/watchdogs/metadata': { body: md },
      'POST /api/watchdogs/preview': {
        body: { targets: 2, matched: 1, devices: [{ guid: 'g1', hostname: 'web-01', site_id: 1, matched: true, samples: [] }] },
      },
      'POST /api/watchdogs': (call: RecordedCall) => {
        saves++;
        const body = call.body as { rules: { threshold: number | null }[] };
        if (saves === 1 && body.rules[0].threshold === 190) return validationFailed({ 'rules[0].threshold': 'must be 0 to 100' });
        return { status: 201, body: { id: 5, ...body } };
      },
    });
    renderWithProviders(<WatchdogsPage />, { route: '/alerts/watchdogs' });
    const add = await screen.findByRole('button', { name: 'New watchdog' });
    await waitFor(() => expect(add).toBeEnabled());
    await user.click(add);
    const dialog = await screen.findByRole('dialog');
    await user.type(within(dialog).getByLabelText('Name'), 'CPU hot');
    await user.click(within(dialog).getByRole('button', { name: 'Add rule' }));
    await user.type(within(dialog).getByLabelText(/Threshold/), '190');
    await user.click(within(dialog).getByRole('button', { name: 'Add action' }));

    await user.click(within(dialog).getByRole('button', { name: 'Preview' }));
    expect(await within(dialog).findByTestId('preview')).toHaveTextContent('1 of 2 targeted devices match now');
    expect(within(dialog).getByTestId('preview')).toHaveTextContent('web-01: matches');

    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    expect(await within(dialog).findByText('must be 0 to 100')).toBeInTheDocument();
    await user.clear(within(dialog).getByLabelText(/Threshold/));
    await user.type(within(dialog).getByLabelText(/Threshold/), '90');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    const posted = fake.callsTo('POST', '/api/watchdogs');
    expect(posted[1].body).toMatchObject({
      name: 'CPU hot',
      severity: 'warning',
      match: 'all',
      targets: { kind: 'all' },
      rules: [{ subject: 'cpu_percent', operator: 'gt', threshold: 90 }],
      noise: { interval_seconds: 60, consecutive_matches: 1 },
      actions: [{ type: 'toast' }],
    });
  });

  it('picks sites, devices and a remediation assembly by name and saves their IDs', async () => {
    const user = userEvent.setup({ delay: null });
    const fake = fakeEngine({
      'GET /api/watchdogs': { body: { watchdogs: [] } },
      'GET /api/watchdogs/metadata': { body: md },
      'GET /api/sites': { body: { sites: [{ site_id: 4, name: 'Berlin office' }, { site_id: 5, name: 'Lyon office' }] } },
      'GET /api/devices': {
        body: {
          devices: [
            { guid: 'g-web', hostname: 'web-01', site_id: 4, site_name: 'Berlin office', connectivity_status: 'Connected' },
            { guid: 'g-db', hostname: 'db-01', site_id: 4, site_name: 'Berlin office', connectivity_status: 'Connected' },
          ],
          total: 2,
        },
      },
      'GET /api/assemblies': { body: { assemblies: [{ id: 12, name: 'Restart nginx', kind: 'script', language: 'sh', version: 3 }] } },
      'POST /api/watchdogs': (call: RecordedCall) => ({ status: 201, body: { id: 6, ...(call.body as object) } }),
    });
    renderWithProviders(<WatchdogsPage />, { route: '/alerts/watchdogs' });
    const add = await screen.findByRole('button', { name: 'New watchdog' });
    await waitFor(() => expect(add).toBeEnabled());
    await user.click(add);
    const dialog = await screen.findByRole('dialog');
    const pick = async (label: string | RegExp, option: string) => {
      await user.click(within(dialog).getByRole('combobox', { name: label }));
      await user.click(await screen.findByRole('option', { name: new RegExp(`^${option}`) }));
    };
    await user.type(within(dialog).getByLabelText('Name'), 'nginx down');
    await pick('Sites', 'Berlin office');
    await user.click(within(dialog).getByRole('combobox', { name: /^Applies to/ }));
    await user.click(await screen.findByRole('option', { name: 'Devices' }));
    await pick('Devices', 'web-01');
    await pick('Devices', 'db-01');
    await user.click(within(dialog).getByRole('button', { name: 'Add rule' }));
    await user.type(within(dialog).getByLabelText(/Threshold/), '90');
    await user.click(within(dialog).getByRole('button', { name: 'Add action' }));
    await user.click(within(within(dialog).getByTestId('action-0')).getByRole('combobox', { name: /^Action/ }));
    await user.click(await screen.findByRole('option', { name: 'run_assembly' }));
    await pick('Assembly', 'Restart nginx');
    expect(within(dialog).getByRole('button', { name: 'web-01' })).toBeInTheDocument();

    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(fake.callsTo('POST', '/api/watchdogs')[0].body).toMatchObject({
      name: 'nginx down',
      site_ids: [4],
      targets: { kind: 'devices', device_guids: ['g-web', 'g-db'] },
      actions: [{ type: 'run_assembly', assembly_id: 12 }],
    });
  });
});
