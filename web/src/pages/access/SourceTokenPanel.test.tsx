import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { SourceTokenStatus, User } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine, validationFailed } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import SourceTokenPanel from './SourceTokenPanel';

const NONE: SourceTokenStatus = { has_token: false, source: null, secret_status: null, rate_limit: null };
const STORED: SourceTokenStatus = {
  has_token: true,
  source: 'stored',
  secret_status: 'ok',
  rate_limit: { limit: 5000, remaining: 4321, reset_at: '2030-01-01T00:00:00Z' },
};

function renderPanel(user: User = ADMIN) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user, signOut: async () => {} }}>
      <SourceTokenPanel />
    </SessionContext.Provider>,
  );
}

afterEach(() => vi.unstubAllGlobals());

describe('SourceTokenPanel', () => {
  it('shows the status with the rate limit', async () => {
    fakeEngine({ 'GET /api/github/token': { body: STORED } });
    renderPanel();
    expect(await screen.findByText('Token configured')).toBeInTheDocument();
    expect(screen.getByText(/stored in the Engine/)).toBeInTheDocument();
    expect(screen.getByText(/4,321 of 5,000 requests left/)).toBeInTheDocument();
  });

  it('warns when the stored token is unreadable after a cipher reset', async () => {
    fakeEngine({ 'GET /api/github/token': { body: { ...STORED, secret_status: 'unreadable', rate_limit: null } } });
    renderPanel();
    expect(await screen.findByText(/master cipher that was reset since/)).toBeInTheDocument();
  });

  it('sets a token, showing a refused one under the field', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/github/token': { body: NONE },
      'POST /api/github/token': [validationFailed({ token: 'was refused by the source host' }), { body: STORED }],
    });
    renderPanel();
    expect(await screen.findByText('No token configured')).toBeInTheDocument();
    const field = screen.getByLabelText('Token');
    expect(field).toHaveAttribute('type', 'password');

    await user.click(screen.getByRole('button', { name: 'Save token' }));
    expect(screen.getByText('Enter a token.')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/github/token')).toHaveLength(0);

    await user.type(field, 'ghp_wrong');
    await user.click(screen.getByRole('button', { name: 'Save token' }));
    expect(await screen.findByText('was refused by the source host')).toHaveClass('Mui-error');

    await user.clear(screen.getByLabelText('Token'));
    await user.type(screen.getByLabelText('Token'), 'ghp_right');
    await user.click(screen.getByRole('button', { name: 'Save token' }));
    expect(await screen.findByText('Token configured')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/github/token').map((c) => c.body)).toEqual([{ token: 'ghp_wrong' }, { token: 'ghp_right' }]);
    expect(screen.getByLabelText('Replace token')).toHaveValue('');
  });

  it('clears the stored token after confirmation', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/github/token': { body: STORED },
      'POST /api/github/token': { body: NONE },
    });
    renderPanel();
    await user.click(await screen.findByRole('button', { name: 'Clear' }));
    const dialog = await screen.findByRole('dialog');
    await user.click(within(dialog).getByRole('button', { name: 'Clear token' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/github/token')[0].body).toEqual({ token: null });
    expect(await screen.findByText('No token configured')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Clear' })).not.toBeInTheDocument();
  });

  it('does not ask the Engine for operators', async () => {
    const engine = fakeEngine({});
    renderPanel({ ...ADMIN, username: 'olga', role: 'operator' });
    expect(screen.getByText(/Only administrators/)).toBeInTheDocument();
    expect(engine.calls).toHaveLength(0);
  });
});
