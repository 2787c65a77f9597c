import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine } from '../../test/fakeEngine';
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

const job = (status: string, extra: Record<string, unknown> = {}) => ({
  id: 'job-1',
  device_guid: 'guid-web-1',
  site_id: 1,
  operation_id: 'op-1',
  status,
  reason: 'stale agent',
  last_error: '',
  requested_by: 'admin',
  retry_of: null,
  expires_at: '2026-11-29T11:00:00Z',
  created_at: '2026-11-29T10:00:00Z',
  updated_at: '2026-11-29T10:00:00Z',
  finished_at: null,
  ...extra,
});

afterEach(() => vi.unstubAllGlobals());

describe('Redeploy', () => {
  it('redeploys the agent after a confirmation and follows the job until the device enrolled again', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/onboarding/jobs': { status: 202, body: { ...job('pending'), enrollment_code: 'ONE-TIME-CODE' } },
      'GET /api/onboarding/jobs/job-1': [{ body: job('sent') }, { body: job('enrolled', { finished_at: '2026-11-29T10:01:00Z' }) }],
    });
    renderPage('/devices/web-1');
    await screen.findByRole('heading', { name: 'web-1' });
    await user.click(screen.getByRole('button', { name: 'Redeploy agent…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Redeploy the agent of web-1?' });
    expect(engine.callsTo('POST', '/api/onboarding/jobs')).toHaveLength(0);
    await user.type(within(dialog).getByRole('textbox', { name: 'Reason (optional)' }), 'stale agent');
    await user.click(within(dialog).getByRole('button', { name: 'Redeploy' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/onboarding/jobs')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/onboarding/jobs')[0].body).toEqual({ device_guid: 'guid-web-1', reason: 'stale agent' });
    expect(await within(dialog).findByRole('textbox', { name: 'One-time enrollment code' })).toHaveValue('ONE-TIME-CODE');
    await waitFor(() => expect(within(dialog).getByTestId('redeploy-status')).toHaveTextContent('enrolled again'), { timeout: 10000 });
    expect(within(dialog).queryByRole('textbox', { name: 'One-time enrollment code' })).not.toBeInTheDocument();
  });

  it('cancels a redeploy that waits for an offline agent', async () => {
    const user = userEvent.setup({ delay: null });
    let canceled = false;
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      'POST /api/onboarding/jobs': { status: 202, body: { ...job('pending'), enrollment_code: 'ONE-TIME-CODE' } },
      'GET /api/onboarding/jobs/job-1': () => ({ body: canceled ? job('canceled', { finished_at: '2026-11-29T10:01:00Z' }) : job('agent_offline') }),
      'POST /api/onboarding/jobs/job-1/cancel': () => {
        canceled = true;
        return { status: 202, body: job('agent_offline') };
      },
    });
    renderPage('/devices/web-1');
    await screen.findByRole('heading', { name: 'web-1' });
    await user.click(screen.getByRole('button', { name: 'Redeploy agent…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Redeploy the agent of web-1?' });
    await user.click(within(dialog).getByRole('button', { name: 'Redeploy' }));
    await waitFor(() => expect(within(dialog).getByTestId('redeploy-status')).toHaveTextContent('not connected'));
    await user.click(within(dialog).getByRole('button', { name: 'Cancel redeploy' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/onboarding/jobs/job-1/cancel')).toHaveLength(1));
    await waitFor(() => expect(within(dialog).getByTestId('redeploy-status')).toHaveTextContent('canceled'));
  });
});
