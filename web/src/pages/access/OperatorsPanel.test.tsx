import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { Operator } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { SudoGate } from '../../auth/SudoGate';
import { ADMIN, fakeEngine, validationFailed } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { ADMIN_OP, operator, site } from './fixtures';
import OperatorsPanel, { sitesText } from './OperatorsPanel';

// The first AG Grid render on a busy machine can be slow.
const SLOW = { timeout: 15_000 };
const SITES = [site(1, 'Head Office'), site(2, 'Branch'), site(3, 'Lab')];
const LAST_ADMIN = {
  status: 409,
  body: { error: 'last_admin', message: 'admin is the last active administrator; make another administrator first' },
};

/** With sudo, the prompt App mounts for account changes that need a fresh proof. */
function renderPanel({ sudo = false }: { sudo?: boolean } = {}) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user: ADMIN, signOut: async () => {} }}>
      <OperatorsPanel />
      {sudo && <SudoGate offerPasskey={false} />}
    </SessionContext.Provider>,
    { route: '/access' },
  );
}

function rowOf(username: string): HTMLElement {
  const cell = screen.getAllByText(username).find((el) => el.closest('.ag-center-cols-container .ag-row'));
  if (!cell) throw new Error(`no row for ${username}`);
  return cell.closest('.ag-row') as HTMLElement;
}

afterEach(() => vi.unstubAllGlobals());

describe('sitesText', () => {
  it('says all sites for admins, none when nothing is assigned, and names sorted otherwise', () => {
    const names = new Map([
      [1, 'Head Office'],
      [2, 'Branch'],
    ]);
    expect(sitesText(ADMIN_OP, names)).toBe('All sites');
    expect(sitesText(operator('a'), names)).toBe('None');
    expect(sitesText(operator('a', { site_ids: [1, 2, 9] }), names)).toBe('#9, Branch, Head Office');
    expect(sitesText(operator('a', { site_ids: [] }), names)).toBe('None');
  });
});

