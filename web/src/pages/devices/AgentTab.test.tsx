import { afterEach, describe, expect, it, vi } from 'vitest';
import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router';
import type { AgentUpdateOperation } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import { AGENT_UPDATE_ACTIVE_POLL_MS } from './AgentTab';
import DevicePage from './DevicePage';
import { fullDetails } from './fixtures';
import { invalidateForDeviceEvent } from './queries';

function op(id: string, extra: Partial<AgentUpdateOperation> = {}): AgentUpdateOperation {
  return {
    operation_id: id,
    status: 'succeeded',
    phase: 'completed',
    started_at: '2026-11-21T08:00:00Z',
    reason: 'operator',
    requested_by: 'admin',
    from_build_id: 'v0.4.0-1-gaaaa',
    to_build_id: 'v0.4.1-0-gbbbb',
    artifact_id: 'linux-amd64-0123456789abcdef',
    run_id: 'run-1',
    scheduled_job_id: null,
    failure_summary: '',
    created_at: '2026-11-21T08:00:00Z',
    finished_at: '2026-11-21T08:01:00Z',
    events: [
      { phase: 'accepted', percent: 0, message: 'update accepted', captured_at: '2026-11-21T08:00:01Z', received_at: '2026-11-21T08:00:01Z' },
      { phase: 'downloading', percent: 100, message: '12 MiB', captured_at: '2026-11-21T08:00:05Z', received_at: '2026-11-21T08:00:05Z' },
      { phase: 'completed', percent: 0, message: 'checked in on the new build', captured_at: '2026-11-21T08:00:40Z', received_at: '2026-11-21T08:00:40Z' },
    ],
    ...extra,
  };
}

const FAILED = op('op-0', {
  status: 'rolled_back',
  reason: 'hourly',
  requested_by: '',
  created_at: '2026-11-20T08:00:00Z',
  failure_summary: 'the new agent did not check in within 5 minutes; the previous binary was restored',
  events: [{ phase: 'rolled_back', percent: 0, message: 'restored previous binary', captured_at: '2026-11-20T08:06:00Z', received_at: '2026-11-20T08:06:00Z' }],
});

