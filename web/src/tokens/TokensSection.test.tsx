import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { fakeEngine } from '../test/fakeEngine';
import { renderWithProviders } from '../test/render';
import { TokensSection } from './TokensSection';
import type { ApiToken } from './api';

afterEach(() => {
  vi.unstubAllGlobals();
});

const backup: ApiToken = {
  id: 4,
  name: 'Backup script',
  access: 'write',
  scopes: [],
  username: 'admin',
  created_by: 'admin',
  created_at: '2026-11-20T08:00:00Z',
  expires_at: '2026-12-20T08:00:00Z',
  last_used_at: '2026-11-25T10:00:00Z',
  expired: false,
};
const secret = 'cairn_pat_AAAAbbbbCCCCddddEEEEffffGGGGhhhhIIIIjjjjKKK';

describe('TokensSection', () => {
  it('creates a token and shows its text once, with a copy button', async () => {
    const writeText = vi.fn().mockResolvedValue(undefined);
    vi.stubGlobal('navigator', { ...navigator, clipboard: { writeText } });
    const engine = fakeEngine({
      'GET /api/auth/tokens': [{ body: { tokens: [] } }, { body: { tokens: [backup] } }],
      'POST /api/auth/tokens': {
        status: 201,
        body: { id: 4, token: secret, name: 'Backup script', access: 'write', scopes: [], username: 'admin', created_at: backup.created_at, expires_at: backup.expires_at },
      },
    });
    renderWithProviders(<TokensSection />);
    expect(await screen.findByText('No API tokens yet.')).toBeInTheDocument();

    await userEvent.click(screen.getByRole('button', { name: 'Create a token' }));
    let dialog = await screen.findByRole('dialog', { name: 'Create an API token' });
    await userEvent.click(within(dialog).getByRole('button', { name: 'Create token' }));
    expect(within(dialog).getByText('Give the token a name.')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/auth/tokens')).toHaveLength(0);

    await userEvent.type(within(dialog).getByLabelText('Name'), ' Backup script ');
    await userEvent.click(within(dialog).getByLabelText('Access'));
    await userEvent.click(await screen.findByRole('option', { name: 'Read and write' }));
    await userEvent.click(within(dialog).getByRole('button', { name: 'Create token' }));

    dialog = await screen.findByRole('dialog', { name: 'Copy your new token' });
    expect(within(dialog).getByTestId('new-token')).toHaveValue(secret);
    expect(within(dialog).getByText(/only time Cairn shows the token/)).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/auth/tokens')[0].body).toEqual({ name: 'Backup script', expires_in_days: 30, access: 'write' });
    await userEvent.click(within(dialog).getByRole('button', { name: 'Copy token' }));
    expect(writeText).toHaveBeenCalledWith(secret);

    await userEvent.click(within(dialog).getByRole('button', { name: 'Done' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(await screen.findByText('Backup script')).toBeInTheDocument();
    expect(screen.queryByText(secret)).not.toBeInTheDocument();
  });

  it('offers the device content scope for read tokens only, off by default, and lists it', async () => {
    const reader: ApiToken = { ...backup, id: 6, name: 'Inventory export', access: 'read', scopes: ['read:device-content'] };
    const engine = fakeEngine({
      'GET /api/auth/tokens': [{ body: { tokens: [] } }, { body: { tokens: [reader] } }],
      'POST /api/auth/tokens': {
        status: 201,
        body: { id: 6, token: secret, name: reader.name, access: 'read', scopes: reader.scopes, username: 'admin', created_at: reader.created_at, expires_at: reader.expires_at },
      },
    });
    renderWithProviders(<TokensSection />);
    expect(await screen.findByText('No API tokens yet.')).toBeInTheDocument();

    await userEvent.click(screen.getByRole('button', { name: 'Create a token' }));
    let dialog = await screen.findByRole('dialog', { name: 'Create an API token' });
    const box = within(dialog).getByRole('checkbox', { name: 'Read device content' });
    expect(box).not.toBeChecked();
    await userEvent.click(within(dialog).getByLabelText('Access'));
    await userEvent.click(await screen.findByRole('option', { name: 'Read and write' }));
    expect(within(dialog).queryByRole('checkbox', { name: 'Read device content' })).not.toBeInTheDocument();
    await userEvent.click(within(dialog).getByLabelText('Access'));
    await userEvent.click(await screen.findByRole('option', { name: 'Read only' }));

    await userEvent.type(within(dialog).getByLabelText('Name'), reader.name);
    await userEvent.click(within(dialog).getByRole('checkbox', { name: 'Read device content' }));
    await userEvent.click(within(dialog).getByRole('button', { name: 'Create token' }));
    dialog = await screen.findByRole('dialog', { name: 'Copy your new token' });
    expect(engine.callsTo('POST', '/api/auth/tokens')[0].body).toEqual({
      name: 'Inventory export',
      expires_in_days: 30,
      access: 'read',
      scopes: ['read:device-content'],
    });
    expect(within(dialog).getByText(/Read only, with device content; expires/)).toBeInTheDocument();
    await userEvent.click(within(dialog).getByRole('button', { name: 'Done' }));

    const row = await screen.findByTestId('token-row');
    expect(row).toHaveTextContent(/Read only, with device content · last used/);
    expect(within(row).getByText('read:device-content')).toBeInTheDocument();
  });

  it('lists last use and expiry, and shows the field the Engine refused', async () => {
    fakeEngine({
      'GET /api/auth/tokens': { body: { tokens: [backup, { ...backup, id: 5, name: 'Old', access: 'read', last_used_at: null, expired: true }] } },
      'POST /api/auth/tokens': {
        status: 400,
        body: { error: 'validation_failed', message: 'request is invalid', fields: { name: 'must be at most 100 characters' } },
      },
    });
    renderWithProviders(<TokensSection />);
    const rows = await screen.findAllByTestId('token-row');
    expect(rows[0]).toHaveTextContent(/Read and write · last used .* · expires/);
    expect(rows[1]).toHaveTextContent(/Read only · never used · expired/);
    expect(within(rows[1]).getByText('Expired')).toBeInTheDocument();

    await userEvent.click(screen.getByRole('button', { name: 'Create a token' }));
    const dialog = await screen.findByRole('dialog', { name: 'Create an API token' });
    await userEvent.type(within(dialog).getByLabelText('Name'), 'x');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Create token' }));
    expect(await within(dialog).findByText('must be at most 100 characters')).toBeInTheDocument();
  });

  it('revokes a token only after confirmation', async () => {
    const engine = fakeEngine({
      'GET /api/auth/tokens': [{ body: { tokens: [backup] } }, { body: { tokens: [] } }],
      'DELETE /api/auth/tokens/4': { status: 204 },
    });
    renderWithProviders(<TokensSection />);
    const row = await screen.findByTestId('token-row');
    await userEvent.click(within(row).getByRole('button', { name: 'Revoke' }));
    const dialog = await screen.findByRole('dialog', { name: 'Revoke Backup script?' });
    await userEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    expect(engine.callsTo('DELETE', '/api/auth/tokens/4')).toHaveLength(0);

    await userEvent.click(within(row).getByRole('button', { name: 'Revoke' }));
    await userEvent.click(within(await screen.findByRole('dialog', { name: 'Revoke Backup script?' })).getByRole('button', { name: 'Revoke token' }));
    expect(await screen.findByText('No API tokens yet.')).toBeInTheDocument();
    expect(engine.callsTo('DELETE', '/api/auth/tokens/4')).toHaveLength(1);
  });
});
