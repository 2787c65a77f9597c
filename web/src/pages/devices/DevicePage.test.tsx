import { afterEach, describe, expect, it, vi } from 'vitest';
import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes, useLocation } from 'react-router';
import type { DeviceDetails, User } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine, validationFailed } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import DevicePage from './DevicePage';
import { bareDetails, fullDetails } from './fixtures';
import { invalidateForDeviceEvent } from './queries';

const OPERATOR: User = { ...ADMIN, username: 'olga', role: 'operator' };

function Probe() {
  const location = useLocation();
  return <div data-testid="location">{location.pathname}</div>;
}

function renderPage(route = '/devices/web-1', user: User = ADMIN) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user, signOut: async () => {} }}>
      <WithToasts>
        <Routes>
          <Route path="/devices/:hostname/:tab?" element={<DevicePage />} />
          <Route path="/devices" element={<div data-testid="devices-list">list</div>} />
        </Routes>
        <Probe />
      </WithToasts>
    </SessionContext.Provider>,
    { route },
  );
}

const tab = (name: string) => screen.getByRole('tab', { name });
const panel = () => screen.getByRole('tabpanel');

afterEach(() => vi.unstubAllGlobals());

describe('DevicePage', () => {
  it('shows the header and the summary', async () => {
    fakeEngine({ 'GET /api/device/details/web-1': { body: fullDetails() } });
    renderPage();
    expect(await screen.findByRole('heading', { name: 'web-1' })).toBeInTheDocument();
    const facts = screen.getByTestId('device-facts');
    expect(within(facts).getByRole('link', { name: 'Head office' })).toHaveAttribute('href', '/devices?site=1');
    expect(facts).toHaveTextContent('OS: Debian GNU/Linux 12 (bookworm)');
    expect(screen.getAllByTestId('status-chip')[0]).toHaveTextContent('Connected');
    expect(screen.getAllByTestId('trust-badge')[0]).toHaveTextContent('Active');
    expect(screen.getByTestId('device-description')).toHaveTextContent('Front web server');
    expect(tab('Summary')).toHaveAttribute('aria-selected', 'true');
    const metrics = screen.getByRole('region', { name: 'Live metrics' });
    expect(metrics).toHaveTextContent('12.5 %');
    expect(metrics).toHaveTextContent('2.0 GiB of 8.0 GiB (25 %)');
    expect(metrics).toHaveTextContent('1 d 2 h');
    expect(metrics).toHaveTextContent('alice');
    expect(screen.getByRole('region', { name: 'Operating system' })).toHaveTextContent('6.1.0-18-amd64');
    expect(screen.getByRole('region', { name: 'Metadata fields' })).toHaveTextContent('Field 12rack 4');
  });

  it('says which device a cloned machine was copied from, and nothing for others', async () => {
    const details = fullDetails();
    fakeEngine({
      'GET /api/device/details/web-1': { body: { ...details, device: { ...details.device, cloned_from: 'guid-of-the-original' } } },
    });
    renderPage();
    expect(await screen.findByTestId('device-cloned-from')).toHaveTextContent('Cloned from: guid-of-the-original');
  });

  it('shows no clone origin for a device enrolled from scratch', async () => {
    fakeEngine({ 'GET /api/device/details/web-1': { body: fullDetails() } });
    renderPage();
    expect(await screen.findByRole('heading', { name: 'web-1' })).toBeInTheDocument();
    expect(screen.queryByTestId('device-cloned-from')).not.toBeInTheDocument();
  });

  it('renders the data of every inventory tab', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({ 'GET /api/device/details/web-1': { body: fullDetails() } });
    renderPage();
    await screen.findByRole('heading', { name: 'web-1' });

    await user.click(tab('Hardware'));
    expect(screen.getByTestId('location')).toHaveTextContent('/devices/web-1/hardware');
    expect(panel()).toHaveTextContent('AMD EPYC 7302P');
    expect(panel()).toHaveTextContent('4 cores, 8 threads');
    expect(within(panel()).getByRole('table', { name: 'Disks' })).toHaveTextContent('vda—40 GiB/ext410 GiB30 GiBFixed');

    await user.click(tab('Network'));
    const nics = within(panel()).getByRole('table', { name: 'Network interfaces' });
    expect(nics).toHaveTextContent('eth0');
    expect(nics).toHaveTextContent('192.0.2.10/24');
    expect(nics).toHaveTextContent('52:54:00:12:34:56');

    await user.click(tab('Software'));
    expect(await within(panel()).findByText('openssl')).toBeInTheDocument();
    expect(within(panel()).getByText('nginx')).toBeInTheDocument();
    // The icon the agent sent (or an override set) shows; a row without one shows none.
    const icons = within(panel()).getAllByTestId('software-icon');
    expect(icons).toHaveLength(1);
    expect(icons[0]).toHaveAttribute('src', `/api/device/software/icon/${'ab'.repeat(32)}`);
    await user.type(within(panel()).getByRole('searchbox', { name: 'Filter packages' }), 'nginx');
    await waitFor(() => expect(within(panel()).queryByText('openssl')).not.toBeInTheDocument());
    expect(within(panel()).getByText('nginx')).toBeInTheDocument();

    await user.click(tab('Services'));
    expect(await within(panel()).findByText('nginx.service')).toBeInTheDocument();
    expect(within(panel()).getAllByText('failed').length).toBeGreaterThan(0);

    await user.click(tab('Processes'));
    expect(await within(panel()).findByText('nginx: worker process')).toBeInTheDocument();
    expect(within(panel()).getByText('4242')).toBeInTheDocument();

    await user.click(tab('Sessions'));
    const sessions = within(panel()).getByRole('table', { name: 'Sessions' });
    expect(sessions).toHaveTextContent('alice');
    expect(sessions).toHaveTextContent('198.51.100.7');
    expect(sessions).toHaveTextContent('Not running');

    await user.click(tab('Patches'));
    expect(await within(panel()).findByText('openssl security update')).toBeInTheDocument();
    expect(screen.getByTestId('patch-summary')).toHaveTextContent('1 pending, 1 installed.');
    expect(within(panel()).getByText('3.0.13-1')).toBeInTheDocument();
  });

  it('says "not collected yet" for every collection the Engine has not got, and opens the tab in the URL', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/device/details/fresh-1': { body: bareDetails('fresh-1') },
      'GET /api/device/activity/fresh-1': { body: { activity: [] } },
    });
    renderPage('/devices/fresh-1/patches');
    await screen.findByRole('heading', { name: 'fresh-1' });
    expect(tab('Patches')).toHaveAttribute('aria-selected', 'true');
    expect(within(panel()).getByTestId('not-collected')).toHaveTextContent('Patch inventory not collected yet');
    for (const [name, text] of [
      ['Hardware', 'Hardware inventory'],
      ['Network', 'Network interfaces'],
      ['Software', 'Software inventory'],
      ['Services', 'Service inventory'],
      ['Processes', 'Process list'],
      ['Sessions', 'Sessions'],
    ]) {
      await user.click(tab(name));
      // Processes first asks the agent for a live list (404 here), then falls back to the inventory.
      expect(await within(panel()).findByTestId('not-collected')).toHaveTextContent(`${text} not collected yet`);
    }
    await user.click(tab('Summary'));
    expect(screen.getByRole('region', { name: 'Operating system' })).toHaveTextContent('Operating system details not collected yet');
    expect(screen.getByRole('region', { name: 'Live metrics' })).toHaveTextContent('No heartbeat metrics yet');
    await user.click(tab('Agent Health'));
    expect(panel()).toHaveTextContent('The agent has not reported role health yet.');
    await user.click(tab('Activity'));
    expect(await within(panel()).findByText('No activity recorded for this device yet.')).toBeInTheDocument();
  });

  it('groups the API WebSocket and VPN tunnel under Agent Connection only, and shows the startup timeline', async () => {
    fakeEngine({ 'GET /api/device/details/web-1': { body: fullDetails() } });
    renderPage('/devices/web-1/agent-health');
    await screen.findByRole('heading', { name: 'web-1' });
    const connection = screen.getByRole('region', { name: 'Agent Connection' });
    const connRows = within(connection).getAllByRole('row').slice(1);
    expect(connRows.map((r) => r.getAttribute('data-role-key'))).toEqual(['system:api_websocket', 'system:vpn_tunnel']);
    expect(connection).toHaveTextContent('100.64.0.7');
    expect(connection).toHaveTextContent('no handshake');
    // The group's chip shows its worst row.
    expect(within(connection).getAllByTestId('observed-chip')[0]).toHaveTextContent('Recovering');

    const roles = screen.getByRole('region', { name: 'Roles' });
    const keys = within(roles).getAllByRole('row').slice(1).map((r) => r.getAttribute('data-role-key'));
    expect(keys).toEqual(['system:current_user', 'system:device_audit']);
    expect(roles).not.toHaveTextContent('API WebSocket');
    expect(roles).not.toHaveTextContent('VPN tunnel');
    expect(roles).toHaveTextContent('no desktop session');

    const startup = screen.getByRole('region', { name: 'Startup timeline' });
    expect(within(startup).getByTestId('startup-timeline')).toHaveTextContent('boot-abc');
    const milestones = within(startup).getByRole('list', { name: 'Startup milestones' });
    expect(milestones).toHaveTextContent('config loaded');
    expect(milestones).toHaveTextContent('socket connected — route refresh');
  });

  it('quarantines after a confirmation that explains it', async () => {
    const user = userEvent.setup({ delay: null });
    let state = 'active';
    const engine = fakeEngine({
      'GET /api/device/details/web-1': () => ({ body: { ...fullDetails(), device: { ...fullDetails().device, trust_state: state } } }),
      'POST /api/devices/guid-web-1/quarantine': () => {
        state = 'quarantined';
        return { body: { guid: 'guid-web-1', trust_state: 'quarantined' } };
      },
    });
    renderPage();
    await screen.findByRole('heading', { name: 'web-1' });
    const actions = screen.getByRole('group', { name: 'Trust actions' });
    expect(within(actions).queryByRole('button', { name: 'Unquarantine…' })).not.toBeInTheDocument();
    await user.click(within(actions).getByRole('button', { name: 'Quarantine…' }));
    let dialog = await screen.findByRole('dialog', { name: 'Quarantine web-1?' });
    expect(dialog).toHaveTextContent('access tokens stop working at once');
    await user.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    expect(engine.callsTo('POST', '/api/devices/guid-web-1/quarantine')).toHaveLength(0);

    await user.click(within(actions).getByRole('button', { name: 'Quarantine…' }));
    dialog = await screen.findByRole('dialog', { name: 'Quarantine web-1?' });
    await user.click(within(dialog).getByRole('button', { name: 'Quarantine' }));
    expect(await screen.findByTestId('device-notice')).toHaveTextContent('web-1 is quarantined.');
    expect(engine.callsTo('POST', '/api/devices/guid-web-1/quarantine')).toHaveLength(1);
    expect(await screen.findByRole('button', { name: 'Unquarantine…' })).toBeInTheDocument();
    expect(screen.getAllByTestId('trust-badge')[0]).toHaveTextContent('Quarantined');
  });

  it('purges only after the hostname is typed, then returns to the list', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/devices/guid-web-1/purge': { body: { guid: 'guid-web-1', trust_state: 'purged' } },
    });
    renderPage();
    await screen.findByRole('heading', { name: 'web-1' });
    await user.click(screen.getByRole('button', { name: 'Purge…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Purge web-1?' });
    expect(dialog).toHaveTextContent('This cannot be undone');
    const confirm = within(dialog).getByRole('button', { name: 'Purge' });
    expect(confirm).toBeDisabled();
    await user.type(within(dialog).getByLabelText('Hostname to confirm'), 'web-2');
    expect(confirm).toBeDisabled();
    await user.type(within(dialog).getByLabelText('Hostname to confirm'), '{Enter}');
    expect(engine.callsTo('POST', '/api/devices/guid-web-1/purge')).toHaveLength(0);
    await user.clear(within(dialog).getByLabelText('Hostname to confirm'));
    await user.type(within(dialog).getByLabelText('Hostname to confirm'), 'web-1');
    expect(confirm).toBeEnabled();
    await user.click(confirm);
    expect(await screen.findByTestId('devices-list')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/devices/guid-web-1/purge')).toHaveLength(1);
  });

  it('shows a refused trust action in its dialog', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/devices/guid-web-1/revoke': { status: 403, body: { error: 'forbidden', message: 'administrators only' } },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Revoke…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Revoke web-1?' });
    await user.click(within(dialog).getByRole('button', { name: 'Revoke' }));
    expect(await within(dialog).findByText('administrators only')).toBeInTheDocument();
  });

  it('shows no trust actions to operators', async () => {
    fakeEngine({ 'GET /api/device/details/web-1': { body: fullDetails() } });
    renderPage('/devices/web-1', OPERATOR);
    await screen.findByRole('heading', { name: 'web-1' });
    expect(screen.queryByRole('group', { name: 'Trust actions' })).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Purge…' })).not.toBeInTheDocument();
  });

  it('edits the description and shows a field error', async () => {
    const user = userEvent.setup({ delay: null });
    let description = 'Front web server';
    const engine = fakeEngine({
      'GET /api/device/details/web-1': () => ({ body: { ...fullDetails(), device: { ...fullDetails().device, description } } }),
      'POST /api/device/description/web-1': [
        validationFailed({ description: 'must be at most 255 characters' }),
        { body: {} },
      ],
    });
    renderPage();
    await screen.findByRole('heading', { name: 'web-1' });
    await user.click(screen.getByRole('button', { name: 'Edit description' }));
    const input = screen.getByLabelText('Description');
    await user.clear(input);
    await user.type(input, 'Primary web server');
    await user.click(screen.getByRole('button', { name: 'Save' }));
    expect(await screen.findByText('must be at most 255 characters')).toHaveClass('Mui-error');
    description = 'Primary web server';
    await user.click(screen.getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(screen.getByTestId('device-description')).toHaveTextContent('Primary web server'));
    expect(engine.callsTo('POST', '/api/device/description/web-1')[1].body).toEqual({ description: 'Primary web server' });
  });

  it('lists activity and clears it after a confirmation', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'GET /api/device/activity/web-1': [
        {
          body: {
            activity: [
              { id: 7, kind: 'trust', summary: 'Quarantined', actor: 'admin', status: 'completed', created_at: '2026-11-21T08:00:00Z', finished_at: '2026-11-21T08:00:01Z', metadata: {} },
              { id: 8, kind: 'patch_install', summary: 'Install KB5030211', actor: null, status: 'running', created_at: '2026-11-21T09:00:00Z', finished_at: null, metadata: { scheduled_job_id: 3, scheduled_job_name: 'Patch Tuesday' } },
            ],
          },
        },
        { body: { activity: [] } },
      ],
      'DELETE /api/device/activity/web-1': { body: { cleared: 2 } },
    });
    renderPage('/devices/web-1/activity');
    expect(await within(await screen.findByRole('tabpanel')).findByText('Quarantined')).toBeInTheDocument();
    expect(within(panel()).getByText('Install KB5030211 (Patch Tuesday)')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Clear activity' }));
    const dialog = await screen.findByRole('dialog', { name: 'Clear the activity of web-1?' });
    expect(dialog).toHaveTextContent('All 2 entries');
    await user.click(within(dialog).getByRole('button', { name: 'Clear activity' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('DELETE', '/api/device/activity/web-1')).toHaveLength(1);
    expect(await within(panel()).findByText('No activity recorded for this device yet.')).toBeInTheDocument();
  });

  it('refetches when an event names this device, so the page updates live', async () => {
    let services: DeviceDetails['services'] = null;
    fakeEngine({ 'GET /api/device/details/web-1': () => ({ body: { ...bareDetails('web-1'), services } }) });
    const { queryClient } = renderPage('/devices/web-1/services');
    expect(await screen.findByTestId('not-collected')).toHaveTextContent('Service inventory not collected yet');
    services = [{ name: 'ssh.service', state: 'running', sub_state: 'running' }];
    act(() => invalidateForDeviceEvent(queryClient, { hostname: 'WEB-1' }));
    expect(await within(panel()).findByText('ssh.service')).toBeInTheDocument();
  });

  it('says so when the device does not exist or is out of scope', async () => {
    fakeEngine({});
    renderPage('/devices/ghost');
    expect(await screen.findByTestId('device-not-found')).toHaveTextContent('No device named ghost');
  });
});
