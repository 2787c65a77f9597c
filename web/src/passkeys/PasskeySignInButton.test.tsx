import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { ADMIN, fakeEngine } from '../test/fakeEngine';
import { renderWithProviders } from '../test/render';
import { LoginPage } from '../auth/LoginPage';
import { fakeCredentials, removeFakeCredentials } from './testCredentials';

afterEach(() => {
  vi.unstubAllGlobals();
  removeFakeCredentials();
});

const requestOptions = { challenge: 'AQID', rpId: 'localhost', userVerification: 'required' };

describe('Sign in with a passkey', () => {
  it('runs the ceremony and lands in the app with the signed-in user', async () => {
    const creds = fakeCredentials({});
    const engine = fakeEngine({
      'POST /api/auth/passkeys/authenticate/options': { body: { ceremony_id: 'c-9', options: requestOptions } },
      'POST /api/auth/passkeys/authenticate/verify': { body: { token: 't', csrf_token: 'x', user: ADMIN } },
    });
    const onSignedIn = vi.fn();
    renderWithProviders(<LoginPage onSignedIn={onSignedIn} />);
    await userEvent.click(screen.getByRole('button', { name: 'Sign in with a passkey' }));
    await waitFor(() => expect(onSignedIn).toHaveBeenCalledWith(ADMIN));
    const publicKey = (creds.get.mock.calls[0] as unknown as [CredentialRequestOptions])[0].publicKey!;
    expect(publicKey.rpId).toBe('localhost');
    const verify = engine.callsTo('POST', '/api/auth/passkeys/authenticate/verify')[0].body as Record<string, unknown>;
    expect(verify.ceremony_id).toBe('c-9');
    expect((verify.credential as { response: { userHandle: string } }).response.userHandle).toBe('AAE');
  });

  it('shows a refused passkey and stays on the sign-in page', async () => {
    fakeCredentials({});
    fakeEngine({
      'POST /api/auth/passkeys/authenticate/options': { body: { ceremony_id: 'c-9', options: requestOptions } },
      'POST /api/auth/passkeys/authenticate/verify': {
        status: 401,
        body: { error: 'invalid_credentials', message: 'this passkey was not accepted' },
      },
    });
    const onSignedIn = vi.fn();
    renderWithProviders(<LoginPage onSignedIn={onSignedIn} />);
    await userEvent.click(screen.getByRole('button', { name: 'Sign in with a passkey' }));
    expect(await screen.findByTestId('error-alert')).toHaveTextContent('this passkey was not accepted');
    expect(onSignedIn).not.toHaveBeenCalled();
  });

  it('is hidden where the browser has no WebAuthn', () => {
    fakeEngine({});
    renderWithProviders(<LoginPage onSignedIn={vi.fn()} />);
    expect(screen.queryByRole('button', { name: 'Sign in with a passkey' })).not.toBeInTheDocument();
  });
});
