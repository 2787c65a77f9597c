import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router';
import { SessionContext } from '../../auth/session';
import { fill } from '../../test/codeEditor';
import { ADMIN, fakeEngine } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import { device } from '../devices/fixtures';
import AutomationPage from './AutomationPage';
import { assembly, result, run, workflow } from './fixtures';

const ASSEMBLIES = [assembly(1, 'Collect logs'), assembly(2, 'Clean tmp', { parameters: [{ name: 'days', label: 'Days', type: 'number', default: 7, required: true }] })];

function renderPage() {
  return renderWithProviders(
    <SessionContext.Provider value={{ user: ADMIN, signOut: async () => {} }}>
      <WithToasts>
        <Routes>
          <Route path="/automation/:tab?" element={<AutomationPage />} />
        </Routes>
      </WithToasts>
    </SessionContext.Provider>,
    { route: '/automation/workflows' },
  );
}

afterEach(() => vi.unstubAllGlobals());

describe('Workflows', () => {
  it('creates a workflow from steps with an assembly, a condition and a timeout', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/workflows': { body: { workflows: [] } },
      'GET /api/assemblies': { body: { assemblies: ASSEMBLIES } },
      'POST /api/workflows': { status: 201, body: workflow(3, 'Tidy') },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'New workflow' }));
    const dialog = await screen.findByRole('dialog', { name: 'New workflow' });
    await user.click(within(dialog).getByRole('button', { name: 'Create workflow' }));
    expect(within(dialog).getByRole('textbox', { name: 'Name' })).toHaveAccessibleDescription('Enter a name.');
    expect(within(dialog).getByRole('combobox', { name: 'Assembly of step 1' })).toHaveAccessibleDescription('Pick an assembly.');

    await fill(user, within(dialog).getByRole('textbox', { name: 'Name' }), 'Tidy');
    await user.click(within(dialog).getByRole('combobox', { name: 'Assembly of step 1' }));
    await user.click(await screen.findByRole('option', { name: /Collect logs/ }));
    await user.click(within(dialog).getByRole('button', { name: 'Add step' }));
    const step2 = within(dialog).getByRole('region', { name: 'Step 2' });
    await user.click(within(step2).getByRole('combobox', { name: 'Assembly of step 2' }));
    await user.click(await screen.findByRole('option', { name: /Clean tmp/ }));
    expect(within(step2).getByRole('spinbutton', { name: 'Days' })).toHaveValue(7);
    await user.click(within(step2).getByRole('combobox', { name: 'Runs' }));
    await user.click(await screen.findByRole('option', { name: 'When the previous step failed' }));
    await fill(user, within(step2).getByRole('spinbutton', { name: 'Timeout (s)' }), '90');

    await user.click(within(dialog).getByRole('button', { name: 'Create workflow' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/workflows')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/workflows')[0].body).toEqual({
      name: 'Tidy',
      description: '',
      steps: [
        // A freshly picked assembly runs its current version (the Engine pins it on save).
        { id: 's1', name: 'Step 1', assembly_id: 1, assembly_version: 0, assembly_sha256: '', parameters: {}, condition: 'always', timeout_seconds: 300 },
        { id: 's2', name: 'Step 2', assembly_id: 2, assembly_version: 0, assembly_sha256: '', parameters: { days: 7 }, condition: 'on_failure', timeout_seconds: 90 },
      ],
    });
  });

  it('starts a workflow on devices and follows its steps to each step’s results', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/workflows': { body: { workflows: [workflow(3, 'Tidy')] } },
      'GET /api/devices': { body: { devices: [device('web-1')] } },
      'POST /api/workflows/3/start': { status: 202, body: { run_id: 'wr-1' } },
      'GET /api/workflows/runs/wr-1': {
        body: {
          run_id: 'wr-1',
          workflow_id: 3,
          status: 'failed',
          steps: [
            { step_id: 's1', status: 'failed', run_id: 'step-1' },
            { step_id: 's2', status: 'skipped', run_id: null },
          ],
        },
      },
      'GET /api/scripts/quick_run/step-1': { body: run('step-1', [result('web-1', { status: 'failed', exit_code: 3, stderr: 'no logs' })]) },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Start Tidy' }));
    const dialog = await screen.findByRole('dialog', { name: 'Start Tidy' });
    await user.click(within(dialog).getByRole('combobox', { name: 'Devices' }));
    await user.click(await screen.findByRole('option', { name: /web-1/ }));
    await user.click(within(dialog).getByRole('button', { name: 'Start' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/workflows/3/start')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/workflows/3/start')[0].body).toEqual({ device_guids: ['guid-web-1'] });

    const view = await screen.findByTestId('workflow-run');
    await waitFor(() => expect(within(view).getByLabelText('Workflow run: Failed')).toBeInTheDocument());
    expect(within(view).getByLabelText('Clean up: Skipped')).toBeInTheDocument();
    await user.click(within(view).getByRole('button', { name: 'Step 1: Collect' }));
    await waitFor(() => expect(within(view).getByTestId('stderr')).toHaveTextContent('no logs'));
    expect(within(view).getByTestId('exit-code')).toHaveTextContent('Exit code: 3');
  });

  it('manages a workflow’s webhooks: the secret once, copy the URL, rotate with confirmation, delete', async () => {
    const user = userEvent.setup({ delay: null });
    const writeText = vi.fn(async () => {});
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    const hook = {
      id: 'wh_1',
      workflow_id: 3,
      name: 'psa',
      path: '/api/workflows/webhooks/wh_1',
      device_guids: [],
      rate_limit_per_minute: 30,
      site_scope: null,
      created_by: 'admin',
      created_at: '2026-11-29T09:00:00Z',
      rotated_at: null,
      last_triggered_at: null,
    };
    const engine = fakeEngine({
      'GET /api/workflows': { body: { workflows: [workflow(3, 'Tidy')] } },
      'GET /api/workflows/3/webhooks': [{ body: { webhooks: [] } }, { body: { webhooks: [hook] } }],
      'POST /api/workflows/3/webhooks': { status: 201, body: { ...hook, secret: 'c2VjcmV0LW9uZQ==' } },
      'POST /api/workflows/3/webhooks/wh_1/rotate': { body: { ...hook, secret: 'c2VjcmV0LXR3bw==' } },
      'DELETE /api/workflows/3/webhooks/wh_1': { status: 204 },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Webhooks of Tidy' }));
    const dialog = await screen.findByRole('dialog', { name: 'Webhooks of Tidy' });
    await within(dialog).findByText('No webhooks yet.');
    await fill(user, within(dialog).getByRole('textbox', { name: 'Name' }), 'psa');
    await fill(user, within(dialog).getByRole('spinbutton', { name: 'Requests per minute' }), '30');
    await user.click(within(dialog).getByRole('button', { name: 'Create webhook' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/workflows/3/webhooks')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/workflows/3/webhooks')[0].body).toEqual({ name: 'psa', device_guids: [], rate_limit_per_minute: 30 });
    expect(await within(dialog).findByRole('textbox', { name: 'Webhook secret' })).toHaveValue('c2VjcmV0LW9uZQ==');

    await user.click(await within(dialog).findByRole('button', { name: 'Copy URL of psa' }));
    expect(writeText).toHaveBeenCalledWith(`${window.location.origin}/api/workflows/webhooks/wh_1`);

    // Closing the notice hides the secret for good: the list never carries it.
    await user.click(within(screen.getByTestId('webhook-secret')).getByRole('button', { name: 'Close' }));
    expect(within(dialog).queryByRole('textbox', { name: 'Webhook secret' })).not.toBeInTheDocument();

    await user.click(within(dialog).getByRole('button', { name: 'Rotate secret of psa' }));
    const confirmRotate = await screen.findByRole('dialog', { name: 'Rotate the secret of psa?' });
    await user.click(within(confirmRotate).getByRole('button', { name: 'Rotate' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/workflows/3/webhooks/wh_1/rotate')).toHaveLength(1));
    expect(await within(dialog).findByRole('textbox', { name: 'Webhook secret' })).toHaveValue('c2VjcmV0LXR3bw==');

    await user.click(within(dialog).getByRole('button', { name: 'Delete psa' }));
    const confirmDelete = await screen.findByRole('dialog', { name: 'Delete psa?' });
    await user.click(within(confirmDelete).getByRole('button', { name: 'Delete' }));
    await waitFor(() => expect(engine.callsTo('DELETE', '/api/workflows/3/webhooks/wh_1')).toHaveLength(1));
  });
});
