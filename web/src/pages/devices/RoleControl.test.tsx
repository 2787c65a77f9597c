import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router';
import type { DeviceDetails, RoleHealth } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import DevicePage from './DevicePage';
import { fullDetails, role } from './fixtures';

function renderPage(route: string) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user: ADMIN, signOut: async () => {} }}>
      <WithToasts>
        <Routes>
          <Route path="/devices/:hostname/:tab?" element={<DevicePage />} />
        </Routes>
      </WithToasts>
    </SessionContext.Provider>,
    { route },
  );
}

const toast = (title: string) =>
  screen.findByText(title, { selector: '[data-testid="toast"] h6' }).then((el) => el.closest('[data-testid="toast"]') as HTMLElement);
const rolesRegion = () => screen.getByRole('region', { name: 'Roles' });
const shellRow = () => rolesRegion().querySelector('[data-role-key="system:remote_shell"]') as HTMLElement;

afterEach(() => vi.unstubAllGlobals());

describe('Roles: stop and start', () => {
  it('stops and starts a role only after a confirmation, and shows its new state', async () => {
    const user = userEvent.setup({ delay: null });
    let shell: Partial<RoleHealth> = { desired: 'running', observed: 'Healthy' };
    const details = (): DeviceDetails => {
      const d = fullDetails();
      return { ...d, roles: [...(d.roles ?? []), role('system:remote_shell', shell)] };
    };
    const engine = fakeEngine({
      'GET /api/device/details/web-1': () => ({ body: details() }),
      'POST /api/device/roles/web-1/desired-state': (req) => {
        const desired = (req.body as { desired: string }).desired;
        shell = { desired, observed: desired === 'stopped' ? 'Stopped' : 'Healthy' };
        return { body: { role: 'remote_shell', ...shell } };
      },
    });
    renderPage('/devices/web-1/agent-health');
    await screen.findByRole('heading', { name: 'web-1' });
    await waitFor(() => expect(shellRow()).not.toBeNull());
    // Roles the agent cannot stop have no button; the connection group has none.
    expect(within(rolesRegion()).queryByRole('button', { name: 'Stop Device audit' })).not.toBeInTheDocument();
    expect(within(screen.getByRole('region', { name: 'Agent Connection' })).queryAllByRole('button')).toHaveLength(0);

    await user.click(within(shellRow()).getByRole('button', { name: 'Stop Remote shell' }));
    let dialog = await screen.findByRole('dialog', { name: 'Stop Remote shell?' });
    expect(dialog).toHaveTextContent('refuses every request of the Remote shell role');
    await user.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/device/roles/web-1/desired-state')).toHaveLength(0);

    await user.click(within(shellRow()).getByRole('button', { name: 'Stop Remote shell' }));
    dialog = await screen.findByRole('dialog', { name: 'Stop Remote shell?' });
    await user.click(within(dialog).getByRole('button', { name: 'Stop' }));
    await toast('Remote shell: stopped');
    expect(engine.callsTo('POST', '/api/device/roles/web-1/desired-state')[0].body).toEqual({ role: 'remote_shell', desired: 'stopped' });
    await waitFor(() => expect(within(shellRow()).getByTestId('observed-chip')).toHaveTextContent('Stopped'));
    expect(shellRow()).toHaveTextContent('stopped');

    await user.click(within(shellRow()).getByRole('button', { name: 'Start Remote shell' }));
    dialog = await screen.findByRole('dialog', { name: 'Start Remote shell?' });
    await user.click(within(dialog).getByRole('button', { name: 'Start' }));
    await toast('Remote shell: started');
    expect(engine.callsTo('POST', '/api/device/roles/web-1/desired-state')[1].body).toEqual({ role: 'remote_shell', desired: 'running' });
    await waitFor(() => expect(within(shellRow()).getByTestId('observed-chip')).toHaveTextContent('Healthy'));
  });

  it('keeps the agent\'s answer rather than reading a row the agent has not posted yet', async () => {
    const user = userEvent.setup({ delay: null });
    const d = fullDetails();
    // The stored row is still the old one when the answer arrives.
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: { ...d, roles: [...(d.roles ?? []), role('system:remote_shell', { desired: 'running', observed: 'Healthy' })] } },
      'POST /api/device/roles/web-1/desired-state': { body: { role: 'remote_shell', desired: 'stopped', observed: 'Stopped' } },
    });
    renderPage('/devices/web-1/agent-health');
    await screen.findByRole('heading', { name: 'web-1' });
    await waitFor(() => expect(shellRow()).not.toBeNull());
    const reads = engine.callsTo('GET', '/api/device/details/web-1').length;
    await user.click(within(shellRow()).getByRole('button', { name: 'Stop Remote shell' }));
    await user.click(within(await screen.findByRole('dialog', { name: 'Stop Remote shell?' })).getByRole('button', { name: 'Stop' }));
    await toast('Remote shell: stopped');
    expect(within(shellRow()).getByTestId('observed-chip')).toHaveTextContent('Stopped');
    expect(shellRow()).toHaveTextContent('stopped');
    expect(engine.callsTo('GET', '/api/device/details/web-1')).toHaveLength(reads);
  });

  it('tells a refusal the Engine answered', async () => {
    const user = userEvent.setup({ delay: null });
    const d = fullDetails();
    fakeEngine({
      'GET /api/device/details/web-1': { body: { ...d, roles: [...(d.roles ?? []), role('system:remote_shell')] } },
      'POST /api/device/roles/web-1/desired-state': { status: 409, body: { error: 'device_quarantined', message: 'quarantined' } },
    });
    renderPage('/devices/web-1/agent-health');
    await screen.findByRole('heading', { name: 'web-1' });
    await waitFor(() => expect(shellRow()).not.toBeNull());
    await user.click(within(shellRow()).getByRole('button', { name: 'Stop Remote shell' }));
    await user.click(within(await screen.findByRole('dialog', { name: 'Stop Remote shell?' })).getByRole('button', { name: 'Stop' }));
    expect(await toast('Device quarantined')).toHaveAttribute('data-variant', 'warning');
  });
});
