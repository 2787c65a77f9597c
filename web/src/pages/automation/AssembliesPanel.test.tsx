import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router';
import { SessionContext } from '../../auth/session';
import { fill, findEditor, setEditorText } from '../../test/codeEditor';
import { ADMIN, fakeEngine, validationFailed } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import AutomationPage from './AutomationPage';
import { assembly } from './fixtures';

const LIST = [
  assembly(1, 'Disk report', { version: 3, description: 'df -h on every mount' }),
  assembly(2, 'Restart spooler', { language: 'powershell' }),
  assembly(3, 'Patch playbook', { kind: 'ansible_playbook', language: '' }),
];

function renderPage(route = '/automation') {
  return renderWithProviders(
    <SessionContext.Provider value={{ user: ADMIN, signOut: async () => {} }}>
      <WithToasts>
        <Routes>
          <Route path="/automation/:tab?" element={<AutomationPage />} />
        </Routes>
      </WithToasts>
    </SessionContext.Provider>,
    { route },
  );
}

const rowOf = (text: string) => screen.getByText(text).closest('.ag-row') as HTMLElement;

afterEach(() => vi.unstubAllGlobals());

describe('Assemblies', () => {
  it('lists assemblies and filters by kind and search through the Engine', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/assemblies': (call) => ({
        body: {
          assemblies: LIST.filter(
            (a) => (!call.query.get('kind') || a.kind === call.query.get('kind')) && a.name.toLowerCase().includes((call.query.get('q') ?? '').toLowerCase()),
          ),
        },
      }),
    });
    renderPage();
    expect(await screen.findByRole('tab', { name: 'Assemblies', selected: true })).toBeInTheDocument();
    await screen.findByText('Disk report');
    expect(within(rowOf('Disk report')).getByText('Bash')).toBeInTheDocument();
    expect(within(rowOf('Restart spooler')).getByText('PowerShell')).toBeInTheDocument();
    expect(within(rowOf('Patch playbook')).getByText('Ansible playbook')).toBeInTheDocument();
    // Playbooks run on devices like scripts.
    expect(within(rowOf('Patch playbook')).getByRole('button', { name: 'Run Patch playbook' })).toBeInTheDocument();

    await user.click(screen.getByRole('combobox', { name: 'Kind' }));
    await user.click(await screen.findByRole('option', { name: 'Ansible playbook' }));
    await waitFor(() => expect(screen.queryByText('Disk report')).not.toBeInTheDocument());
    expect(engine.callsTo('GET', '/api/assemblies').at(-1)!.query.get('kind')).toBe('ansible_playbook');

    await user.click(screen.getByRole('combobox', { name: 'Kind' }));
    await user.click(await screen.findByRole('option', { name: 'All kinds' }));
    await fill(user, screen.getByRole('searchbox', { name: 'Search assemblies' }), 'spool');
    await waitFor(() => expect(engine.callsTo('GET', '/api/assemblies').at(-1)!.query.get('q')).toBe('spool'));
    await waitFor(() => expect(screen.queryByText('Disk report')).not.toBeInTheDocument());
    await waitFor(() => expect(screen.getByText('Restart spooler')).toBeInTheDocument());
  });

  it('says plainly why an assembly in use cannot be deleted', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/assemblies': { body: { assemblies: LIST } },
      'DELETE /api/assemblies/1': {
        status: 409,
        body: { error: 'assembly_in_use', message: 'Disk report is used by the scheduled job "Nightly disks"' },
      },
    });
    renderPage();
    await screen.findByText('Disk report');
    await user.click(screen.getByRole('button', { name: 'Delete Disk report' }));
    const dialog = await screen.findByRole('dialog', { name: 'Delete Disk report?' });
    await user.click(within(dialog).getByRole('button', { name: 'Delete' }));
    const inUse = await within(dialog).findByTestId('assembly-in-use');
    expect(inUse).toHaveTextContent('Disk report is used by the scheduled job "Nightly disks"');
    expect(inUse).toHaveTextContent('Change or delete those first.');
    expect(within(dialog).getByRole('button', { name: 'Delete' })).toBeDisabled();
    expect(engine.callsTo('DELETE', '/api/assemblies/1')).toHaveLength(1);
  });

  it('creates an assembly, checking the fields first and showing the Engine’s errors at them', async () => {
    const user = userEvent.setup({ delay: null });
    const created = assembly(9, 'Uptime', { body: 'uptime', parameters: [{ name: 'verbose', label: 'Verbose', type: 'boolean', default: true, required: false }] });
    const engine = fakeEngine({
      'GET /api/assemblies': { body: { assemblies: LIST } },
      'POST /api/assemblies': [validationFailed({ name: 'an assembly with this name exists' }), { status: 201, body: created }],
      'GET /api/assemblies/9': { body: created },
      'GET /api/assemblies/9/versions': { body: { versions: [{ version: 1, language: 'bash', timeout_seconds: 300, body_sha256: 'x', created_by: 'admin', created_at: '2026-11-21T08:00:00Z' }] } },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'New assembly' }));
    const dialog = await screen.findByRole('dialog');
    await user.click(within(dialog).getByRole('button', { name: 'Add parameter' }));
    const nameInput = within(dialog).getByRole('textbox', { name: 'Name' });
    const paramName = within(dialog).getByRole('textbox', { name: 'Parameter name' });
    await fill(user, paramName, '1bad');
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    expect(nameInput).toHaveAccessibleDescription('Enter a name.');
    expect(paramName).toHaveAccessibleDescription('Letters, digits and _ only, not starting with a digit.');
    expect(within(dialog).getByText('Enter the body.')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/assemblies')).toHaveLength(0);

    await fill(user, nameInput, 'Uptime');
    await fill(user, paramName, 'verbose');
    await user.click(within(dialog).getByRole('combobox', { name: 'Type' }));
    await user.click(await screen.findByRole('option', { name: 'Yes/no' }));
    await user.click(within(dialog).getByRole('checkbox', { name: 'Default on' }));
    await setEditorText('Body', 'uptime');
    // A user-context script (docs/api.md "User-context jobs").
    await user.click(within(dialog).getByRole('combobox', { name: 'Run as' }));
    await user.click(await screen.findByRole('option', { name: 'Signed-in user (Windows)' }));
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/assemblies')).toHaveLength(1));
    await waitFor(() => expect(nameInput).toHaveAccessibleDescription('an assembly with this name exists'));

    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    expect(await screen.findByTestId('assembly-saved')).toHaveTextContent('Saved Uptime as version 1.');
    expect(engine.callsTo('POST', '/api/assemblies')[1].body).toEqual({
      name: 'Uptime',
      kind: 'script',
      language: 'bash',
      description: '',
      body: 'uptime',
      parameters: [{ name: 'verbose', label: '', type: 'boolean', default: true, required: false }],
      timeout_seconds: 300,
      run_as: 'current_user',
    });
  });

  it('saves an edit as a new version and shows an old version read-only', async () => {
    const user = userEvent.setup({ delay: null });
    let current = assembly(1, 'Disk report', { version: 2, body: 'df -h' });
    const versions = [
      { version: 1, language: 'sh', timeout_seconds: 60, body_sha256: 'a', created_by: 'alice', created_at: '2026-11-20T08:00:00Z' },
      { version: 2, language: 'bash', timeout_seconds: 300, body_sha256: 'b', created_by: 'admin', created_at: '2026-11-21T08:00:00Z' },
    ];
    const engine = fakeEngine({
      'GET /api/assemblies': { body: { assemblies: LIST } },
      'GET /api/assemblies/1': () => ({ body: current }),
      'GET /api/assemblies/1/versions': () => ({ body: { versions } }),
      'GET /api/assemblies/1/versions/1': { body: assembly(1, 'Disk report', { version: 1, language: 'sh', body: 'df', timeout_seconds: 60 }) },
      'PUT /api/assemblies/1': (call) => {
        current = { ...current, ...(call.body as object), version: 3 };
        versions.push({ version: 3, language: 'bash', timeout_seconds: 300, body_sha256: 'c', created_by: 'admin', created_at: '2026-11-22T08:00:00Z' });
        return { body: current };
      },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Edit Disk report' }));
    const dialog = await screen.findByRole('dialog', { name: 'Edit Disk report' });
    const editor = await findEditor('Body');
    expect(editor.state.doc.toString()).toBe('df -h');

    const list = within(dialog).getByRole('region', { name: 'Versions' });
    await user.click(within(list).getByRole('button', { name: 'View version 1' }));
    const old = await screen.findByRole('dialog', { name: 'Disk report, version 1' });
    const oldEditor = await findEditor('Body of version 1');
    expect(oldEditor.state.doc.toString()).toBe('df');
    expect(oldEditor.state.readOnly).toBe(true);
    expect(old).toHaveTextContent('sh · timeout 60 s');
    await user.click(within(old).getByRole('button', { name: 'Close' }));

    await setEditorText('Body', 'df -h --total');
    await user.click(within(dialog).getByRole('button', { name: 'Save new version' }));
    expect(await screen.findByTestId('assembly-saved')).toHaveTextContent('Saved Disk report as version 3.');
    expect(engine.callsTo('PUT', '/api/assemblies/1')[0].body).toMatchObject({ body: 'df -h --total', language: 'bash' });
    await waitFor(() => expect(within(screen.getByRole('region', { name: 'Versions' })).getByText(/^v3/)).toBeInTheDocument());
  });

  it('opens the assembly named in the URL, as the Metadata page links it', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/assemblies': { body: { assemblies: LIST } },
      'GET /api/assemblies/2': { body: assembly(2, 'Restart spooler', { language: 'powershell', body: 'Restart-Service Spooler' }) },
      'GET /api/assemblies/2/versions': { body: { versions: [] } },
    });
    renderPage('/automation?assembly=2');
    const dialog = await screen.findByRole('dialog', { name: 'Edit Restart spooler' });
    await user.click(within(dialog).getByRole('button', { name: 'Close' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
  });
});
