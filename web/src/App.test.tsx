import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { App } from './App';
import { ADMIN, fakeEngine, MFA, validationFailed } from './test/fakeEngine';
import { renderWithProviders } from './test/render';

const UNAUTHORIZED = { status: 401, body: { error: 'unauthorized', message: 'sign in first' } };

beforeEach(() => {
  document.cookie = 'cairn_csrf=csrf-abc; path=/';
});
afterEach(() => {
  vi.unstubAllGlobals();
  document.cookie = 'cairn_csrf=; expires=Thu, 01 Jan 1970 00:00:00 GMT; path=/';
});

async function enterSetupCode(user: ReturnType<typeof userEvent.setup>, code = 'ABCDE-FGHIJ-KLMNO-PQRST') {
  await user.type(await screen.findByLabelText('Setup code'), code);
  await user.click(screen.getByRole('button', { name: 'Continue' }));
}

describe('first-run wizard', () => {
  it('sets the cipher, creates the administrator, verifies the authenticator and ends on sign-in', async () => {
    const user = userEvent.setup({ delay: null });
    let phase = 'aegis_setup_required';
    const engine = fakeEngine({
      'GET /api/bootstrap/state': () => ({ body: { phase } }),
      'POST /api/bootstrap/aegis/setup': () => {
        phase = 'admin_setup_required';
        return { body: { phase } };
      },
      'POST /api/bootstrap/admin/setup': () => ({
        body: { phase: 'admin_setup_required', pending_token: 'pend-1', mfa: MFA },
      }),
      'POST /api/bootstrap/admin/mfa/verify': () => {
        phase = 'login_required';
        return { body: { phase } };
      },
      'GET /api/auth/me': UNAUTHORIZED,
    });
    renderWithProviders(<App />);

    // Step 0: the setup code the server printed, asked for first.
    expect(await screen.findByRole('heading', { name: 'Enter the setup code' })).toBeInTheDocument();
    expect(within(screen.getByLabelText('Setup progress')).getByText('Setup code')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Continue' }));
    expect(screen.getByText('Enter the setup code.')).toBeInTheDocument();
    await user.type(screen.getByLabelText('Setup code'), ' ABCDE-FGHIJ-KLMNO-PQRST ');
    await user.click(screen.getByRole('button', { name: 'Continue' }));

    // Step 1: master cipher, with client-side checks first.
    expect(await screen.findByRole('heading', { name: 'Set the master cipher' })).toBeInTheDocument();
    expect(within(screen.getByLabelText('Setup progress')).getByText('Master cipher')).toBeInTheDocument();
    await user.type(screen.getByLabelText('Passphrase'), 'too short');
    await user.click(screen.getByRole('button', { name: 'Set master cipher' }));
    expect(screen.getByText('The passphrase must be at least 12 characters.')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/bootstrap/aegis/setup')).toHaveLength(0);

    await user.clear(screen.getByLabelText('Passphrase'));
    await user.type(screen.getByLabelText('Passphrase'), 'correct horse battery staple');
    await user.type(screen.getByLabelText('Confirm passphrase'), 'correct horse battery stapl');
    await user.click(screen.getByRole('button', { name: 'Set master cipher' }));
    expect(screen.getByText('Does not match.')).toBeInTheDocument();
    await user.type(screen.getByLabelText('Confirm passphrase'), 'e');
    await user.click(screen.getByRole('button', { name: 'Set master cipher' }));

    // Step 2: administrator.
    expect(await screen.findByRole('heading', { name: 'Create the administrator' })).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/bootstrap/aegis/setup')[0].body).toEqual({
      passphrase: 'correct horse battery staple',
      setup_code: 'ABCDE-FGHIJ-KLMNO-PQRST',
    });
    await user.type(screen.getByLabelText('Username'), 'admin');
    await user.type(screen.getByLabelText('Password'), 'a long enough password');
    await user.type(screen.getByLabelText('Confirm password'), 'a long enough password');
    await user.click(screen.getByRole('button', { name: 'Create administrator' }));

    // Step 3: authenticator: QR code and the secret in text.
    expect(await screen.findByRole('heading', { name: 'Set up the authenticator' })).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/bootstrap/admin/setup')[0].body).toEqual({
      username: 'admin',
      password: 'a long enough password',
      setup_code: 'ABCDE-FGHIJ-KLMNO-PQRST',
    });
    expect(screen.getByTestId('totp-secret')).toHaveTextContent(MFA.secret);
    const qr = await screen.findByTestId('totp-qr');
    expect(qr.getAttribute('src')).toMatch(/^data:image\/svg\+xml/);

    await user.type(screen.getByLabelText('Authentication code'), '12a3456');
    expect(screen.getByLabelText('Authentication code')).toHaveValue('123456');
    await user.click(screen.getByRole('button', { name: 'Verify and finish' }));

    // Step 4: sign in.
    expect(await screen.findByRole('heading', { name: 'Sign in' })).toBeInTheDocument();
    expect(screen.getByText(/Setup is complete/)).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/bootstrap/admin/mfa/verify')[0].body).toEqual({
      pending_token: 'pend-1',
      code: '123456',
    });
  });

  it('shows server field errors on the matching input', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/bootstrap/state': { body: { phase: 'admin_setup_required' } },
      'POST /api/bootstrap/admin/setup': validationFailed({ username: 'must use letters, digits, . _ - @' }),
    });
    renderWithProviders(<App />);
    await enterSetupCode(user);
    await user.type(await screen.findByLabelText('Username'), 'admin');
    await user.type(screen.getByLabelText('Password'), 'a long enough password');
    await user.type(screen.getByLabelText('Confirm password'), 'a long enough password');
    await user.click(screen.getByRole('button', { name: 'Create administrator' }));
    const field = await screen.findByText('must use letters, digits, . _ - @');
    expect(field).toHaveClass('Mui-error');
    expect(screen.getByLabelText('Username')).toHaveAttribute('aria-invalid', 'true');
    expect(screen.queryByTestId('error-alert')).not.toBeInTheDocument();
  });

  it('tells a wrong code apart and lets the operator retry', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/bootstrap/state': { body: { phase: 'admin_setup_required' } },
      'POST /api/bootstrap/admin/setup': { body: { phase: 'admin_setup_required', pending_token: 'p', mfa: MFA } },
      'POST /api/bootstrap/admin/mfa/verify': { status: 401, body: { error: 'invalid_mfa_code', message: 'invalid code' } },
    });
    renderWithProviders(<App />);
    await enterSetupCode(user);
    await user.type(await screen.findByLabelText('Username'), 'admin');
    await user.type(screen.getByLabelText('Password'), 'a long enough password');
    await user.type(screen.getByLabelText('Confirm password'), 'a long enough password');
    await user.click(screen.getByRole('button', { name: 'Create administrator' }));
    await user.type(await screen.findByLabelText('Authentication code'), '000000');
    await user.click(screen.getByRole('button', { name: 'Verify and finish' }));
    expect(await screen.findByText('Invalid code.')).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Verify and finish' })).toBeEnabled();
  });

  it('asks for the setup code again when the Engine refuses it', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/bootstrap/state': { body: { phase: 'aegis_setup_required' } },
      'POST /api/bootstrap/aegis/setup': {
        status: 403,
        body: { error: 'setup_code_required', message: 'enter the setup code' },
      },
    });
    renderWithProviders(<App />);
    await enterSetupCode(user, 'WRONG-CODE');
    await user.type(await screen.findByLabelText('Passphrase'), 'correct horse battery staple');
    await user.type(screen.getByLabelText('Confirm passphrase'), 'correct horse battery staple');
    await user.click(screen.getByRole('button', { name: 'Set master cipher' }));
    expect(await screen.findByRole('heading', { name: 'Enter the setup code' })).toBeInTheDocument();
    expect(screen.getByText(/That setup code was not accepted/)).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/bootstrap/aegis/setup')[0].body).toEqual({
      passphrase: 'correct horse battery staple',
      setup_code: 'WRONG-CODE',
    });
  });

  it('recovers an administrator with the recovery code', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/bootstrap/state': { body: { phase: 'admin_recovery_required' } },
      'POST /api/bootstrap/admin/recover': { body: { phase: 'admin_recovery_required', pending_token: 'r', mfa: MFA } },
    });
    renderWithProviders(<App />);
    expect(await screen.findByRole('heading', { name: 'Recover an administrator' })).toBeInTheDocument();
    expect(within(screen.getByLabelText('Setup progress')).getByText('Recover administrator')).toBeInTheDocument();
    await user.type(screen.getByLabelText('Username'), 'admin');
    await user.type(screen.getByLabelText('New password'), 'a brand new password');
    await user.type(screen.getByLabelText('Confirm new password'), 'a brand new password');
    await user.click(screen.getByRole('button', { name: 'Recover administrator' }));
    expect(screen.getByText('Enter the recovery code.')).toBeInTheDocument();
    await user.type(screen.getByLabelText('Recovery code'), 'RC-1234');
    await user.click(screen.getByRole('button', { name: 'Recover administrator' }));
    expect(await screen.findByTestId('totp-secret')).toHaveTextContent(MFA.secret);
    expect(engine.callsTo('POST', '/api/bootstrap/admin/recover')[0].body).toEqual({
      username: 'admin',
      password: 'a brand new password',
      recovery_code: 'RC-1234',
    });
  });
});

