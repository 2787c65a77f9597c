import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine, type FakeReply } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import DevicePage from './DevicePage';
import { fullDetails } from './fixtures';

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

const panel = () => screen.getByRole('tabpanel');
const toast = (title: string) =>
  screen.findByText(title, { selector: '[data-testid="toast"] h6' }).then((el) => el.closest('[data-testid="toast"]') as HTMLElement);

/** A reply the test releases when it wants, to look at the page while an operation runs. */
function deferred() {
  let release!: (reply: FakeReply) => void;
  const promise = new Promise<FakeReply>((r) => (release = r));
  return { promise, release };
}

afterEach(() => vi.unstubAllGlobals());

describe('Services tab actions', () => {
  it('restarts a service only after a confirmation, shows progress on the row, then a toast', async () => {
    const user = userEvent.setup({ delay: null });
    const reply = deferred();
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/device/services/web-1/action': () => reply.promise,
    });
    renderPage('/devices/web-1/services');
    const restart = await within(await screen.findByRole('tabpanel')).findByRole('button', { name: 'Restart nginx.service' });
    expect(within(panel()).getByRole('button', { name: 'Start nginx.service' })).toBeDisabled();

    await user.click(restart);
    let dialog = await screen.findByRole('dialog', { name: 'Restart nginx.service?' });
    expect(dialog).toHaveTextContent('A high performance web server');
    await user.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/device/services/web-1/action')).toHaveLength(0);

    await user.click(within(panel()).getByRole('button', { name: 'Restart nginx.service' }));
    dialog = await screen.findByRole('dialog', { name: 'Restart nginx.service?' });
    await user.click(within(dialog).getByRole('button', { name: 'Restart' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device/services/web-1/action')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/device/services/web-1/action')[0].body).toEqual({ name: 'nginx.service', action: 'restart' });

    const row = within(panel()).getByRole('group', { name: 'Actions for nginx.service' });
    expect(within(row).getByRole('button', { name: 'Restart nginx.service' })).toHaveTextContent('Restarting…');
    for (const b of within(row).getAllByRole('button')) expect(b).toBeDisabled();
    // Another row stays usable.
    expect(within(panel()).getByRole('button', { name: 'Restart cron.service' })).toBeEnabled();

    const detailsBefore = engine.callsTo('GET', '/api/device/details/web-1').length;
    reply.release({ body: { name: 'nginx.service', state: 'running' } });
    const done = await toast('nginx.service: running');
    expect(done).toHaveAttribute('data-variant', 'info');
    expect(within(done).getByTestId('toast-message')).toHaveTextContent('Restarted on web-1.');
    await waitFor(() => expect(engine.callsTo('GET', '/api/device/details/web-1').length).toBeGreaterThan(detailsBefore));
    await waitFor(() => expect(within(panel()).getByRole('button', { name: 'Restart nginx.service' })).toHaveTextContent(/^Restart$/));
  });

  it('shows the Engine message of a failed action as an error toast', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/device/services/web-1/action': {
        status: 502,
        body: { error: 'failed', message: 'Job for cron.service failed because the control process exited with error code.' },
      },
    });
    renderPage('/devices/web-1/services');
    await user.click(await within(await screen.findByRole('tabpanel')).findByRole('button', { name: 'Start cron.service' }));
    await user.click(within(await screen.findByRole('dialog', { name: 'Start cron.service?' })).getByRole('button', { name: 'Start' }));
    const failed = await toast('Start cron.service failed');
    expect(failed).toHaveAttribute('data-variant', 'error');
    expect(failed).toHaveTextContent('the control process exited with error code');
  });

  it.each([
    ['device_quarantined', 409, 'Device quarantined', 'unquarantine'],
    ['device_revoked', 409, 'Device revoked', 'enroll again'],
    ['agent_socket_missing', 503, 'Agent not connected', 'not connected to the Engine'],
  ])('tells a %s refusal as a warning in plain words', async (code, status, title, words) => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/device/services/web-1/action': { status, body: { error: code, message: code } },
    });
    renderPage('/devices/web-1/services');
    await user.click(await within(await screen.findByRole('tabpanel')).findByRole('button', { name: 'Stop nginx.service' }));
    await user.click(within(await screen.findByRole('dialog', { name: 'Stop nginx.service?' })).getByRole('button', { name: 'Stop' }));
    const warning = await toast(title);
    expect(warning).toHaveAttribute('data-variant', 'warning');
    expect(warning).toHaveTextContent(words);
  });
});
