import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { fakeEngine } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import AuditPanel from './AuditPanel';
import { entry } from './fixtures';

const SLOW = { timeout: 15_000 };

afterEach(() => vi.unstubAllGlobals());

describe('AuditPanel', () => {
  it('shows entries with outcome chips and loads older pages with next_before_id', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/server/audit': (call) =>
        call.query.get('before_id') === '41'
          ? { body: { entries: [entry(40, { action: 'POST /api/auth/login', username: 'mallory', role: '', status: 401, outcome: 'invalid_credentials', target: '' })], next_before_id: null } }
          : { body: { entries: [entry(42, { action: 'POST /api/users', target: 'username=operator1', api_token_id: 7 }), entry(41)], next_before_id: 41 } },
    });
    renderWithProviders(<AuditPanel />);
    expect(await screen.findByText('POST /api/users', {}, SLOW)).toBeInTheDocument();
    expect(screen.getByText('username=operator1')).toBeInTheDocument();
    expect(screen.getByText('token #7')).toBeInTheDocument(); // made with an API token
    expect(screen.getAllByTestId('audit-outcome').map((c) => c.textContent)).toEqual(['success', 'success']);
    expect(screen.getAllByTestId('audit-outcome')[0]).toHaveClass('MuiChip-colorSuccess');
    const first = engine.callsTo('GET', '/api/server/audit')[0];
    expect(first.query.get('limit')).toBe('200');
    expect(first.query.has('before_id')).toBe(false);
    expect(screen.getByTestId('audit-count')).toHaveTextContent('2 entries shown');

    await user.click(screen.getByRole('button', { name: 'Load older' }));
    expect(await screen.findByText('mallory')).toBeInTheDocument();
    expect(engine.callsTo('GET', '/api/server/audit')[1].query.get('before_id')).toBe('41');
    const failed = screen.getByText('invalid_credentials');
    expect(failed.closest('.MuiChip-root')).toHaveClass('MuiChip-colorError');
    expect(screen.getByText('POST /api/users')).toBeInTheDocument(); // older pages are appended
    expect(screen.queryByRole('button', { name: 'Load older' })).not.toBeInTheDocument();
    expect(screen.getByTestId('audit-count')).toHaveTextContent('3 entries, the oldest reached');
  });

  it('filters by username', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/server/audit': (call) =>
        call.query.get('username') === 'operator1'
          ? { body: { entries: [entry(50, { username: 'operator1', role: 'operator', action: 'POST /api/auth/logout', target: '' })], next_before_id: null } }
          : { body: { entries: [entry(51)], next_before_id: null } },
    });
    renderWithProviders(<AuditPanel />);
    expect(await screen.findByText('site_id=51', {}, SLOW)).toBeInTheDocument();
    await user.type(screen.getByLabelText('Username'), 'Operator1');
    expect(await screen.findByText('POST /api/auth/logout')).toBeInTheDocument();
    await waitFor(() => expect(screen.queryByText('site_id=51')).not.toBeInTheDocument());
    const calls = engine.callsTo('GET', '/api/server/audit');
    expect(calls[calls.length - 1].query.get('username')).toBe('operator1');
    expect(calls.length).toBe(2); // one request after typing pauses, not one per key

    await user.click(screen.getByRole('button', { name: 'Clear username filter' }));
    expect(await screen.findByText('site_id=51')).toBeInTheDocument();
  });
});
