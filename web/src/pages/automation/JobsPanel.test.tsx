import { wireSite } from '../../test/wire';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router';
import type { Site } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { fill } from '../../test/codeEditor';
import { ADMIN, fakeEngine, validationFailed } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import { device } from '../devices/fixtures';
import AutomationPage from './AutomationPage';
import { assembly, job, result, run, workflow } from './fixtures';

const SITES: Site[] = [wireSite({ site_id: 4, name: 'Lab', site_worker_slug: 'lab', site_worker_name: 'site:lab', device_count: 1, created_at: '2026-11-21T08:00:00Z' })];
const DEVICES = [device('web-1'), device('db-1')];
const NEXT = ['2099-01-01T00:05:00Z', '2099-01-01T00:10:00Z', '2099-01-01T00:15:00Z', '2099-01-01T00:20:00Z', '2099-01-01T00:25:00Z'];

function renderPage() {
  return renderWithProviders(
    <SessionContext.Provider value={{ user: ADMIN, signOut: async () => {} }}>
      <WithToasts>
        <Routes>
          <Route path="/automation/:tab?" element={<AutomationPage />} />
        </Routes>
      </WithToasts>
    </SessionContext.Provider>,
    { route: '/automation/jobs' },
  );
}

const rowOf = (text: string) => screen.getByText(text).closest('.ag-row') as HTMLElement;

afterEach(() => vi.unstubAllGlobals());

