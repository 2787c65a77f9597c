import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router';
import type { User } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import AccessPage from './AccessPage';
import { ADMIN_OP, entry } from './fixtures';

function renderPage(user: User = ADMIN, route = '/access') {
  return renderWithProviders(
    <SessionContext.Provider value={{ user, signOut: async () => {} }}>
      <Routes>
        <Route path="/access/:tab?" element={<AccessPage />} />
      </Routes>
    </SessionContext.Provider>,
    { route },
  );
}

afterEach(() => vi.unstubAllGlobals());

describe('AccessPage', () => {
  it('tells an operator who is not an administrator that the page is for administrators, and asks nothing', async () => {
    const engine = fakeEngine({});
    renderPage({ ...ADMIN, username: 'op', role: 'operator' });
    expect(screen.getByTestId('admins-only')).toHaveTextContent('Administrators only');
    expect(screen.queryByRole('tab')).not.toBeInTheDocument();
    expect(engine.calls).toHaveLength(0);
  });

  it('shows the tabs, the operators first, and the real panel of each tab', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/directory/providers': { body: { providers: [] } },
      'GET /api/directory/sites': { body: { sites: [] } },
      'GET /api/credentials': { body: { credentials: [] } },
      'GET /api/github/token': { body: { has_token: false, source: null, rate_limit: null } },
      'GET /api/users': { body: { users: [ADMIN_OP] } },
      'GET /api/sites': { body: { sites: [] } },
      'GET /api/server/audit': { body: { entries: [entry(1)], next_before_id: null } },
    });
    renderPage();
    expect(screen.getAllByRole('tab').map((t) => t.textContent)).toEqual([
      'Operators',
      'Directory',
      'Credentials',
      'Source token',
      'Audit',
    ]);
    expect(screen.getByRole('tab', { name: 'Operators' })).toHaveAttribute('aria-selected', 'true');
    expect(await screen.findByRole('button', { name: 'New operator' })).toBeInTheDocument();

    // Each tab mounts its real panel, which asks the Engine for its data.
    for (const [tab, request] of [
      ['Directory', 'GET /api/directory/providers'],
      ['Credentials', 'GET /api/credentials'],
      ['Source token', 'GET /api/github/token'],
    ]) {
      await user.click(screen.getByRole('tab', { name: tab }));
      await waitFor(() => expect(engine.calls.map((c) => `${c.method} ${c.path}`)).toContain(request));
      expect(screen.queryByTestId('coming-soon')).not.toBeInTheDocument();
    }

    await user.click(screen.getByRole('tab', { name: 'Audit' }));
    expect(await screen.findByText('site_id=1')).toBeInTheDocument();
  });

  it('opens the tab named in the address', async () => {
    fakeEngine({ 'GET /api/server/audit': { body: { entries: [], next_before_id: null } } });
    renderPage(ADMIN, '/access/audit');
    expect(screen.getByRole('tab', { name: 'Audit' })).toHaveAttribute('aria-selected', 'true');
    expect(await screen.findByText('No entries yet.')).toBeInTheDocument();
  });
});