describe('unlock', () => {
  it('shows a wrong passphrase on the field and continues to sign-in when unlocked', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/bootstrap/state': { body: { phase: 'aegis_unlock_required' } },
      'POST /api/bootstrap/aegis/unlock': [
        { status: 401, body: { error: 'invalid_passphrase', message: 'wrong passphrase' } },
        { body: { phase: 'login_required' } },
      ],
      'GET /api/auth/me': UNAUTHORIZED,
    });
    renderWithProviders(<App />);
    await user.type(await screen.findByLabelText('Passphrase'), 'not the passphrase');
    await user.click(screen.getByRole('button', { name: 'Unlock' }));
    expect(await screen.findByText('Wrong passphrase.')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Unlock' }));
    expect(await screen.findByRole('heading', { name: 'Sign in' })).toBeInTheDocument();
  });
});

describe('sign-in', () => {
  function loginEngine(extra: Parameters<typeof fakeEngine>[0] = {}) {
    return fakeEngine({
      'GET /api/bootstrap/state': { body: { phase: 'login_required' } },
      'GET /api/auth/me': UNAUTHORIZED,
      ...extra,
    });
  }

  async function fillLogin(user: ReturnType<typeof userEvent.setup>) {
    await user.type(await screen.findByLabelText('Username'), 'admin');
    await user.type(screen.getByLabelText('Password'), 'a long enough password');
    await user.click(screen.getByRole('button', { name: 'Sign in' }));
  }

  it('sets up the authenticator when the account has none, then opens the console', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = loginEngine({
      'POST /api/auth/login': { body: { mfa_required: true, pending_token: 'pt', mfa_setup: MFA } },
      'POST /api/auth/mfa/verify': { body: { token: 't', csrf_token: 'c', user: ADMIN } },
      'GET /api/devices': { body: { devices: [] } },
      'GET /api/sites': { body: { sites: [] } },
    });
    renderWithProviders(<App />, { route: '/devices' });
    await fillLogin(user);
    expect(await screen.findByRole('heading', { name: 'Set up your authenticator' })).toBeInTheDocument();
    expect(screen.getByTestId('totp-secret')).toHaveTextContent(MFA.secret);
    await user.type(screen.getByLabelText('Authentication code'), '654321');
    await user.click(screen.getByRole('button', { name: 'Verify and sign in' }));

    expect(await screen.findByTestId('current-username')).toHaveTextContent('admin');
    expect(await screen.findByRole('heading', { name: 'Devices' })).toBeInTheDocument();
    expect(await screen.findByTestId('devices-empty')).toHaveTextContent('No devices yet');
    expect(engine.callsTo('POST', '/api/auth/mfa/verify')[0].body).toEqual({ pending_token: 'pt', code: '654321' });
    const nav = screen.getByRole('navigation', { name: 'Main' });
    for (const label of ['Devices', 'Software', 'Metadata', 'Sites', 'Alerts', 'Patches', 'Automation', 'Access', 'Server']) {
      expect(within(nav).getByText(label)).toBeInTheDocument();
    }
  });

  it('asks only for the code when an authenticator is set up', async () => {
    const user = userEvent.setup({ delay: null });
    loginEngine({ 'POST /api/auth/login': { body: { mfa_required: true, pending_token: 'pt', mfa_setup: null } } });
    renderWithProviders(<App />);
    await fillLogin(user);
    expect(await screen.findByRole('heading', { name: 'Two-step verification' })).toBeInTheDocument();
    expect(screen.queryByTestId('totp-secret')).not.toBeInTheDocument();
  });

  it('says wrong credentials without telling which', async () => {
    const user = userEvent.setup({ delay: null });
    loginEngine({ 'POST /api/auth/login': { status: 401, body: { error: 'invalid_credentials', message: 'x' } } });
    renderWithProviders(<App />);
    await fillLogin(user);
    expect(await screen.findByText('Wrong username or password.')).toBeInTheDocument();
  });

  it('shows a rate limit with its Retry-After and blocks the button', async () => {
    const user = userEvent.setup({ delay: null });
    loginEngine({
      'POST /api/auth/login': {
        status: 429,
        body: { error: 'rate_limited', message: 'too many attempts' },
        headers: { 'Retry-After': '30' },
      },
    });
    renderWithProviders(<App />);
    await fillLogin(user);
    const alert = await screen.findByTestId('error-alert');
    expect(alert).toHaveTextContent('Rate limited');
    expect(alert).toHaveTextContent('Try again in 30 s.');
    expect(screen.getByRole('button', { name: 'Sign in' })).toBeDisabled();
  });

  it('goes to the unlock screen when the cipher is locked', async () => {
    const user = userEvent.setup({ delay: null });
    let phase = 'login_required';
    fakeEngine({
      'GET /api/bootstrap/state': () => ({ body: { phase } }),
      'GET /api/auth/me': UNAUTHORIZED,
      'POST /api/auth/login': () => {
        phase = 'aegis_unlock_required';
        return { status: 423, body: { error: 'aegis_locked', message: 'locked' } };
      },
    });
    renderWithProviders(<App />);
    await fillLogin(user);
    expect(await screen.findByRole('heading', { name: 'Unlock the master cipher' })).toBeInTheDocument();
  });
});

