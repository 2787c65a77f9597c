import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { ForceResetResult } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import ServerPage from '../ServerPage';
import { MasterCipherSection } from './MasterCipherSection';

afterEach(() => vi.unstubAllGlobals());

const STATUS = {
  configured: true,
  unlocked: true,
  algorithm: 'AES-256-GCM',
  kdf: { algorithm: 'argon2id', time: 3, memory_kib: 65536, threads: 2 },
  created_at: '2026-11-21T08:00:00Z',
  rotated_at: null,
};
const ROTATED = { ...STATUS, rotated_at: '2026-11-26T15:00:00Z' };
const REAUTH_REQUIRED = { status: 403, body: { error: 'reauthentication_required', message: 'the authenticator code is not correct' } };

function renderSection(cipherReset?: (r: ForceResetResult) => void, user = ADMIN) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user, signOut: async () => {}, cipherReset }}>
      <MasterCipherSection />
    </SessionContext.Provider>,
  );
}

async function fillPassphrases(user: ReturnType<typeof userEvent.setup>, current: string, next: string, repeat = next) {
  await screen.findByTestId('cipher-state');
  await user.click(screen.getByRole('button', { name: 'Rotate passphrase' }));
  const dialog = await screen.findByRole('dialog', { name: 'Rotate the passphrase' });
  await user.type(within(dialog).getByLabelText('Current passphrase'), current);
  await user.type(within(dialog).getByLabelText('New passphrase'), next);
  await user.type(within(dialog).getByLabelText('Repeat the new passphrase'), repeat);
  await user.click(within(dialog).getByRole('button', { name: 'Continue' }));
}

