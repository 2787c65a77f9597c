import { describe, expect, it } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { fakeEngine } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { DevicePatchLane } from './DevicePatches';

const row = (pkg: string, severity = '') => ({
  patch_key: `pkg:${pkg}=1.1`, kb: '', kbs: [], title: `${pkg} 1.1`, update_id: '', revision: 0, state: 'pending', source: 'apt',
  package: pkg, installed_version: '1.0', candidate_version: '1.1', severity, security: false, origin: '', categories: [],
  reboot_behavior: '', size_bytes: 0, released_at: null, installed_at: null, updated_at: '2026-11-29T10:00:00Z',
  active_install_job: null, patch_policy_source: null, patch_policy_hierarchy: null, patch_policy_linked_policies: null,
});

const install = (state: string, extra: Record<string, unknown> = {}) => ({
  install_id: 'i-1', device_guid: 'g-1', patch_key: 'pkg:hello=1.1', kb: '', update_id: '', revision: 0, package: 'hello',
  version: '1.1', title: 'hello 1.1', state, already_installed: false, phase: '', percent: 0, message: '', exit_code: null,
  log_excerpt: '', scheduled_job_id: 7, run_id: 'r-1', requested_by: 'admin', created_at: '2026-11-29T10:00:00Z',
  started_at: null, progress_at: null, finished_at: null, ...extra,
});

const view = (installs: unknown[] = [], reboots: unknown[] = []) => ({
  guid: 'g-1', hostname: 'web-1', site_id: 1, patches: [row('hello', 'Important'), row('bash')], collected_at: '2026-11-29T10:00:00Z',
  provider: 'apt', reboot_required: false, reboot_packages: [], pending_count: 2, security_pending_count: 0, installs, reboots,
});

const draft = {
  job_kind: 'patch_install', name: 'Install hello 1.1 on web-1', kind: 'patch_install', parameters: { patch_keys: ['pkg:hello=1.1'] },
  targets: { devices: ['g-1'], sites: [], filters: [] }, schedule: { type: 'once', at: '2030-01-01T10:05:00Z' },
  options: { run_when_online: false, timeout_seconds: 0, stop_on_first_failure: false }, enabled: true, patches: [row('hello')],
};

describe('DevicePatchLane', () => {
  it('opens a patch_install draft, runs it, and shows the install live until the re-scan confirms it', async () => {
    const user = userEvent.setup({ delay: null });
    const fake = fakeEngine({
      'GET /api/device/patches/web-1': [
        { body: view() },
        { body: view([install('running', { phase: 'installing', percent: 40, message: 'Unpacking hello' })]) },
        { body: view([install('not_confirmed', { message: 'hello 1.0 -> 1.1; the re-scan still lists it pending' })]) },
        { body: view([install('installed', { phase: 'finished', percent: 100 })]) },
      ],
      'POST /api/device/patches/web-1/install-draft': { body: draft },
      'POST /api/scheduled_jobs': { status: 201, body: { id: 7, name: draft.name } },
      'POST /api/scheduled_jobs/7/rerun': { status: 202, body: { run_id: 'r-1' } },
    });
    renderWithProviders(<DevicePatchLane hostname="web-1" />);
    expect(await screen.findByText('No install yet.')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Install…' }));
    const dialog = await screen.findByRole('dialog');
    await user.click(within(dialog).getByRole('checkbox', { name: 'bash 1.1' }));
    await user.click(within(dialog).getByRole('button', { name: 'Open draft' }));
    expect(fake.callsTo('POST', '/api/device/patches/web-1/install-draft')[0].body).toEqual({ patch_keys: ['pkg:hello=1.1'] });
    expect(await within(dialog).findByRole('heading', { name: 'Review the install job' })).toBeInTheDocument();
    expect(within(dialog).getByLabelText('Job name')).toHaveValue('Install hello 1.1 on web-1');
    expect(within(dialog).getByTestId('draft-patches')).toHaveTextContent('hello 1.1');
    expect(within(dialog).getByRole('button', { name: 'Schedule' })).toBeInTheDocument();
    await user.click(within(dialog).getByRole('button', { name: 'Now' }));
    await user.click(within(dialog).getByRole('button', { name: 'Run now' }));

    await waitFor(() => expect(fake.callsTo('POST', '/api/scheduled_jobs/7/rerun')).toHaveLength(1));
    expect(fake.callsTo('POST', '/api/scheduled_jobs')[0].body).toEqual({
      name: 'Install hello 1.1 on web-1', kind: 'patch_install', assembly_id: null, workflow_id: null,
      parameters: { patch_keys: ['pkg:hello=1.1'] }, targets: { devices: ['g-1'], sites: [], filters: [] },
      schedule: { type: 'manual' }, options: draft.options, enabled: true,
    });
    expect(await screen.findByText(/is running/)).toBeInTheDocument();
    // Live progress while the install runs.
    const running = await screen.findByTestId('install-i-1');
    expect(running).toHaveTextContent('installing');
    expect(running).toHaveTextContent('installing 40% · Unpacking hello');
    expect(within(running).getByRole('progressbar')).toHaveAttribute('aria-valuenow', '40');
    // The agent's word alone is not "installed"…
    await waitFor(() => expect(screen.getByTestId('install-i-1')).toHaveTextContent('not confirmed by the re-scan'), { timeout: 5000 });
    expect(within(screen.getByTestId('install-i-1')).queryByText('installed')).not.toBeInTheDocument();
  });

  it('shows an install as installed only in the state the Engine confirmed', async () => {
    fakeEngine({ 'GET /api/device/patches/web-1': { body: view([install('installed', { phase: 'finished', percent: 100 })]) } });
    renderWithProviders(<DevicePatchLane hostname="web-1" />);
    const r = await screen.findByTestId('install-i-1');
    expect(within(r).getByText('installed')).toBeInTheDocument();
    expect(within(r).queryByRole('progressbar')).not.toBeInTheDocument();
  });

  it('sends a patch_reboot_request and shows it skipped while a user is signed in', async () => {
    const user = userEvent.setup({ delay: null });
    const skipped = {
      reboot_id: 'b-1', device_guid: 'g-1', when_required: true, forced: false, policy_id: null, state: 'skipped_logged_in_user',
      message: 'a user is signed in', signed_in: ['alice'], requested_by: 'admin', created_at: '2026-11-29T10:00:00Z',
      started_at: null, finished_at: '2026-11-29T10:00:05Z',
    };
    const fake = fakeEngine({
      'GET /api/device/patches/web-1': [{ body: view() }, { body: view([], [skipped]) }],
      'POST /api/device/patches/web-1/reboot': { status: 202, body: { ...skipped, state: 'queued', signed_in: [] } },
    });
    renderWithProviders(<DevicePatchLane hostname="web-1" />);
    await screen.findByText('No install yet.');
    await user.click(screen.getByRole('button', { name: 'Reboot…' }));
    const dialog = await screen.findByRole('dialog');
    expect(within(dialog).getByRole('checkbox', { name: 'Only if the device says it needs a reboot' })).toBeChecked();
    await user.click(within(dialog).getByRole('button', { name: 'Reboot' }));
    await waitFor(() => expect(fake.callsTo('POST', '/api/device/patches/web-1/reboot')).toHaveLength(1));
    expect(fake.callsTo('POST', '/api/device/patches/web-1/reboot')[0].body).toEqual({ when_required: true });
    const r = await screen.findByTestId('reboot-b-1');
    expect(r).toHaveTextContent('skipped: a user is signed in');
    expect(r).toHaveTextContent('Signed in: alice');
  });
});
