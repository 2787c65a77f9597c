import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router';
import type { DeviceDetails } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine, type FakeReply } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import DevicePage from './DevicePage';
import { bareDetails, fullDetails } from './fixtures';

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

const SNAPSHOT = {
  captured_at: '2026-11-21T08:05:00Z',
  processes: [
    { pid: 4242, name: 'nginx', user: 'www-data', cpu_percent: 1.5, memory_bytes: 12 * 1024 ** 2, command_line: 'nginx: worker process' },
    { pid: 777, name: 'sshd', user: 'root', cpu_percent: 0.1, memory_bytes: 4 * 1024 ** 2, command_line: '/usr/sbin/sshd -D' },
  ],
};

describe('Processes tab', () => {
  it('loads a snapshot at most a minute old and refreshes with a fresh one', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'GET /api/device/processes/web-1': (call) => ({
        body: call.query.get('max_age_seconds') === '0' ? { ...SNAPSHOT, captured_at: '2026-11-21T08:09:00Z' } : SNAPSHOT,
      }),
    });
    renderPage('/devices/web-1/processes');
    expect(await within(await screen.findByRole('tabpanel')).findByText('/usr/sbin/sshd -D')).toBeInTheDocument();
    const asOf = screen.getByTestId('processes-as-of');
    expect(asOf).toHaveTextContent(/^As of /);
    const first = asOf.textContent;
    expect(engine.callsTo('GET', '/api/device/processes/web-1').map((c) => c.query.get('max_age_seconds'))).toEqual(['60']);

    await user.click(within(panel()).getByRole('button', { name: 'Refresh processes' }));
    await waitFor(() => expect(screen.getByTestId('processes-as-of').textContent).not.toBe(first));
    expect(engine.callsTo('GET', '/api/device/processes/web-1').map((c) => c.query.get('max_age_seconds'))).toEqual(['60', '0']);
  });

  it('terminates a process after a confirmation naming it and its PID, then refetches', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'GET /api/device/processes/web-1': { body: SNAPSHOT },
      'POST /api/device/processes/web-1/terminate': { body: { terminated: true } },
    });
    renderPage('/devices/web-1/processes');
    const button = await within(await screen.findByRole('tabpanel')).findByRole('button', { name: 'Terminate sshd (PID 777)' });
    await user.click(button);
    let dialog = await screen.findByRole('dialog', { name: 'Terminate sshd (PID 777)?' });
    await user.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    expect(engine.callsTo('POST', '/api/device/processes/web-1/terminate')).toHaveLength(0);

    await user.click(within(panel()).getByRole('button', { name: 'Terminate sshd (PID 777)' }));
    dialog = await screen.findByRole('dialog', { name: 'Terminate sshd (PID 777)?' });
    expect(dialog).toHaveTextContent('user root');
    await user.click(within(dialog).getByRole('button', { name: 'Terminate' }));
    const done = await toast('sshd terminated');
    expect(done).toHaveTextContent('PID 777 on web-1 has ended.');
    expect(engine.callsTo('POST', '/api/device/processes/web-1/terminate')[0].body).toEqual({ pid: 777, name: 'sshd' });
    await waitFor(() =>
      expect(engine.callsTo('GET', '/api/device/processes/web-1').map((c) => c.query.get('max_age_seconds'))).toEqual(['60', '0']),
    );
  });

  it('says plainly when the PID now belongs to another program', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'GET /api/device/processes/web-1': { body: SNAPSHOT },
      'POST /api/device/processes/web-1/terminate': {
        status: 409,
        body: { error: 'process_mismatch', message: 'pid 4242 is "bash", not "nginx"' },
      },
    });
    renderPage('/devices/web-1/processes');
    await user.click(await within(await screen.findByRole('tabpanel')).findByRole('button', { name: 'Terminate nginx (PID 4242)' }));
    await user.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Terminate' }));
    const failed = await toast('Terminate nginx (PID 4242) failed');
    expect(failed).toHaveAttribute('data-variant', 'error');
    expect(failed).toHaveTextContent('The PID now belongs to another program; refresh');
  });

  it('falls back to the inventory list when the agent cannot answer', async () => {
    fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'GET /api/device/processes/web-1': { status: 503, body: { error: 'agent_socket_missing', message: 'the agent is not connected' } },
    });
    renderPage('/devices/web-1/processes');
    expect(await screen.findByTestId('processes-live-error')).toHaveTextContent('the agent is not connected');
    expect(screen.getByTestId('processes-as-of')).toHaveTextContent('From the last inventory');
    expect(await within(panel()).findByText('nginx: worker process')).toBeInTheDocument();
  });
});