describe('Scheduled jobs', () => {
  it('shows each job with its schedule in words, targets, next and last run', async () => {
    fakeEngine({
      'GET /api/scheduled_jobs': {
        body: {
          jobs: [
            job(1, 'Disk check', {
              targets: { devices: ['guid-web-1', 'guid-db-1'], sites: [4], filters: [] },
              last_run: { run_id: 'r1', status: 'failed', started_at: '2026-11-21T08:00:00Z', finished_at: '2026-11-21T08:00:05Z' },
            }),
            job(2, 'Agent refresh', { kind: 'agent_maintenance', assembly_id: null, assembly_name: '', schedule: { type: 'interval', every_seconds: 7200 }, enabled: false }),
            job(3, 'Disk care weekly', { kind: 'workflow', assembly_id: null, assembly_name: '', workflow_id: 2, schedule: { type: 'manual' }, next_run_at: null }),
          ],
        },
      },
      'GET /api/workflows': { body: { workflows: [workflow(2, 'Disk care')] } },
    });
    renderPage();
    await screen.findByText('Disk check');
    const disk = rowOf('Disk check');
    expect(within(disk).getByText('Every 5 minutes (Europe/Berlin)')).toBeInTheDocument();
    expect(within(disk).getByText('2 devices, 1 site')).toBeInTheDocument();
    expect(within(disk).getByText('Script: Disk report')).toBeInTheDocument();
    expect(within(disk).getByTestId('run-status')).toHaveTextContent('Failed');
    expect(within(disk).getByText(/^in /)).toBeInTheDocument();
    expect(within(disk).getByRole('switch', { name: 'Enable Disk check' })).toBeChecked();
    const agent = rowOf('Agent refresh');
    expect(within(agent).getByText('Every 2 hours')).toBeInTheDocument();
    expect(within(agent).getByText('Never')).toBeInTheDocument();
    expect(within(agent).getByRole('switch', { name: 'Enable Agent refresh' })).not.toBeChecked();
    expect(within(agent).getByText('Agent update')).toBeInTheDocument();
    await waitFor(() => expect(within(rowOf('Disk care weekly')).getByText('Workflow: Disk care')).toBeInTheDocument());
    expect(within(rowOf('Disk care weekly')).getByText('Manually')).toBeInTheDocument();
  });

  it('toggles a job and shows the answer', async () => {
    const user = userEvent.setup({ delay: null });
    let enabled = true;
    const engine = fakeEngine({
      'GET /api/scheduled_jobs': () => ({ body: { jobs: [job(1, 'Disk check', { enabled })] } }),
      'POST /api/scheduled_jobs/1/toggle': (call) => {
        enabled = (call.body as { enabled: boolean }).enabled;
        return { body: job(1, 'Disk check', { enabled, next_run_at: null }) };
      },
    });
    renderPage();
    const toggle = await screen.findByRole('switch', { name: 'Enable Disk check' });
    await user.click(toggle);
    await waitFor(() => expect(engine.callsTo('POST', '/api/scheduled_jobs/1/toggle')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/scheduled_jobs/1/toggle')[0].body).toEqual({ enabled: false });
    await waitFor(() => expect(screen.getByRole('switch', { name: 'Enable Disk check' })).not.toBeChecked());
  });

  it('checks a new job’s fields before anything is sent', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/scheduled_jobs': { body: { jobs: [] } },
      'GET /api/assemblies': { body: { assemblies: [] } },
      'GET /api/devices': { body: { devices: DEVICES } },
      'GET /api/sites': { body: { sites: SITES } },
      'POST /api/scheduled_jobs/schedule_preview': { body: { next_runs: NEXT } },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'New job' }));
    const dialog = await screen.findByRole('dialog', { name: 'New scheduled job' });
    await user.click(within(dialog).getByRole('button', { name: 'Interval' }));
    await fill(user, within(dialog).getByRole('spinbutton', { name: 'Every' }), '0');
    await user.click(within(dialog).getByRole('button', { name: 'Create job' }));
    expect(within(dialog).getByRole('textbox', { name: 'Name' })).toHaveAccessibleDescription('Enter a name.');
    expect(within(dialog).getByRole('combobox', { name: 'Assembly' })).toHaveAccessibleDescription('Pick an assembly.');
    expect(within(dialog).getByRole('combobox', { name: 'Devices' })).toHaveAccessibleDescription('Pick devices, sites or device filters to run on.');
    expect(within(dialog).getByRole('spinbutton', { name: 'Every' })).toHaveAccessibleDescription('Enter a positive number.');
    expect(engine.callsTo('POST', '/api/scheduled_jobs')).toHaveLength(0);
  });

  it('creates a cron job, showing the next runs the Engine computes and its reason for a bad expression at the field', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/scheduled_jobs': { body: { jobs: [] } },
      'GET /api/assemblies': { body: { assemblies: [assembly(1, 'Disk report', { timeout_seconds: 120 })] } },
      'GET /api/devices': { body: { devices: DEVICES } },
      'GET /api/sites': { body: { sites: SITES } },
      'POST /api/scheduled_jobs/schedule_preview': (call) => {
        const s = (call.body as { schedule: { expression?: string } }).schedule;
        return s.expression === '61 * * * *' ? validationFailed({ 'schedule.expression': 'minute 61 is out of range' }) : { body: { next_runs: NEXT } };
      },
      'POST /api/scheduled_jobs': { status: 201, body: job(5, 'Every five') },
      'GET /api/device_filters': {
        body: {
          filters: [
            {
              id: 9,
              name: 'Old Chrome',
              description: '',
              filter: { match: 'all', conditions: [] },
              created_by: 'admin',
              created_at: '2026-11-20T10:00:00Z',
              updated_by: 'admin',
              updated_at: '2026-11-20T10:00:00Z',
            },
          ],
        },
      },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'New job' }));
    const dialog = await screen.findByRole('dialog', { name: 'New scheduled job' });
    await fill(user, within(dialog).getByRole('textbox', { name: 'Name' }), 'Every five');
    await user.click(within(dialog).getByRole('combobox', { name: 'Assembly' }));
    await user.click(await screen.findByRole('option', { name: /Disk report/ }));
    await user.click(within(dialog).getByRole('combobox', { name: 'Devices' }));
    await user.click(await screen.findByRole('option', { name: /web-1/ }));
    await user.click(within(dialog).getByRole('combobox', { name: 'Sites' }));
    await user.click(await screen.findByRole('option', { name: 'Lab' }));
    await user.click(within(dialog).getByRole('combobox', { name: 'Device filters' }));
    await user.click(await screen.findByRole('option', { name: 'Old Chrome' }));

    const expr = within(dialog).getByRole('textbox', { name: 'Cron expression' });
    await fill(user, expr, '61 * * * *');
    await waitFor(() => expect(expr).toHaveAccessibleDescription('minute 61 is out of range'));
    expect(within(dialog).getByTestId('preview-error')).toHaveTextContent('minute 61 is out of range');

    await fill(user, expr, '*/5 * * * *');
    const next = await within(dialog).findByTestId('next-runs');
    await waitFor(() => expect(next.querySelectorAll('time')).toHaveLength(5));
    expect(next.querySelector('time')).toHaveAttribute('datetime', NEXT[0]);
    expect(within(dialog).getByTestId('schedule-words')).toHaveTextContent(/^Every 5 minutes \(/);
    const previews = engine.callsTo('POST', '/api/scheduled_jobs/schedule_preview').map((c) => (c.body as { schedule: { expression: string } }).schedule.expression);
    expect(previews.at(-1)).toBe('*/5 * * * *');
    // Only settled input is previewed: never the half-typed or cleared expression.
    expect(previews.every((e) => e === '61 * * * *' || e === '*/5 * * * *' || e === '0 3 * * *')).toBe(true);

    await user.click(within(dialog).getByRole('button', { name: 'Create job' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/scheduled_jobs')).toHaveLength(1));
    const body = engine.callsTo('POST', '/api/scheduled_jobs')[0].body as Record<string, unknown>;
    expect(body).toMatchObject({
      name: 'Every five',
      kind: 'script',
      assembly_id: 1,
      workflow_id: null,
      targets: { devices: ['guid-web-1'], sites: [4], filters: [9] },
      schedule: { type: 'cron', expression: '*/5 * * * *' },
      options: { run_when_online: true, timeout_seconds: 120, stop_on_first_failure: false },
      enabled: true,
    });
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
  });

  it('shows the run history with per-device results, reruns and clears it', async () => {
    const user = userEvent.setup({ delay: null });
    let runs = [
      run('r2', [result('web-1', { status: 'failed', exit_code: 2, stderr: 'disk full' })], { scheduled_job_id: 1, trigger: 'schedule', results: undefined }),
    ];
    const engine = fakeEngine({
      'GET /api/scheduled_jobs': { body: { jobs: [job(1, 'Disk check')] } },
      'GET /api/scheduled_jobs/1/runs': () => ({ body: { runs } }),
      'GET /api/scheduled_jobs/1/runs/r2': { body: run('r2', [result('web-1', { status: 'failed', exit_code: 2, stderr: 'disk full' })]) },
      'GET /api/scheduled_jobs/1/runs/r3': { body: run('r3', [result('web-1', { status: 'succeeded', exit_code: 0, stdout: 'ok' })]) },
      'POST /api/scheduled_jobs/1/rerun': () => {
        runs = [run('r3', [result('web-1', { status: 'succeeded' })], { trigger: 'operator', results: undefined }), ...runs];
        return { status: 202, body: { run_id: 'r3' } };
      },
      'DELETE /api/scheduled_jobs/1/runs': () => {
        runs = [];
        return { status: 204 };
      },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Runs of Disk check' }));
    const dialog = await screen.findByRole('dialog', { name: 'Runs of Disk check' });
    await waitFor(() => expect(within(dialog).getByTestId('stderr')).toHaveTextContent('disk full'));
    expect(within(dialog).getByTestId('exit-code')).toHaveTextContent('Exit code: 2');

    await user.click(within(dialog).getByRole('button', { name: 'Run now' }));
    await waitFor(() => expect(within(dialog).getByTestId('stdout')).toHaveTextContent('ok'));
    expect(engine.callsTo('POST', '/api/scheduled_jobs/1/rerun')).toHaveLength(1);

    await user.click(within(dialog).getByRole('button', { name: 'Clear history' }));
    const confirm = await screen.findByRole('dialog', { name: 'Clear the runs of Disk check?' });
    await user.click(within(confirm).getByRole('button', { name: 'Clear history' }));
    await waitFor(() => expect(engine.callsTo('DELETE', '/api/scheduled_jobs/1/runs')).toHaveLength(1));
    expect(await within(dialog).findByTestId('no-runs')).toHaveTextContent('No runs yet.');
  });

  it('deletes a job after a confirmation', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/scheduled_jobs': { body: { jobs: [job(1, 'Disk check')] } },
      'DELETE /api/scheduled_jobs/1': { status: 204 },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Delete Disk check' }));
    const confirm = await screen.findByRole('dialog', { name: 'Delete Disk check?' });
    expect(confirm).toHaveTextContent('activity are deleted too');
    await user.click(within(confirm).getByRole('button', { name: 'Delete' }));
    await waitFor(() => expect(engine.callsTo('DELETE', '/api/scheduled_jobs/1')).toHaveLength(1));
  });
});
