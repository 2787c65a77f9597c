import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { DirectoryProvider } from '../../api/types';
import { fakeEngine, validationFailed } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import DirectoryPanel from './DirectoryPanel';
import { overridesToText, parseOverrides } from './ProviderDialog';

function provider(over: Partial<DirectoryProvider> = {}): DirectoryProvider {
  return {
    provider_id: 3, name: 'Corp AD', kind: 'active_directory', host: 'dc1.corp.example', port: 636,
    base_dn: 'dc=corp,dc=example', user_filter: '', username_attribute: 'sAMAccountName', group_mode: 'member_of',
    group_base_dn: '', group_member_attribute: 'member', bind_dn: 'cn=svc,dc=corp,dc=example', has_bind_password: true,
    ca_pem: '', host_overrides: {}, role_mappings: [], site_mappings: [], enabled: false, last_test: null,
    cached_users: 0, created_at: '2026-11-21T08:00:00Z', updated_at: '2026-11-21T08:00:00Z', ...over,
  };
}

const SITES = { body: { sites: [{ id: 5, name: 'Branch A', slug: 'branch-a' }] } };

afterEach(() => vi.unstubAllGlobals());

// Pasting is one input event; typing long values key by key is slow in jsdom.
async function fill(user: ReturnType<typeof userEvent.setup>, dialog: HTMLElement, label: string, value: string) {
  await user.click(within(dialog).getByLabelText(label));
  await user.paste(value);
}