function renderPage() {
  return renderWithProviders(
    <SessionContext.Provider value={{ user: ADMIN, signOut: async () => {} }}>
      <WithToasts>
        <Routes>
          <Route path="/devices/:hostname/:tab?" element={<DevicePage />} />
        </Routes>
      </WithToasts>
    </SessionContext.Provider>,
    { route: '/devices/web-1/agent' },
  );
}

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('Agent tab', () => {
  it('shows the installed build and each update with its build transition, timeline and failure summary', async () => {
    const user = userEvent.setup({ delay: null });
    const details = fullDetails();
    details.device.agent_build_id = 'v0.4.1-0-gbbbb';
    details.device.capabilities = ['processes', 'files', 'shell'];
    fakeEngine({
      'GET /api/device/details/web-1': { body: details },
      'GET /api/devices/guid-web-1/agent-updates': { body: { active: null, history: [op('op-1'), FAILED] } },
    });
    renderPage();
    const panel = await screen.findByRole('tabpanel');
    expect(screen.getByRole('tab', { name: 'Agent', selected: true })).toBeInTheDocument();
    const build = await within(panel).findByRole('region', { name: 'Agent build' });
    expect(build).toHaveTextContent('Installed buildv0.4.1-0-gbbbb');
    expect(build).toHaveTextContent('None running');
    expect(within(build).getByTestId('agent-capabilities')).toHaveTextContent('processes, files, shell');

    const ops = await within(panel).findAllByTestId('update-operation');
    expect(ops).toHaveLength(2);
    expect(within(ops[0]).getByTestId('build-transition')).toHaveTextContent('v0.4.0-1-gaaaa → v0.4.1-0-gbbbb');
    expect(within(ops[0]).getByTestId('run-status')).toHaveTextContent('Succeeded');
    await user.click(within(ops[0]).getByText('v0.4.0-1-gaaaa'));
    const timeline = await within(ops[0]).findByTestId('update-timeline');
    expect(timeline).toHaveTextContent('Accepted');
    expect(timeline).toHaveTextContent('Downloading 100%');
    expect(timeline).toHaveTextContent('checked in on the new build');

    expect(within(ops[1]).getByTestId('run-status')).toHaveTextContent('Rolled back');
    expect(ops[1]).toHaveTextContent('Hourly check');
    expect(within(ops[1]).getByTestId('failure-summary')).toHaveTextContent('the previous binary was restored');
  });

  it('updates now after a confirmation and refetches the history', async () => {
    const user = userEvent.setup({ delay: null });
    let answer: { active: AgentUpdateOperation | null; history: AgentUpdateOperation[] } = { active: null, history: [] };
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'GET /api/devices/guid-web-1/agent-updates': () => ({ body: answer }),
      'POST /api/device/update-agent/web-1': () => {
        answer = { active: op('op-2', { status: 'queued', finished_at: null, events: [] }), history: [] };
        return { status: 202, body: { run_id: 'run-2', operation_id: 'op-2' } };
      },
    });
    renderPage();
    expect(await screen.findByTestId('no-updates')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Update now' }));
    const dialog = await screen.findByRole('dialog', { name: 'Update the agent on web-1?' });
    await user.click(within(dialog).getByRole('button', { name: 'Update now' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device/update-agent/web-1')).toHaveLength(1));
    expect(await screen.findByText('Updating the agent on web-1')).toBeInTheDocument();
    const active = await screen.findByTestId('active-update');
    expect(within(active).getByTestId('run-status')).toHaveTextContent('Queued');
    expect(screen.getByRole('button', { name: 'Update now' })).toBeDisabled();
  });

  it('says why an update could not start', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'GET /api/devices/guid-web-1/agent-updates': { body: { active: null, history: [] } },
      'POST /api/device/update-agent/web-1': { status: 409, body: { error: 'update_in_progress', message: 'an update is already running on web-1' } },
    });
    renderPage();
    await screen.findByTestId('no-updates');
    await user.click(screen.getByRole('button', { name: 'Update now' }));
    await user.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Update now' }));
    expect(await screen.findByText('an update is already running on web-1')).toBeInTheDocument();
  });

  it('refetches on agent_update_progress_changed, and polls while an update is active', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true, toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    let events = [op('op-3').events![0]];
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'GET /api/devices/guid-web-1/agent-updates': () => ({
        body: { active: op('op-3', { status: 'running', finished_at: null, events }), history: [] },
      }),
    });
    const { queryClient } = renderPage();
    const active = await screen.findByTestId('active-update');
    expect(within(active).getByTestId('update-timeline')).toHaveTextContent('Accepted');
    expect(within(active).getByTestId('update-timeline')).not.toHaveTextContent('Downloading');

    events = [...events, { phase: 'downloading', percent: 40, message: '5 MiB of 12 MiB', captured_at: '2026-11-21T08:00:03Z', received_at: '2026-11-21T08:00:03Z' }];
    act(() => invalidateForDeviceEvent(queryClient, { guid: 'guid-web-1', operation_id: 'op-3', status: 'running', phase: 'downloading' }));
    await waitFor(() => expect(within(screen.getByTestId('active-update')).getByTestId('update-timeline')).toHaveTextContent('Downloading 40%'));
    expect(within(screen.getByTestId('active-update')).getByRole('progressbar', { name: 'Download progress' })).toHaveAttribute('aria-valuenow', '40');

    const before = engine.callsTo('GET', '/api/devices/guid-web-1/agent-updates').length;
    await act(() => vi.advanceTimersByTimeAsync(AGENT_UPDATE_ACTIVE_POLL_MS));
    await waitFor(() => expect(engine.callsTo('GET', '/api/devices/guid-web-1/agent-updates').length).toBeGreaterThan(before));
  });
});