describe('signed in', () => {
  it('signs out with the CSRF header and returns to sign-in', async () => {
    const user = userEvent.setup({ delay: null });
    let signedIn = true;
    const engine = fakeEngine({
      'GET /api/bootstrap/state': { body: { phase: 'login_required' } },
      'GET /api/auth/me': () => (signedIn ? { body: ADMIN } : UNAUTHORIZED),
      'POST /api/auth/logout': () => {
        signedIn = false;
        return { status: 204 };
      },
    });
    renderWithProviders(<App />, { route: '/alerts' });
    await user.click(await screen.findByTestId('user-menu-button'));
    await user.click(await screen.findByRole('menuitem', { name: 'Sign out' }));
    expect(await screen.findByRole('heading', { name: 'Sign in' })).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/auth/logout')[0].headers['X-CSRF-Token']).toBe('csrf-abc');
  });

  it('returns to sign-in with a notice when a Token route answers 401', async () => {
    let signedIn = true;
    fakeEngine({
      'GET /api/bootstrap/state': { body: { phase: 'login_required' } },
      'GET /api/auth/me': () => (signedIn ? { body: ADMIN } : UNAUTHORIZED),
      'GET /api/server/workers': () => {
        signedIn = false;
        return UNAUTHORIZED;
      },
    });
    renderWithProviders(<App />, { route: '/server' });
    expect(await screen.findByRole('heading', { name: 'Sign in' })).toBeInTheDocument();
    expect(screen.getByText('Your session ended. Sign in again.')).toBeInTheDocument();
  });

  it('shows the profile and resets the authenticator after confirmation', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/bootstrap/state': { body: { phase: 'login_required' } },
      'GET /api/auth/me': { body: ADMIN },
      'POST /api/auth/mfa/reset': { status: 204 },
      'POST /api/auth/password/reset': [
        { status: 401, body: { error: 'invalid_credentials', message: 'wrong' } },
        { status: 204 },
      ],
    });
    renderWithProviders(<App />, { route: '/profile' });
    expect(await screen.findByTestId('profile-username')).toHaveTextContent('admin');
    expect(screen.getByTestId('profile-mfa')).toHaveTextContent('Authenticator app set up');

    await user.type(screen.getByLabelText('Current password'), 'wrong password!');
    await user.type(screen.getByLabelText('New password'), 'another long password');
    await user.type(screen.getByLabelText('Confirm new password'), 'another long password');
    await user.click(screen.getByRole('button', { name: 'Change password' }));
    expect(await screen.findByText('Wrong password.')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Change password' }));
    expect(await screen.findByTestId('password-changed')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/auth/password/reset')[1].body).toEqual({
      current_password: 'wrong password!',
      new_password: 'another long password',
    });

    await user.click(screen.getByRole('button', { name: 'Reset authenticator' }));
    const dialog = await screen.findByRole('dialog');
    expect(dialog).toHaveTextContent('next time you sign in');
    await user.type(within(dialog).getByLabelText('Password'), 'another long password');
    await user.click(within(dialog).getByRole('button', { name: 'Reset authenticator' }));
    expect(await screen.findByTestId('mfa-reset-done')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/auth/mfa/reset')[0]).toMatchObject({
      body: { password: 'another long password' },
      headers: { 'X-CSRF-Token': 'csrf-abc' },
    });
  });
});

