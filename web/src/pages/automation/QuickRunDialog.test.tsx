import { afterEach, describe, expect, it, vi } from 'vitest';
import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { fakeEngine, validationFailed } from '../../test/fakeEngine';
import { setEditorText } from '../../test/codeEditor';
import { renderWithProviders } from '../../test/render';
import { device } from '../devices/fixtures';
import { assembly, result, run } from './fixtures';
import { QuickRunDialog } from './QuickRunDialog';

const DEVICES = [device('web-1'), device('db-1', { operating_system: 'Windows Server 2022' })];

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

const field = (name: string) => screen.getByRole('spinbutton', { name }) as HTMLElement;

describe('QuickRunDialog', () => {
  it('shows what is missing at the fields before anything is sent', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/devices': { body: { devices: DEVICES } },
      'GET /api/assemblies': { body: { assemblies: [] } },
    });
    renderWithProviders(<QuickRunDialog onClose={() => {}} />);
    await user.click(await screen.findByRole('button', { name: 'Ad-hoc script' }));
    await user.clear(field('Timeout (seconds)'));
    await user.type(field('Timeout (seconds)'), '0');
    await user.click(screen.getByRole('button', { name: 'Run' }));

    expect(screen.getByRole('combobox', { name: 'Devices' })).toHaveAccessibleDescription('Pick at least one device.');
    expect(await screen.findByRole('alert')).toHaveTextContent('Enter the script to run.');
    expect(field('Timeout (seconds)')).toHaveAccessibleDescription('Between 1 and 86400 seconds.');
    expect(engine.callsTo('POST', '/api/scripts/quick_run')).toHaveLength(0);
  });

  it('shows the Engine’s field errors at the field they name', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/devices': { body: { devices: DEVICES } },
      'GET /api/assemblies': { body: { assemblies: [] } },
      'POST /api/scripts/quick_run': validationFailed({ device_guids: 'guid-web-1 is not in your sites' }),
    });
    renderWithProviders(<QuickRunDialog devices={[DEVICES[0]]} onClose={() => {}} />);
    await user.click(await screen.findByRole('button', { name: 'Ad-hoc script' }));
    await setEditorText('Script body', 'echo hi');
    await user.click(screen.getByRole('button', { name: 'Run' }));
    await waitFor(() =>
      expect(screen.getByRole('combobox', { name: 'Devices' })).toHaveAccessibleDescription('guid-web-1 is not in your sites'),
    );
    expect(screen.queryByTestId('error-alert')).not.toBeInTheDocument();
  });

  it('runs an ad-hoc script, shows live output, then stops polling when the run finishes', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true, toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const user = userEvent.setup({ delay: null, advanceTimers: vi.advanceTimersByTime });
    const engine = fakeEngine({
      'GET /api/devices': { body: { devices: DEVICES } },
      'GET /api/assemblies': { body: { assemblies: [] } },
      'POST /api/scripts/quick_run': { status: 202, body: { run_id: 'run-1' } },
      'GET /api/scripts/quick_run/run-1': [
        { body: run('run-1', [result('web-1', { status: 'running', stdout: 'partial', started_at: '2026-11-21T08:00:01Z' })]) },
        {
          body: run('run-1', [
            result('web-1', {
              status: 'succeeded',
              exit_code: 0,
              stdout: 'partial\ndone',
              stdout_truncated: true,
              started_at: '2026-11-21T08:00:01Z',
              finished_at: '2026-11-21T08:00:03Z',
            }),
          ]),
        },
      ],
    });
    renderWithProviders(<QuickRunDialog devices={[DEVICES[0]]} onClose={() => {}} />);
    await user.click(await screen.findByRole('button', { name: 'Ad-hoc script' }));
    await setEditorText('Script body', 'echo partial; echo done');
    await user.clear(field('Timeout (seconds)'));
    await user.type(field('Timeout (seconds)'), '30');
    await user.click(screen.getByRole('button', { name: 'Run' }));

    await waitFor(() => expect(engine.callsTo('POST', '/api/scripts/quick_run')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/scripts/quick_run')[0].body).toEqual({
      device_guids: ['guid-web-1'],
      language: 'bash',
      body: 'echo partial; echo done',
      parameters: {},
      timeout_seconds: 30,
    });

    const view = await screen.findByTestId('run-view');
    expect(view).toHaveAttribute('data-run-status', 'running');
    expect(screen.getByTestId('stdout')).toHaveTextContent('partial');
    expect(screen.getByText(/Output so far/)).toBeInTheDocument();

    await act(() => vi.advanceTimersByTimeAsync(1000));
    await waitFor(() => expect(screen.getByTestId('run-view')).toHaveAttribute('data-run-status', 'succeeded'));
    expect(screen.getByTestId('stdout')).toHaveTextContent('partial done');
    expect(screen.getByTestId('exit-code')).toHaveTextContent('Exit code: 0');
    expect(screen.getByTestId('truncated-note')).toHaveTextContent('Stdout was cut at 1 MiB');
    expect(within(screen.getByRole('list', { name: 'Devices in this run' })).getByTestId('run-status')).toHaveTextContent('Succeeded');

    const polls = engine.callsTo('GET', '/api/scripts/quick_run/run-1').length;
    await act(() => vi.advanceTimersByTimeAsync(5000));
    expect(engine.callsTo('GET', '/api/scripts/quick_run/run-1')).toHaveLength(polls);
  });

  it('runs an assembly with its parameters and shows a device that could not run it', async () => {
    const user = userEvent.setup({ delay: null });
    const disk = assembly(7, 'Disk report', {
      timeout_seconds: 120,
      parameters: [{ name: 'path', label: 'Path', type: 'string', default: '/', required: true }],
    });
    const engine = fakeEngine({
      'GET /api/devices': { body: { devices: DEVICES } },
      'GET /api/assemblies': { body: { assemblies: [disk] } },
      'POST /api/scripts/quick_run': { status: 202, body: { run_id: 'run-2' } },
      'GET /api/scripts/quick_run/run-2': {
        body: run(
          'run-2',
          [
            result('web-1', { status: 'succeeded', exit_code: 0, stdout: '/dev/vda1 40G' }),
            result('db-1', { status: 'failed', error_code: 'unsupported_language', error_message: 'Windows cannot run bash' }),
          ],
          { assembly_id: 7, assembly_name: 'Disk report', assembly_version: 1 },
        ),
      },
    });
    renderWithProviders(<QuickRunDialog devices={DEVICES} onClose={() => {}} />);
    await user.click(await screen.findByRole('combobox', { name: 'Assembly' }));
    await user.click(await screen.findByRole('option', { name: /Disk report/ }));
    const path = await screen.findByRole('textbox', { name: 'Path' });
    expect(path).toHaveValue('/');
    await user.clear(path);
    await user.click(screen.getByRole('button', { name: 'Run' }));
    expect(path).toHaveAccessibleDescription('Required.');
    await user.type(path, '/var');
    await user.click(screen.getByRole('button', { name: 'Run' }));

    await waitFor(() => expect(engine.callsTo('POST', '/api/scripts/quick_run')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/scripts/quick_run')[0].body).toEqual({
      device_guids: ['guid-web-1', 'guid-db-1'],
      assembly_id: 7,
      parameters: { path: '/var' },
      timeout_seconds: 120,
    });
    await waitFor(() => expect(screen.getByTestId('run-view')).toHaveAttribute('data-run-status', 'failed'));
    expect(screen.getByText('Disk report v1', { exact: false })).toBeInTheDocument();
    await user.click(screen.getByText('db-1'));
    expect(screen.getByTestId('result-error')).toHaveTextContent('Windows cannot run bash (unsupported_language)');
  });
  it('runs an Ansible playbook assembly and shows each device’s play recap', async () => {
    const user = userEvent.setup({ delay: null });
    const motd = assembly(9, 'Message of the day', { kind: 'ansible_playbook', language: '', timeout_seconds: 300 });
    const flow = assembly(10, 'A workflow', { kind: 'workflow', language: '' });
    const engine = fakeEngine({
      'GET /api/devices': { body: { devices: DEVICES } },
      'GET /api/assemblies': { body: { assemblies: [motd, flow] } },
      'POST /api/scripts/quick_run': { status: 202, body: { run_id: 'run-3' } },
      'GET /api/scripts/quick_run/run-3': {
        body: run(
          'run-3',
          [
            result('web-1', {
              status: 'succeeded',
              exit_code: 0,
              stdout: 'PLAY RECAP\nlocalhost : ok=2 changed=1',
              ansible: { version: '2.14.18', ok: 2, changed: 1, unreachable: 0, failed: 0, skipped: 0, rescued: 0, ignored: 0 },
            }),
            result('db-1', { status: 'failed', error_code: 'ansible_unavailable', error_message: 'ansible-playbook is not installed on this device' }),
          ],
          { assembly_id: 9, assembly_name: 'Message of the day', assembly_version: 1, language: 'ansible' },
        ),
      },
    });
    renderWithProviders(<QuickRunDialog devices={DEVICES} onClose={() => {}} />);
    await user.click(await screen.findByRole('combobox', { name: 'Assembly' }));
    expect(screen.queryByRole('option', { name: /A workflow/ })).not.toBeInTheDocument();
    await user.click(await screen.findByRole('option', { name: /Message of the day.*Ansible playbook/ }));
    await user.click(screen.getByRole('button', { name: 'Run' }));

    await waitFor(() => expect(engine.callsTo('POST', '/api/scripts/quick_run')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/scripts/quick_run')[0].body).toMatchObject({ assembly_id: 9, timeout_seconds: 300 });
    await waitFor(() => expect(screen.getByTestId('run-view')).toHaveAttribute('data-run-status', 'failed'));
    expect(screen.getByText(/Ansible playbook/)).toBeInTheDocument();
    const recap = screen.getByRole('group', { name: 'Play recap' });
    expect(recap).toHaveTextContent('ansible-core 2.14.18');
    expect(within(recap).getByTestId('recap-changed')).toHaveTextContent('changed 1');
    expect(within(recap).getByTestId('recap-ok')).toHaveTextContent('ok 2');
    expect(screen.getByTestId('stdout')).toHaveTextContent('PLAY RECAP');
    await user.click(screen.getByText('db-1'));
    expect(screen.getByTestId('result-error')).toHaveTextContent('ansible-playbook is not installed on this device (ansible_unavailable)');
    expect(screen.queryByRole('group', { name: 'Play recap' })).not.toBeInTheDocument();
  });
});