describe('DirectoryPanel', () => {
  it('lists providers; enabling waits for a passing test', async () => {
    fakeEngine({ 'GET /api/directory/providers': { body: { providers: [provider()] } }, 'GET /api/directory/sites': SITES });
    renderWithProviders(<DirectoryPanel />);
    expect(await screen.findByText('Corp AD')).toBeInTheDocument();
    expect(screen.getByText('dc1.corp.example:636')).toBeInTheDocument();
    expect(screen.getByRole('switch', { name: 'Enable Corp AD' })).toBeDisabled();
  });

  it('tests, then enables a provider', async () => {
    const user = userEvent.setup({ delay: null });
    let current = provider();
    const engine = fakeEngine({
      'GET /api/directory/providers': () => ({ body: { providers: [current] } }),
      'GET /api/directory/sites': SITES,
      'POST /api/directory/providers/3/test': () => {
        current = { ...current, last_test: { ok: true, message: 'connected, bound and read the base DN', tested_at: '2026-11-21T08:01:00Z' } };
        return { body: current.last_test };
      },
      'PATCH /api/directory/providers/3': (call) => {
        current = { ...current, ...(call.body as object) };
        return { body: current };
      },
    });
    renderWithProviders(<DirectoryPanel />);
    await user.click(await screen.findByRole('button', { name: 'Test Corp AD' }));
    expect(await screen.findByText(/Test of Corp AD: passed/)).toBeInTheDocument();
    await waitFor(() => expect(screen.getByRole('switch', { name: 'Enable Corp AD' })).toBeEnabled());
    await user.click(screen.getByRole('switch', { name: 'Enable Corp AD' }));
    await waitFor(() => expect(engine.callsTo('PATCH', '/api/directory/providers/3')).toHaveLength(1));
    expect(engine.callsTo('PATCH', '/api/directory/providers/3')[0].body).toEqual({ enabled: true });
    expect(await screen.findByText('Corp AD is enabled.')).toBeInTheDocument();
  });

  it('creates a provider with mappings and overrides, and shows server field errors', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/directory/providers': { body: { providers: [] } },
      'GET /api/directory/sites': SITES,
      'POST /api/directory/providers': [validationFailed({ base_dn: 'must be a distinguished name, like dc=example,dc=com' }), { status: 201, body: provider() }],
    });
    renderWithProviders(<DirectoryPanel />);
    await user.click(await screen.findByRole('button', { name: 'Add provider' }));
    const dialog = await screen.findByRole('dialog');
    await fill(user, dialog, 'Name', 'Corp AD');
    await fill(user, dialog, 'Host', 'dc1.corp.example');
    await fill(user, dialog, 'Base DN', 'corp');
    await fill(user, dialog, 'Service account DN', 'cn=svc,dc=corp,dc=example');
    await fill(user, dialog, 'Service account password', 's3cret');
    await fill(user, dialog, 'Host overrides', 'dc1.corp.example=10.0.0.5');
    await user.click(within(dialog).getByRole('button', { name: 'Add role mapping' }));
    await fill(user, dialog, 'Role group 1', 'Cairn Admins');
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    expect(await within(dialog).findByText('must be a distinguished name, like dc=example,dc=com')).toHaveClass('Mui-error');

    await user.clear(within(dialog).getByLabelText('Base DN'));
    await fill(user, dialog, 'Base DN', 'dc=corp,dc=example');
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    const body = engine.callsTo('POST', '/api/directory/providers')[1].body as Record<string, unknown>;
    expect(body).toMatchObject({
      name: 'Corp AD', kind: 'active_directory', host: 'dc1.corp.example', base_dn: 'dc=corp,dc=example',
      bind_dn: 'cn=svc,dc=corp,dc=example', bind_password: 's3cret', host_overrides: { 'dc1.corp.example': '10.0.0.5' },
      role_mappings: [{ group: 'Cairn Admins', role: 'operator' }], site_mappings: [],
    });
    expect(body).not.toHaveProperty('port');
  }, 60_000); // the largest form of the console: slow in jsdom on a busy machine

  it('keeps the stored bind password when editing without typing one', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/directory/providers': { body: { providers: [provider()] } },
      'GET /api/directory/sites': SITES,
      'PATCH /api/directory/providers/3': { body: provider({ name: 'Corp' }) },
    });
    renderWithProviders(<DirectoryPanel />);
    await user.click(await screen.findByRole('button', { name: 'Edit Corp AD' }));
    const dialog = await screen.findByRole('dialog');
    expect(within(dialog).getByText('Stored; leave blank to keep it.')).toBeInTheDocument();
    await user.clear(within(dialog).getByLabelText('Name'));
    await fill(user, dialog, 'Name', 'Corp');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(engine.callsTo('PATCH', '/api/directory/providers/3')).toHaveLength(1));
    const body = engine.callsTo('PATCH', '/api/directory/providers/3')[0].body as Record<string, unknown>;
    expect(body.name).toBe('Corp');
    expect(body.port).toBe(636);
    expect(body).not.toHaveProperty('bind_password');
  });

  it('fetches the server certificate for review and trusts it on request', async () => {
    const user = userEvent.setup({ delay: null });
    const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const engine = fakeEngine({
      'GET /api/directory/providers': { body: { providers: [provider()] } },
      'GET /api/directory/sites': SITES,
      'POST /api/directory/providers/certificate': {
        body: { subject: 'CN=dc1.corp.example', issuer: 'CN=Corp CA', sans: ['dc1.corp.example'], not_before: '2026-01-01T00:00:00Z',
          not_after: '2027-01-01T00:00:00Z', sha256_fingerprint: 'AB:CD', pem },
      },
    });
    renderWithProviders(<DirectoryPanel />);
    await user.click(await screen.findByRole('button', { name: 'Edit Corp AD' }));
    const dialog = await screen.findByRole('dialog');
    await user.click(within(dialog).getByRole('button', { name: 'Fetch server certificate' }));
    const review = await within(dialog).findByTestId('certificate-review');
    expect(review).toHaveTextContent('SHA-256: AB:CD');
    expect(review).toHaveTextContent('Issuer: CN=Corp CA');
    expect(within(dialog).getByLabelText('Trusted CA (PEM)')).toHaveValue('');
    await user.click(within(review).getByRole('button', { name: 'Trust this certificate' }));
    expect(within(dialog).getByLabelText('Trusted CA (PEM)')).toHaveValue(pem);
    expect(engine.callsTo('POST', '/api/directory/providers/certificate')[0].body).toEqual({ host: 'dc1.corp.example', port: 636, host_overrides: {} });
  });

  it('looks up a user and disables the cached account', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/directory/providers': { body: { providers: [provider()] } },
      'GET /api/directory/sites': SITES,
      'POST /api/directory/providers/3/lookup-user': {
        body: { found: true, dn: 'cn=Ann,dc=corp,dc=example', attributes: { mail: ['ann@corp.example'] }, groups: ['cn=Ops,dc=corp,dc=example'],
          role: 'operator', site_ids: [5], password_ok: true },
      },
      'POST /api/users/ann/directory-cache': { body: { username: 'ann', enabled: false } },
    });
    renderWithProviders(<DirectoryPanel />);
    await user.click(await screen.findByRole('button', { name: 'Look up user in Corp AD' }));
    const dialog = await screen.findByRole('dialog');
    await fill(user, dialog, 'Username', 'ann');
    await fill(user, dialog, 'Password (optional)', 'pw');
    await user.click(within(dialog).getByRole('button', { name: 'Look up' }));
    const result = await within(dialog).findByTestId('lookup-result');
    expect(result).toHaveTextContent('Role: operator');
    expect(result).toHaveTextContent('Sites: Branch A');
    expect(result).toHaveTextContent('Password: accepted');
    expect(engine.callsTo('POST', '/api/directory/providers/3/lookup-user')[0].body).toEqual({ username: 'ann', password: 'pw' });
    await user.click(within(dialog).getByRole('button', { name: 'Disable cached account' }));
    expect(await within(dialog).findByText('ann is disabled.')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/users/ann/directory-cache')[0].body).toEqual({ enabled: false });
  });

  it('syncs and reports disabled users; shows why a delete is refused', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/directory/providers': { body: { providers: [provider({ cached_users: 2 })] } },
      'GET /api/directory/sites': SITES,
      'POST /api/directory/providers/3/sync': { body: { checked: 2, disabled: ['bob'] } },
      'DELETE /api/directory/providers/3': { status: 409, body: { error: 'conflict', message: 'cached directory users still belong to this provider; delete them first' } },
    });
    renderWithProviders(<DirectoryPanel />);
    await user.click(await screen.findByRole('button', { name: 'Sync Corp AD' }));
    expect(await screen.findByText('Sync of Corp AD: checked 2 cached users. Disabled: bob.')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Delete Corp AD' }));
    const dialog = await screen.findByRole('dialog');
    await user.click(within(dialog).getByRole('button', { name: 'Delete' }));
    expect(await within(dialog).findByText(/still belong to this provider/)).toBeInTheDocument();
  });
});

describe('host overrides text', () => {
  it('round-trips and rejects a malformed line', () => {
    expect(parseOverrides(' a.example = 10.0.0.1 \n\nb.example=fd00::1')).toEqual({ 'a.example': '10.0.0.1', 'b.example': 'fd00::1' });
    expect(overridesToText({ 'a.example': '10.0.0.1' })).toBe('a.example=10.0.0.1');
    expect(parseOverrides('a.example')).toMatch(/host=IP/);
  });
});