describe('OperatorsPanel', () => {
  it('lists operators with role, source, MFA, passkeys and site names', async () => {
    fakeEngine({
      'GET /api/users': {
        body: {
          users: [
            ADMIN_OP,
            operator('carol', { auth_source: 'directory', mfa_enabled: false, passkey_count: 2, site_ids: [2, 1] }),
          ],
        },
      },
      'GET /api/sites': { body: { sites: SITES } },
    });
    renderPanel();
    await screen.findByText('carol', {}, SLOW);
    await waitFor(() => expect(rowOf('carol').querySelector('[col-id="sites"]')).toHaveTextContent('Branch, Head Office'));
    const carol = rowOf('carol');
    expect(carol.querySelector('[col-id="role"]')).toHaveTextContent('Operator');
    expect(carol.querySelector('[col-id="auth_source"]')).toHaveTextContent('Directory');
    expect(carol.querySelector('[col-id="mfa_enabled"]')).toHaveTextContent('Not required');
    expect(carol.querySelector('[col-id="mfa_configured"]')).toHaveTextContent('Not set up');
    expect(carol.querySelector('[col-id="passkey_count"]')).toHaveTextContent('2');
    expect(carol.querySelector('[col-id="last_login_at"]')).toHaveTextContent('Never');
    const admin = rowOf('admin');
    expect(admin.querySelector('[col-id="sites"]')).toHaveTextContent('All sites');
    expect(admin.querySelector('[col-id="role"]')).toHaveTextContent(/^Admin$/);
    expect(admin).toHaveTextContent('you');
  });

  it('creates an operator, showing the Engine’s field errors under the right inputs', async () => {
    const user = userEvent.setup({ delay: null });
    const list: Operator[] = [ADMIN_OP];
    let attempt = 0;
    const engine = fakeEngine({
      'GET /api/users': () => ({ body: { users: list } }),
      'GET /api/sites': { body: { sites: SITES } },
      'POST /api/users': (call) => {
        attempt++;
        if (attempt === 1) return validationFailed({ username: 'username is already taken' }, 409, 'conflict');
        if (attempt === 2) return validationFailed({ password: 'must not contain the username', role: 'must be admin or operator' });
        const b = call.body as { username: string; role: string };
        const created = operator(b.username, { role: b.role });
        list.push(created);
        return { status: 201, body: created };
      },
    });
    renderPanel();
    await user.click(await screen.findByRole('button', { name: 'New operator' }, SLOW));
    const dialog = await screen.findByRole('dialog');

    // Checked before sending.
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    expect(within(dialog).getByText('Use 3 to 64 letters, digits or . _ - @')).toBeInTheDocument();
    expect(within(dialog).getByText('The password must be at least 12 characters.')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/users')).toHaveLength(0);

    await user.type(within(dialog).getByLabelText('Username'), 'operator1');
    await user.type(within(dialog).getByLabelText('Password'), 'a long operator password');
    await user.type(within(dialog).getByLabelText('Confirm password'), 'a long operator passwor');
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    expect(within(dialog).getByText('Does not match.')).toBeInTheDocument();
    await user.type(within(dialog).getByLabelText('Confirm password'), 'd');
    expect(within(dialog).getByLabelText('Role')).toHaveValue('operator');

    // 409 conflict: under Username.
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    expect(await within(dialog).findByText('username is already taken')).toHaveClass('Mui-error');
    expect(within(dialog).getByLabelText('Username')).toHaveAttribute('aria-invalid', 'true');
    expect(within(dialog).getByLabelText('Password')).toHaveAttribute('aria-invalid', 'false');
    expect(within(dialog).queryByTestId('error-alert')).not.toBeInTheDocument();

    // 400 with password and role fields.
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    expect(await within(dialog).findByText('must not contain the username')).toHaveClass('Mui-error');
    expect(within(dialog).getByText('must be admin or operator')).toHaveClass('Mui-error');
    expect(within(dialog).getByLabelText('Username')).toHaveAttribute('aria-invalid', 'false');

    await user.selectOptions(within(dialog).getByLabelText('Role'), 'admin');
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/users')[2].body).toEqual({
      username: 'operator1',
      password: 'a long operator password',
      role: 'admin',
    });
    expect(await screen.findByText('operator1')).toBeInTheDocument();
    expect(screen.getByTestId('operators-notice')).toHaveTextContent('Created operator1');
  });

  it('changes a role and explains a last_admin refusal', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/users': { body: { users: [ADMIN_OP, operator('bob')] } },
      'GET /api/sites': { body: { sites: SITES } },
      'POST /api/users/admin/role': LAST_ADMIN,
      'POST /api/users/bob/role': { body: operator('bob', { role: 'admin' }) },
    });
    renderPanel();
    await user.click(await screen.findByRole('button', { name: 'Actions for admin' }, SLOW));
    await user.click(await screen.findByRole('menuitem', { name: 'Change role…' }));
    let dialog = await screen.findByRole('dialog');
    expect(within(dialog).getByRole('button', { name: 'Change role' })).toBeDisabled();
    await user.selectOptions(within(dialog).getByLabelText('Role'), 'operator');
    expect(dialog).toHaveTextContent('This is your own account');
    await user.click(within(dialog).getByRole('button', { name: 'Change role' }));
    const alert = await within(dialog).findByTestId('error-alert');
    expect(alert).toHaveAttribute('data-code', 'last_admin');
    expect(alert).toHaveTextContent('Last administrator');
    expect(alert).toHaveTextContent('admin is the last active administrator; make another administrator first.');
    expect(alert).toHaveTextContent('keeps at least one active administrator');
    expect(engine.callsTo('POST', '/api/users/admin/role')[0].body).toEqual({ role: 'operator' });
    await user.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());

    await user.click(screen.getByRole('button', { name: 'Actions for bob' }));
    await user.click(await screen.findByRole('menuitem', { name: 'Change role…' }));
    dialog = await screen.findByRole('dialog');
    await user.selectOptions(within(dialog).getByLabelText('Role'), 'admin');
    await user.click(within(dialog).getByRole('button', { name: 'Change role' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/users/bob/role')[0].body).toEqual({ role: 'admin' });
    expect(screen.getByTestId('operators-notice')).toHaveTextContent('bob is now an administrator');
  });

  it('confirms each MFA action with what it does', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/users': {
        body: { users: [ADMIN_OP, operator('bob', { mfa_configured: true }), operator('dora', { mfa_enabled: false })] },
      },
      'GET /api/sites': { body: { sites: SITES } },
      'POST /api/users/bob/mfa': (call) => ({ body: operator('bob', { mfa_enabled: (call.body as { action: string }).action !== 'disable' }) }),
      'POST /api/users/dora/mfa': { body: operator('dora') },
    });
    renderPanel();

    await user.click(await screen.findByRole('button', { name: 'Actions for bob' }));
    expect(screen.queryByRole('menuitem', { name: /Require MFA/ })).not.toBeInTheDocument();
    await user.click(await screen.findByRole('menuitem', { name: 'Stop requiring MFA…' }));
    let dialog = await screen.findByRole('dialog');
    expect(dialog).toHaveTextContent('Stop requiring MFA for bob?');
    expect(dialog).toHaveTextContent('sign in with the password alone');
    await user.click(within(dialog).getByRole('button', { name: 'Stop requiring MFA' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());

    await user.click(screen.getByRole('button', { name: 'Actions for bob' }));
    await user.click(await screen.findByRole('menuitem', { name: 'Reset authenticator…' }));
    dialog = await screen.findByRole('dialog');
    expect(dialog).toHaveTextContent('set up a new authenticator app');
    await user.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/users/bob/mfa')).toHaveLength(1);

    await user.click(screen.getByRole('button', { name: 'Actions for bob' }));
    await user.click(await screen.findByRole('menuitem', { name: 'Reset authenticator…' }));
    dialog = await screen.findByRole('dialog');
    await user.click(within(dialog).getByRole('button', { name: 'Reset authenticator' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/users/bob/mfa').map((c) => c.body)).toEqual([{ action: 'disable' }, { action: 'reset' }]);
    expect(screen.getByTestId('operators-notice')).toHaveTextContent('set up a new one at their next sign-in');

    // dora: MFA not required and no authenticator: require it again; nothing to reset.
    await user.click(screen.getByRole('button', { name: 'Actions for dora' }));
    expect(await screen.findByRole('menuitem', { name: /Reset authenticator/ })).toHaveAttribute('aria-disabled', 'true');
    await user.click(screen.getByRole('menuitem', { name: 'Require MFA…' }));
    dialog = await screen.findByRole('dialog');
    expect(dialog).toHaveTextContent('code from an authenticator app at every sign-in');
    await user.click(within(dialog).getByRole('button', { name: 'Require MFA' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/users/dora/mfa')[0].body).toEqual({ action: 'enable' });
  });

  it('resets the password of local accounts only', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/users': { body: { users: [ADMIN_OP, operator('bob'), operator('carol', { auth_source: 'directory' })] } },
      'GET /api/sites': { body: { sites: SITES } },
      'POST /api/users/bob/reset_password': [validationFailed({ password: 'too common' }), { body: { api_tokens_revoked: 2 } }],
    });
    renderPanel();
    await user.click(await screen.findByRole('button', { name: 'Actions for carol' }, SLOW));
    expect(await screen.findByRole('menuitem', { name: /Reset password/ })).toHaveAttribute('aria-disabled', 'true');
    await user.keyboard('{Escape}');
    await waitFor(() => expect(screen.queryByRole('menu')).not.toBeInTheDocument());

    await user.click(screen.getByRole('button', { name: 'Actions for bob' }));
    await user.click(await screen.findByRole('menuitem', { name: 'Reset password…' }));
    const dialog = await screen.findByRole('dialog');
    await user.type(within(dialog).getByLabelText('Password'), 'password password');
    await user.type(within(dialog).getByLabelText('Confirm password'), 'password password');
    await user.click(within(dialog).getByRole('button', { name: 'Reset password' }));
    expect(await within(dialog).findByText('too common')).toHaveClass('Mui-error');
    await user.click(within(dialog).getByRole('button', { name: 'Reset password' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/users/bob/reset_password')[1].body).toEqual({ password: 'password password' });
    expect(screen.getByTestId('operators-notice')).toHaveTextContent('Password of bob reset');
    expect(screen.getByTestId('operators-notice')).toHaveTextContent('2 API tokens were revoked');
  });

  it('asks the admin to confirm who they are when the session is outside its re-authentication window, then retries', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/users': { body: { users: [ADMIN_OP, operator('bob')] } },
      'GET /api/sites': { body: { sites: SITES } },
      'POST /api/users/bob/reset_password': [
        { status: 403, body: { error: 'reauthentication_required', message: 'confirm it is you' } },
        { body: { api_tokens_revoked: 0 } },
      ],
      'POST /api/auth/reauth': [
        { status: 403, body: { error: 'reauthentication_required', message: 'confirm it is you: the password is not correct' } },
        { body: { reauthenticated_until: '2026-11-28T20:15:00Z' } },
      ],
    });
    renderPanel({ sudo: true });
    await user.click(await screen.findByRole('button', { name: 'Actions for bob' }, SLOW));
    await user.click(await screen.findByRole('menuitem', { name: /Reset password/ }));
    const dialog = await screen.findByRole('dialog');
    await user.type(within(dialog).getByLabelText(/^Password/), 'password password');
    await user.type(within(dialog).getByLabelText(/Confirm/), 'password password');
    await user.click(within(dialog).getByRole('button', { name: 'Reset password' }));

    expect(await screen.findByTestId('sudo-explainer')).toBeInTheDocument();
    const sudo = screen.getByTestId('sudo-explainer').closest('[role="dialog"]') as HTMLElement;
    await user.type(within(sudo).getByLabelText('Your password'), 'wrong');
    await user.type(within(sudo).getByLabelText('Authenticator code'), '123456');
    await user.click(within(sudo).getByRole('button', { name: 'Confirm' }));
    expect(await within(sudo).findByText(/the password is not correct/)).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/users/bob/reset_password')).toHaveLength(1);

    await user.clear(within(sudo).getByLabelText('Your password'));
    await user.type(within(sudo).getByLabelText('Your password'), 'admin password');
    await user.click(within(sudo).getByRole('button', { name: 'Confirm' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/auth/reauth')[1].body).toEqual({ password: 'admin password', totp_code: '123456' });
    const resets = engine.callsTo('POST', '/api/users/bob/reset_password');
    expect(resets).toHaveLength(2);
    expect(resets[1].body).toEqual({ password: 'password password' });
    expect(screen.getByTestId('operators-notice')).toHaveTextContent('Password of bob reset');
  });

  it('keeps the refusal when the admin cancels the confirmation', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/users': { body: { users: [ADMIN_OP, operator('bob')] } },
      'GET /api/sites': { body: { sites: SITES } },
      'POST /api/users/bob/role': { status: 403, body: { error: 'reauthentication_required', message: 'confirm it is you' } },
    });
    renderPanel({ sudo: true });
    await user.click(await screen.findByRole('button', { name: 'Actions for bob' }, SLOW));
    await user.click(await screen.findByRole('menuitem', { name: 'Change role…' }));
    const dialog = await screen.findByRole('dialog');
    await user.selectOptions(within(dialog).getByLabelText('Role'), 'admin');
    await user.click(within(dialog).getByRole('button', { name: 'Change role' }));
    expect(await screen.findByTestId('sudo-explainer')).toBeInTheDocument();
    const sudo = screen.getByTestId('sudo-explainer').closest('[role="dialog"]') as HTMLElement;
    await user.click(within(sudo).getByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(screen.queryByTestId('sudo-explainer')).not.toBeInTheDocument());
    const alert = await within(dialog).findByTestId('error-alert');
    expect(alert).toHaveAttribute('data-code', 'reauthentication_required');
    expect(engine.callsTo('POST', '/api/auth/reauth')).toHaveLength(0);
    expect(engine.callsTo('POST', '/api/users/bob/role')).toHaveLength(1);
  });

  it('assigns sites to one operator, starting from the current selection', async () => {
    const user = userEvent.setup({ delay: null });
    let bob = operator('bob', { site_ids: [1] });
    const engine = fakeEngine({
      'GET /api/users': () => ({ body: { users: [ADMIN_OP, bob] } }),
      'GET /api/sites': { body: { sites: SITES } },
      'POST /api/user_site_assignments/selection': { body: { assignments: { bob: [1] } } },
      'POST /api/user_site_assignments/assign': (call) => {
        const b = call.body as { usernames: string[]; site_ids: number[] };
        bob = { ...bob, site_ids: b.site_ids };
        return { body: { assignments: { bob: b.site_ids } } };
      },
    });
    renderPanel();
    await screen.findByText('bob', {}, SLOW);
    await waitFor(() => expect(rowOf('bob').querySelector('[col-id="sites"]')).toHaveTextContent('Head Office'));
    await user.click(screen.getByRole('button', { name: 'Sites of bob' }));
    const dialog = await screen.findByRole('dialog');
    expect(await within(dialog).findByRole('checkbox', { name: 'Head Office' })).toBeChecked();
    expect(engine.callsTo('POST', '/api/user_site_assignments/selection')[0].body).toEqual({ usernames: ['bob'] });
    expect(within(dialog).getByRole('checkbox', { name: 'Lab' })).not.toBeChecked();
    await user.click(within(dialog).getByRole('checkbox', { name: 'Lab' }));
    await user.click(within(dialog).getByRole('checkbox', { name: 'Head Office' }));
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/user_site_assignments/assign')[0].body).toEqual({ usernames: ['bob'], site_ids: [3] });
    await waitFor(() => expect(rowOf('bob').querySelector('[col-id="sites"]')).toHaveTextContent(/^Lab$/));
  });

  it('assigns sites to several selected operators at once', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/users': { body: { users: [ADMIN_OP, operator('bob', { site_ids: [1, 2] }), operator('carol', { site_ids: [1] })] } },
      'GET /api/sites': { body: { sites: SITES } },
      'POST /api/user_site_assignments/selection': { body: { assignments: { bob: [1, 2], carol: [1] } } },
      'POST /api/user_site_assignments/assign': (call) => ({ body: { assignments: {} , echo: call.body } }),
    });
    renderPanel();
    await screen.findByText('carol', {}, SLOW);
    expect(screen.getByRole('button', { name: 'Assign sites' })).toBeDisabled();
    for (const name of ['bob', 'carol']) {
      const row = rowOf(name);
      const rowIndex = row.getAttribute('row-index');
      const pinned = document.querySelector(`.ag-pinned-left-cols-container .ag-row[row-index="${rowIndex}"]`) as HTMLElement;
      await user.click(within(pinned).getByRole('checkbox'));
    }
    await user.click(await screen.findByRole('button', { name: 'Assign sites (2)' }));
    const dialog = await screen.findByRole('dialog');
    expect(dialog).toHaveTextContent('Sites of 2 operators');
    const head = await within(dialog).findByRole('checkbox', { name: 'Head Office' });
    expect(head).toBeChecked();
    // Branch: only bob has it.
    expect(within(dialog).getByRole('checkbox', { name: 'Branch' })).toHaveAttribute('data-indeterminate', 'true');
    expect(dialog).toHaveTextContent('half-ticked');
    await user.click(within(dialog).getByRole('checkbox', { name: 'Lab' }));
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/user_site_assignments/selection')[0].body).toEqual({ usernames: ['bob', 'carol'] });
    expect(engine.callsTo('POST', '/api/user_site_assignments/assign')[0].body).toEqual({
      usernames: ['bob', 'carol'],
      site_ids: [1, 3],
    });
  });

  it('deletes after confirmation and explains a last_admin refusal', async () => {
    const user = userEvent.setup({ delay: null });
    let list: Operator[] = [ADMIN_OP, operator('bob')];
    const engine = fakeEngine({
      'GET /api/users': () => ({ body: { users: list } }),
      'GET /api/sites': { body: { sites: SITES } },
      'DELETE /api/users/admin': LAST_ADMIN,
      'DELETE /api/users/bob': () => {
        list = list.filter((u) => u.username !== 'bob');
        return { status: 204 };
      },
    });
    renderPanel();
    await user.click(await screen.findByRole('button', { name: 'Actions for admin' }, SLOW));
    await user.click(await screen.findByRole('menuitem', { name: 'Delete…' }));
    let dialog = await screen.findByRole('dialog');
    expect(dialog).toHaveTextContent('Delete admin?');
    expect(dialog).toHaveTextContent('This is your own account');
    await user.click(within(dialog).getByRole('button', { name: 'Delete' }));
    expect(await within(dialog).findByTestId('error-alert')).toHaveTextContent('Last administrator');
    await user.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());

    await user.click(screen.getByRole('button', { name: 'Actions for bob' }));
    await user.click(await screen.findByRole('menuitem', { name: 'Delete…' }));
    dialog = await screen.findByRole('dialog');
    expect(dialog).toHaveTextContent('cannot be undone');
    expect(engine.callsTo('DELETE', '/api/users/bob')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Delete' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('DELETE', '/api/users/bob')).toHaveLength(1);
    await waitFor(() => expect(screen.queryByText('bob')).not.toBeInTheDocument());
  });
});