describe('forced cipher reset', () => {
  it('shows both codes once after the session ends, then sets up the new cipher with the setup code', async () => {
    const user = userEvent.setup({ delay: null });
    let phase = 'login_required';
    const engine = fakeEngine({
      'GET /api/bootstrap/state': () => ({ body: { phase } }),
      'GET /api/auth/me': () => (phase === 'login_required' ? { body: ADMIN } : UNAUTHORIZED),
      'GET /api/server/workers': () => (phase === 'login_required' ? { body: { engine: null, sites: [] } } : UNAUTHORIZED),
      'GET /api/aegis/status': {
        body: { configured: true, unlocked: true, algorithm: 'AES-256-GCM', kdf: null, created_at: null, rotated_at: null },
      },
      'POST /api/aegis/force_reset': () => {
        phase = 'aegis_setup_required';
        return { body: { phase, recovery_code: 'recovery-code-1', setup_code: 'SETUP-CODE-AFTER-RESET' } };
      },
      'POST /api/bootstrap/aegis/setup': () => {
        phase = 'admin_recovery_required';
        return { body: { phase } };
      },
    });
    renderWithProviders(<App />, { route: '/server' });
    await screen.findByTestId('cipher-state');
    await user.click(screen.getByRole('button', { name: 'Force reset' }));
    let dialog = await screen.findByRole('dialog');
    await user.type(within(dialog).getByLabelText('Type FORCE RESET to confirm'), 'FORCE RESET');
    await user.click(within(dialog).getByRole('button', { name: 'Continue' }));
    dialog = await screen.findByRole('dialog', { name: 'Force reset the master cipher' });
    await user.type(within(dialog).getByLabelText('Your password'), 'admin password!');
    await user.type(within(dialog).getByLabelText('Authenticator code'), '123456');
    await user.click(within(dialog).getByRole('button', { name: 'Reset the master cipher' }));

    expect(await screen.findByTestId('reset-setup-code')).toHaveTextContent('SETUP-CODE-AFTER-RESET');
    expect(screen.getByTestId('reset-recovery-code')).toHaveTextContent('recovery-code-1');
    const next = screen.getByRole('button', { name: 'Continue to set up the new cipher' });
    expect(next).toBeDisabled();
    await user.click(screen.getByLabelText('I have saved both codes'));
    await user.click(next);

    // The setup code the reset showed fills the wizard's first step.
    expect(await screen.findByRole('heading', { name: 'Set the master cipher' })).toBeInTheDocument();
    await user.type(screen.getByLabelText('Passphrase'), 'a new master passphrase');
    await user.type(screen.getByLabelText('Confirm passphrase'), 'a new master passphrase');
    await user.click(screen.getByRole('button', { name: 'Set master cipher' }));
    expect(await screen.findByRole('heading', { name: 'Recover an administrator' })).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/bootstrap/aegis/setup')[0].body).toEqual({
      passphrase: 'a new master passphrase',
      setup_code: 'SETUP-CODE-AFTER-RESET',
    });
  });
});