describe('MasterCipherSection', () => {
  it('shows the cipher state', async () => {
    fakeEngine({ 'GET /api/aegis/status': { body: STATUS } });
    renderSection();
    expect(await screen.findByTestId('cipher-state')).toHaveTextContent('Unlocked');
    expect(screen.getByText('argon2id, 3 passes, 64 MiB, 2 threads')).toBeInTheDocument();
    expect(screen.getByTestId('cipher-rotated-at')).toHaveTextContent('Never');
  });

  it('rotates the passphrase after the operator proves who they are', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/aegis/status': { body: STATUS },
      'POST /api/aegis/rotate': [REAUTH_REQUIRED, { body: ROTATED }],
    });
    renderSection();

    // Passphrases are checked before anything is sent.
    await fillPassphrases(user, 'current passphrase', 'short', 'short');
    let dialog = screen.getByRole('dialog', { name: 'Rotate the passphrase' });
    expect(within(dialog).getByText('The new passphrase must be at least 12 characters.')).toBeInTheDocument();
    await user.clear(within(dialog).getByLabelText('New passphrase'));
    await user.type(within(dialog).getByLabelText('New passphrase'), 'a brand new passphrase');
    await user.click(within(dialog).getByRole('button', { name: 'Continue' }));
    expect(within(dialog).getByText('Does not match.')).toBeInTheDocument();
    await user.clear(within(dialog).getByLabelText('Repeat the new passphrase'));
    await user.type(within(dialog).getByLabelText('Repeat the new passphrase'), 'a brand new passphrase');
    await user.click(within(dialog).getByRole('button', { name: 'Continue' }));

    dialog = await screen.findByRole('dialog', { name: 'Rotate the passphrase' });
    await user.type(within(dialog).getByLabelText('Your password'), 'admin password!');
    await user.type(within(dialog).getByLabelText('Authenticator code'), '123456');
    await user.click(within(dialog).getByRole('button', { name: 'Rotate passphrase' }));
    expect(await within(dialog).findByText('the authenticator code is not correct')).toBeInTheDocument();
    await user.clear(within(dialog).getByLabelText('Authenticator code'));
    await user.type(within(dialog).getByLabelText('Authenticator code'), '654321');
    await user.click(within(dialog).getByRole('button', { name: 'Rotate passphrase' }));

    expect(await screen.findByTestId('cipher-rotated')).toHaveTextContent('Other Engine processes are locked');
    expect(screen.queryByRole('dialog')).not.toBeInTheDocument();
    expect(screen.getByTestId('cipher-rotated-at')).not.toHaveTextContent('Never');
    const calls = engine.callsTo('POST', '/api/aegis/rotate');
    expect(calls).toHaveLength(2);
    expect(calls[1].body).toEqual({
      current_passphrase: 'current passphrase',
      new_passphrase: 'a brand new passphrase',
      password: 'admin password!',
      totp_code: '654321',
    });
  });

  it('goes back to the passphrases, kept, when the current one is wrong', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/aegis/status': { body: STATUS },
      'POST /api/aegis/rotate': { status: 401, body: { error: 'invalid_passphrase', message: 'the current passphrase is not correct' } },
    });
    renderSection();
    await fillPassphrases(user, 'wrong passphrase!', 'a brand new passphrase');
    const reauth = await screen.findByRole('dialog', { name: 'Rotate the passphrase' });
    await user.type(within(reauth).getByLabelText('Your password'), 'admin password!');
    await user.type(within(reauth).getByLabelText('Authenticator code'), '123456');
    await user.click(within(reauth).getByRole('button', { name: 'Rotate passphrase' }));
    expect(await within(reauth).findByText('the current passphrase is not correct')).toBeInTheDocument();
    await user.click(within(reauth).getByRole('button', { name: 'Cancel' }));
    const back = await screen.findByRole('dialog', { name: 'Rotate the passphrase' });
    expect(within(back).getByLabelText('Current passphrase')).toHaveValue('wrong passphrase!');
    expect(within(back).getByLabelText('New passphrase')).toHaveValue('a brand new passphrase');
  });

  it('force-resets only after the phrase is typed and the operator proves who they are, and hands the codes on', async () => {
    const user = userEvent.setup({ delay: null });
    const result = { phase: 'aegis_setup_required', recovery_code: 'recovery-123', setup_code: 'ABCDE-FGHIJ-KLMNO-PQRST' };
    const engine = fakeEngine({
      'GET /api/aegis/status': { body: STATUS },
      'POST /api/aegis/force_reset': { body: result },
    });
    const cipherReset = vi.fn();
    renderSection(cipherReset);
    await screen.findByTestId('cipher-state');
    await user.click(screen.getByRole('button', { name: 'Force reset' }));
    let dialog = await screen.findByRole('dialog', { name: 'Force reset the master cipher?' });
    expect(within(dialog).getByTestId('force-reset-consequences')).toHaveTextContent('Every session ends, yours included');
    const next = within(dialog).getByRole('button', { name: 'Continue' });
    expect(next).toBeDisabled();
    await user.type(within(dialog).getByLabelText('Type FORCE RESET to confirm'), 'force reset');
    expect(next).toBeDisabled();
    await user.clear(within(dialog).getByLabelText('Type FORCE RESET to confirm'));
    await user.type(within(dialog).getByLabelText('Type FORCE RESET to confirm'), 'FORCE RESET');
    await user.click(next);

    dialog = await screen.findByRole('dialog', { name: 'Force reset the master cipher' });
    await user.type(within(dialog).getByLabelText('Your password'), 'admin password!');
    await user.type(within(dialog).getByLabelText('Authenticator code'), '123456');
    await user.click(within(dialog).getByRole('button', { name: 'Reset the master cipher' }));
    await waitFor(() => expect(cipherReset).toHaveBeenCalledWith(result));
    expect(engine.callsTo('POST', '/api/aegis/force_reset')[0].body).toEqual({
      confirm: 'FORCE RESET',
      password: 'admin password!',
      totp_code: '123456',
    });
  });

  it('offers a passkey in the re-authentication when the operator has one', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({ 'GET /api/aegis/status': { body: STATUS } });
    renderSection(undefined, { ...ADMIN, passkey_count: 1 });
    await fillPassphrases(user, 'current passphrase', 'a brand new passphrase');
    const dialog = await screen.findByRole('dialog', { name: 'Rotate the passphrase' });
    expect(within(dialog).getByRole('button', { name: 'Use a passkey' })).toBeInTheDocument();
  });
});

describe('ServerPage', () => {
  it('shows the master cipher to administrators only', async () => {
    const engine = fakeEngine({
      'GET /api/aegis/status': { body: STATUS },
      'GET /api/server/workers': { body: { engine: null, sites: [] } },
    });
    const { unmount } = renderWithProviders(
      <SessionContext.Provider value={{ user: ADMIN, signOut: async () => {} }}>
        <ServerPage />
      </SessionContext.Provider>,
    );
    expect(await screen.findByTestId('master-cipher')).toBeInTheDocument();
    unmount();
    engine.calls.length = 0;

    renderWithProviders(
      <SessionContext.Provider value={{ user: { ...ADMIN, role: 'operator' }, signOut: async () => {} }}>
        <ServerPage />
      </SessionContext.Provider>,
    );
    await waitFor(() => expect(engine.callsTo('GET', '/api/server/workers')).toHaveLength(1));
    expect(screen.queryByTestId('master-cipher')).not.toBeInTheDocument();
    expect(engine.callsTo('GET', '/api/aegis/status')).toHaveLength(0);
  });
});