describe('Software and patch refresh', () => {
  it('refreshes the software inventory, even before one was collected, and refetches the details', async () => {
    const user = userEvent.setup({ delay: null });
    let software: DeviceDetails['software'] = null;
    const engine = fakeEngine({
      'GET /api/device/details/web-1': () => ({ body: { ...bareDetails('web-1'), software } }),
      'POST /api/device/software/web-1/refresh': () => {
        software = [{ name: 'curl', version: '7.88.1', source: 'dpkg' }];
        return { body: { software_count: 1, collected_at: '2026-11-21T08:10:00Z' } };
      },
    });
    renderPage('/devices/web-1/software');
    expect(await within(await screen.findByRole('tabpanel')).findByTestId('not-collected')).toBeInTheDocument();
    await user.click(within(panel()).getByRole('button', { name: 'Refresh software' }));
    const done = await toast('Software inventory refreshed');
    expect(done).toHaveTextContent('1 package on web-1, collected');
    expect(await within(panel()).findByText('curl')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/device/software/web-1/refresh')).toHaveLength(1);
  });

  it('refreshes patches and warns when the agent is not connected', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/device/patches/web-1/refresh': [
        { status: 409, body: { error: 'agent_socket_missing', message: 'no socket' } },
        { body: { patch_count: 2, collected_at: '2026-11-21T08:10:00Z' } },
      ],
    });
    renderPage('/devices/web-1/patches');
    const refresh = await within(await screen.findByRole('tabpanel')).findByRole('button', { name: 'Refresh patches' });
    await user.click(refresh);
    expect(await toast('Agent not connected')).toHaveAttribute('data-variant', 'warning');
    await waitFor(() => expect(refresh).toBeEnabled());
    await user.click(refresh);
    expect(await toast('Patch inventory refreshed')).toHaveTextContent('2 patches on web-1');
    expect(engine.callsTo('POST', '/api/device/patches/web-1/refresh')).toHaveLength(2);
  });
});

describe('Software uninstall', () => {
  it('uninstalls a row only after a confirmation, follows the run, then tells how it ended', async () => {
    const user = userEvent.setup({ delay: null });
    const run = (status: string, extra: Record<string, unknown> = {}) => ({
      body: { run_id: 'run-1', kind: 'software_uninstall', status, results: [{ guid: 'g', hostname: 'web-1', status, ...extra }] },
    });
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/device/software/web-1/uninstall': [
        { status: 202, body: { run_id: 'run-1', url: '/api/scripts/quick_run/run-1', name: 'nginx', version: '1.22.1-9', override: false, language: 'sh' } },
        { status: 409, body: { error: 'uninstall_blocked', message: 'uninstalling nginx is blocked: the site needs it' } },
      ],
      'GET /api/scripts/quick_run/run-1': [run('running'), run('succeeded')],
    });
    renderPage('/devices/web-1/software');
    const button = await within(await screen.findByRole('tabpanel')).findByRole('button', { name: 'Uninstall nginx 1.22.1-9' });

    await user.click(button);
    let dialog = await screen.findByRole('dialog', { name: 'Uninstall nginx?' });
    expect(dialog).toHaveTextContent('nginx 1.22.1-9 will be removed from web-1');
    await user.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/device/software/web-1/uninstall')).toHaveLength(0);

    await user.click(within(panel()).getByRole('button', { name: 'Uninstall nginx 1.22.1-9' }));
    dialog = await screen.findByRole('dialog', { name: 'Uninstall nginx?' });
    await user.click(within(dialog).getByRole('button', { name: 'Uninstall' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device/software/web-1/uninstall')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/device/software/web-1/uninstall')[0].body).toEqual({ name: 'nginx', version: '1.22.1-9' });
    expect(within(panel()).getByRole('button', { name: 'Uninstall nginx 1.22.1-9' })).toHaveTextContent('Uninstalling…');
    const done = await toast('nginx uninstalled');
    expect(done).toHaveTextContent('Removed from web-1');
    expect(engine.callsTo('GET', '/api/scripts/quick_run/run-1').length).toBeGreaterThanOrEqual(2);

    await user.click(within(panel()).getByRole('button', { name: 'Uninstall nginx 1.22.1-9' }));
    dialog = await screen.findByRole('dialog', { name: 'Uninstall nginx?' });
    await user.click(within(dialog).getByRole('button', { name: 'Uninstall' }));
    expect(await toast('Uninstall nginx failed')).toHaveTextContent('blocked: the site needs it');
  });
});