describe('live device updates', () => {
  // Just enough EventSource for the console's stream hook.
  class StreamStub {
    static CLOSED = 2;
    static last: StreamStub | null = null;
    readyState = 1;
    onopen: (() => void) | null = null;
    onerror: (() => void) | null = null;
    private listeners = new Map<string, ((ev: MessageEvent) => void)[]>();
    constructor() {
      StreamStub.last = this;
    }
    addEventListener(type: string, fn: (ev: MessageEvent) => void) {
      this.listeners.set(type, [...(this.listeners.get(type) ?? []), fn]);
    }
    close() {}
    emit(type: string, data: string) {
      for (const fn of this.listeners.get(type) ?? []) fn(new MessageEvent(type, { data }));
    }
  }

  it('refetches the device list when the event stream reports a device change', async () => {
    vi.stubGlobal('EventSource', StreamStub);
    let hostname = 'web-1';
    const engine = fakeEngine({
      'GET /api/bootstrap/state': { body: { phase: 'login_required' } },
      'GET /api/auth/me': { body: ADMIN },
      'GET /api/sites': { body: { sites: [] } },
      'GET /api/devices': () => ({
        body: {
          devices: [
            {
              guid: 'g-1', agent_id: 'a-1', hostname, description: '', site_id: 1, site_name: 'HQ', last_seen: null,
              agent_socket: false, connectivity_status: 'Offline', operating_system: 'Debian', agent_version: '0.4.0',
              trust_state: 'active', metadata_fields: {},
            },
          ],
        },
      }),
    });
    renderWithProviders(<App />, { route: '/devices' });
    expect(await screen.findByText('web-1')).toBeInTheDocument();
    const before = engine.callsTo('GET', '/api/devices').length;
    hostname = 'web-1-renamed';
    act(() => StreamStub.last!.emit('device_inventory_changed', JSON.stringify({ guid: 'g-1' })));
    expect(await screen.findByText('web-1-renamed')).toBeInTheDocument();
    expect(engine.callsTo('GET', '/api/devices').length).toBeGreaterThan(before);
  });
});

describe('engine unreachable', () => {
  it('offers a retry', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => Promise.reject(new TypeError('Failed to fetch'))));
    renderWithProviders(<App />);
    expect(await screen.findByText('Cannot reach the Engine')).toBeInTheDocument();
    await waitFor(() => expect(screen.getByRole('button', { name: 'Try again' })).toBeInTheDocument());
  });
});
