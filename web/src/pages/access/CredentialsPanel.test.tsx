import { wireSite } from '../../test/wire';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { Credential, Site, User } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine, validationFailed } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import CredentialsPanel from './CredentialsPanel';

const OPERATOR: User = { ...ADMIN, username: 'olga', role: 'operator' };

const SITES: Site[] = [
  wireSite({ site_id: 1, name: 'Head office', site_worker_slug: 'hq', site_worker_name: 'site:hq', device_count: 0, created_at: '2026-11-21T08:00:00Z' }),
  wireSite({ site_id: 2, name: 'Lab', site_worker_slug: 'lab', site_worker_name: 'site:lab', device_count: 0, created_at: '2026-11-21T08:00:00Z' }),
];

function credential(id: number, name: string, extra: Partial<Credential> = {}): Credential {
  return {
    credential_id: id,
    name,
    connection_type: 'Windows',
    credential_type: 'Machine',
    username: 'Administrator',
    domain: null,
    site_id: null,
    has_password: true,
    secret_status: 'ok',
    created_at: '2026-11-21T08:00:00Z',
    updated_at: '2026-11-21T08:00:00Z',
    ...extra,
  };
}

function renderPanel(user: User = ADMIN) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user, signOut: async () => {} }}>
      <CredentialsPanel />
    </SessionContext.Provider>,
  );
}

afterEach(() => vi.unstubAllGlobals());

describe('CredentialsPanel', () => {
  it('lists credentials with their site and flags unreadable passwords', async () => {
    fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/credentials': {
        body: {
          credentials: [
            credential(1, 'Global admin'),
            credential(2, 'Lab domain', { site_id: 2, credential_type: 'Domain', domain: 'CORP', username: 'svc', secret_status: 'unreadable' }),
          ],
        },
      },
    });
    renderPanel();
    expect(await screen.findByText('Global admin')).toBeInTheDocument();
    expect(screen.getByText('Global')).toBeInTheDocument();
    expect(await screen.findByText('Lab')).toBeInTheDocument();
    expect(screen.getByText('CORP\\svc')).toBeInTheDocument();
    expect(screen.getByText('Unreadable')).toBeInTheDocument();
    expect(screen.getByText('Stored')).toBeInTheDocument();
  });

  it('filters by site through the API', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/credentials': { body: { credentials: [credential(1, 'Global admin')] } },
    });
    renderPanel();
    await screen.findByText('Global admin');
    await user.click(screen.getByRole('combobox', { name: 'Site filter' }));
    await user.click(await screen.findByRole('option', { name: 'Lab' }));
    await waitFor(() =>
      expect(engine.fetchMock.mock.calls.map((c) => String(c[0]))).toContain('/api/credentials?site_id=2'),
    );
  });

  it('creates a credential with a write-only password', async () => {
    const user = userEvent.setup({ delay: null });
    const list: Credential[] = [];
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/credentials': () => ({ body: { credentials: list } }),
      'POST /api/credentials': (call) => {
        const { password: _password, ...rest } = call.body as Record<string, unknown>;
        const c = credential(9, rest.name as string, rest as Partial<Credential>);
        list.push(c);
        return { status: 201, body: c };
      },
    });
    renderPanel();
    await user.click(await screen.findByRole('button', { name: 'Add credential' }));
    const dialog = await screen.findByRole('dialog');
    expect(within(dialog).getByLabelText('Password')).toHaveAttribute('type', 'password');
    await user.type(within(dialog).getByLabelText('Name'), 'Domain admin');
    await user.click(within(dialog).getByRole('combobox', { name: 'Credential type' }));
    await user.click(await screen.findByRole('option', { name: 'Domain' }));
    await user.click(within(dialog).getByRole('button', { name: 'Add' }));
    // Local checks run before anything is sent.
    expect(within(dialog).getByText('A Domain credential needs its domain.')).toBeInTheDocument();
    expect(within(dialog).getByText('Enter the password.')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/credentials')).toHaveLength(0);

    await user.type(within(dialog).getByRole('textbox', { name: 'Domain' }), 'CORP');
    await user.type(within(dialog).getByLabelText('Username'), 'svc-rmm');
    await user.type(within(dialog).getByLabelText('Password'), 's3cret pass');
    await user.click(within(dialog).getByRole('combobox', { name: 'Site' }));
    await user.click(await screen.findByRole('option', { name: 'Head office' }));
    await user.click(within(dialog).getByRole('button', { name: 'Add' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/credentials')[0].body).toEqual({
      name: 'Domain admin',
      connection_type: 'Windows',
      credential_type: 'Domain',
      username: 'svc-rmm',
      domain: 'CORP',
      site_id: 1,
      password: 's3cret pass',
    });
    expect(await screen.findByText('Domain admin')).toBeInTheDocument();
    expect(screen.queryByText('s3cret pass')).not.toBeInTheDocument();
  });

  it('edits without resending the password and shows server field errors', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/credentials': { body: { credentials: [credential(3, 'Kiosk')] } },
      'PUT /api/credentials/3': [
        validationFailed({ name: '"Kiosk 2" is already used in this scope' }, 409, 'conflict'),
        { body: credential(3, 'Kiosk 3') },
      ],
    });
    renderPanel();
    await user.click(await screen.findByRole('button', { name: 'Edit Kiosk' }));
    const dialog = await screen.findByRole('dialog');
    expect(within(dialog).getByLabelText('Password')).toHaveValue('');
    expect(within(dialog).getByText('Leave empty to keep the stored password.')).toBeInTheDocument();
    await user.clear(within(dialog).getByLabelText('Name'));
    await user.type(within(dialog).getByLabelText('Name'), 'Kiosk 2');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    expect(await within(dialog).findByText('"Kiosk 2" is already used in this scope')).toHaveClass('Mui-error');
    await user.clear(within(dialog).getByLabelText('Name'));
    await user.type(within(dialog).getByLabelText('Name'), 'Kiosk 3');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    const body = engine.callsTo('PUT', '/api/credentials/3')[1].body as Record<string, unknown>;
    expect(body.name).toBe('Kiosk 3');
    expect(body).not.toHaveProperty('password');
  });

  it('deletes after confirmation', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/credentials': { body: { credentials: [credential(4, 'Old')] } },
      'DELETE /api/credentials/4': { body: { deleted: 4 } },
    });
    renderPanel();
    await user.click(await screen.findByRole('button', { name: 'Delete Old' }));
    const dialog = await screen.findByRole('dialog');
    expect(within(dialog).getByText('Delete Old?')).toBeInTheDocument();
    expect(engine.callsTo('DELETE', '/api/credentials/4')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Delete' }));
    await waitFor(() => expect(engine.callsTo('DELETE', '/api/credentials/4')).toHaveLength(1));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
  });

  it('is read-only for operators', async () => {
    fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/credentials': { body: { credentials: [credential(1, 'Global admin')] } },
    });
    renderPanel(OPERATOR);
    expect(await screen.findByText('Global admin')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Add credential' })).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Edit Global admin' })).not.toBeInTheDocument();
  });
});
