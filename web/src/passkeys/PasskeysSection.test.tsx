import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { fakeEngine } from '../test/fakeEngine';
import { renderWithProviders } from '../test/render';
import { PasskeysSection } from './PasskeysSection';
import { fakeCredentials, removeFakeCredentials } from './testCredentials';

afterEach(() => {
  vi.unstubAllGlobals();
  removeFakeCredentials();
});

const laptop = { id: 7, label: 'Laptop', created_at: '2026-11-21T08:00:00Z', last_used_at: null };
const creationOptions = {
  rp: { id: 'localhost', name: 'Cairn' },
  user: { id: 'AAAAAAAAAAE', name: 'admin', displayName: 'admin' },
  challenge: 'AQID',
  pubKeyCredParams: [{ type: 'public-key', alg: -7 }],
};

async function confirmIdentity() {
  const dialog = await screen.findByRole('dialog', { name: 'Add a passkey' });
  await userEvent.type(within(dialog).getByLabelText('Your password'), 'my password 123');
  await userEvent.type(within(dialog).getByLabelText('Authenticator code'), '123456');
  await userEvent.click(within(dialog).getByRole('button', { name: 'Confirm and add' }));
}

describe('PasskeysSection', () => {
  it('registers a passkey: options, the authenticator, then verify with the label', async () => {
    const creds = fakeCredentials({});
    const engine = fakeEngine({
      'GET /api/auth/passkeys': [{ body: { passkeys: [] } }, { body: { passkeys: [laptop] } }],
      'POST /api/auth/passkeys/register/options': { body: { ceremony_id: 'c-1', options: creationOptions } },
      'POST /api/auth/passkeys/register/verify': { status: 201, body: laptop },
    });
    renderWithProviders(<PasskeysSection />);
    expect(await screen.findByText('No passkeys yet.')).toBeInTheDocument();

    await userEvent.click(screen.getByRole('button', { name: 'Add a passkey' }));
    expect(await screen.findByText('Give the passkey a name.')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/auth/passkeys/register/options')).toHaveLength(0);

    await userEvent.type(screen.getByLabelText('New passkey name'), ' Laptop ');
    await userEvent.click(screen.getByRole('button', { name: 'Add a passkey' }));
    // Adding a way in needs the password and a code again.
    const dialog = await screen.findByRole('dialog', { name: 'Add a passkey' });
    await userEvent.click(within(dialog).getByRole('button', { name: 'Confirm and add' }));
    expect(within(dialog).getByText('Enter your password.')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/auth/passkeys/register/options')).toHaveLength(0);
    await userEvent.type(within(dialog).getByLabelText('Your password'), 'my password 123');
    await userEvent.type(within(dialog).getByLabelText('Authenticator code'), '123456');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Confirm and add' }));
    expect(await screen.findByText('Laptop')).toBeInTheDocument();
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/auth/passkeys/register/options')[0].body).toEqual({
      password: 'my password 123',
      totp_code: '123456',
    });

    const publicKey = (creds.create.mock.calls[0] as unknown as [CredentialCreationOptions])[0].publicKey!;
    expect(Array.from(new Uint8Array(publicKey.challenge as ArrayBuffer))).toEqual([1, 2, 3]);
    const verify = engine.callsTo('POST', '/api/auth/passkeys/register/verify')[0].body as Record<string, unknown>;
    expect(verify.ceremony_id).toBe('c-1');
    expect(verify.label).toBe('Laptop');
    expect((verify.credential as { rawId: string }).rawId).toBe('BAU');
  });

  it('says so when the operator cancels on the device, without calling verify', async () => {
    fakeCredentials({ create: async () => Promise.reject(new DOMException('cancelled', 'NotAllowedError')) });
    const engine = fakeEngine({
      'GET /api/auth/passkeys': { body: { passkeys: [] } },
      'POST /api/auth/passkeys/register/options': { body: { ceremony_id: 'c-1', options: creationOptions } },
    });
    renderWithProviders(<PasskeysSection />);
    await userEvent.type(await screen.findByLabelText('New passkey name'), 'Phone');
    await userEvent.click(screen.getByRole('button', { name: 'Add a passkey' }));
    await confirmIdentity();
    expect(await screen.findByTestId('passkey-ceremony-problem')).toHaveTextContent('cancelled or timed out');
    expect(engine.callsTo('POST', '/api/auth/passkeys/register/verify')).toHaveLength(0);
  });

  it('shows a refused re-authentication in the dialog', async () => {
    fakeCredentials({});
    const engine = fakeEngine({
      'GET /api/auth/passkeys': { body: { passkeys: [] } },
      'POST /api/auth/passkeys/register/options': {
        status: 403,
        body: { error: 'reauthentication_required', message: 'confirm it is you: the password is not correct' },
      },
    });
    renderWithProviders(<PasskeysSection />);
    await userEvent.type(await screen.findByLabelText('New passkey name'), 'Phone');
    await userEvent.click(screen.getByRole('button', { name: 'Add a passkey' }));
    await confirmIdentity();
    expect(await screen.findByTestId('error-alert')).toHaveTextContent('the password is not correct');
    expect(screen.getByRole('dialog', { name: 'Add a passkey' })).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/auth/passkeys/register/verify')).toHaveLength(0);
  });

  it('renames and, after confirmation, removes a passkey', async () => {
    fakeCredentials({});
    const engine = fakeEngine({
      'GET /api/auth/passkeys': { body: { passkeys: [laptop] } },
      'PATCH /api/auth/passkeys/7': { body: { ...laptop, label: 'Work laptop' } },
      'DELETE /api/auth/passkeys/7': { status: 204 },
    });
    renderWithProviders(<PasskeysSection />);
    const row = await screen.findByTestId('passkey-row');
    expect(row).toHaveTextContent('never used');

    await userEvent.click(within(row).getByRole('button', { name: 'Rename' }));
    const name = await screen.findByLabelText('Name');
    await userEvent.clear(name);
    await userEvent.type(name, 'Work laptop');
    await userEvent.click(screen.getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(engine.callsTo('PATCH', '/api/auth/passkeys/7')).toHaveLength(1));
    expect(engine.callsTo('PATCH', '/api/auth/passkeys/7')[0].body).toEqual({ label: 'Work laptop' });

    await userEvent.click(within(await screen.findByTestId('passkey-row')).getByRole('button', { name: 'Remove' }));
    expect(engine.callsTo('DELETE', '/api/auth/passkeys/7')).toHaveLength(0);
    await userEvent.click(await screen.findByRole('button', { name: 'Remove passkey' }));
    await waitFor(() => expect(engine.callsTo('DELETE', '/api/auth/passkeys/7')).toHaveLength(1));
  });

  it('cancelling the removal keeps the passkey', async () => {
    fakeCredentials({});
    const engine = fakeEngine({ 'GET /api/auth/passkeys': { body: { passkeys: [laptop] } } });
    renderWithProviders(<PasskeysSection />);
    await userEvent.click(within(await screen.findByTestId('passkey-row')).getByRole('button', { name: 'Remove' }));
    await userEvent.click(await screen.findByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(screen.queryByRole('button', { name: 'Remove passkey' })).not.toBeInTheDocument());
    expect(engine.callsTo('DELETE', '/api/auth/passkeys/7')).toHaveLength(0);
  });

  it('shows the Engine explaining that passkeys need a name, not an IP address', async () => {
    fakeCredentials({});
    fakeEngine({
      'GET /api/auth/passkeys': {
        status: 409,
        body: { error: 'passkeys_unavailable', message: 'passkeys need the Engine to be reached by name' },
      },
    });
    renderWithProviders(<PasskeysSection />);
    expect(await screen.findByTestId('error-alert')).toHaveTextContent('reached by name');
  });
});
