import { wireSite } from '../test/wire';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { Site, User } from '../api/types';
import { SessionContext } from '../auth/session';
import { ADMIN, fakeEngine, validationFailed } from '../test/fakeEngine';
import { renderWithProviders } from '../test/render';
import SitesPage from './SitesPage';

function site(id: number, name: string, slug: string, devices = 0): Site {
  return wireSite({
    site_id: id,
    name,
    site_worker_slug: slug,
    site_worker_name: `site:${slug}`,
    device_count: devices,
  });
}

function renderPage(user: User = ADMIN) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user, signOut: async () => {} }}>
      <SitesPage />
    </SessionContext.Provider>,
    { route: '/sites' },
  );
}

afterEach(() => vi.unstubAllGlobals());

describe('SitesPage', () => {
  it('lists sites in the grid', async () => {
    fakeEngine({ 'GET /api/sites': { body: { sites: [site(1, 'Head office', 'head-office', 3)] } } });
    renderPage();
    expect(await screen.findByText('Head office')).toBeInTheDocument();
    expect(screen.getByText('site:head-office')).toBeInTheDocument();
  });

  it('suggests a slug from the name and creates the site', async () => {
    const user = userEvent.setup({ delay: null });
    const sites: Site[] = [];
    const engine = fakeEngine({
      'GET /api/sites': () => ({ body: { sites } }),
      'POST /api/sites': (call) => {
        const b = call.body as { name: string; site_worker_slug: string };
        const s = site(7, b.name, b.site_worker_slug);
        sites.push(s);
        return { status: 201, body: s };
      },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Create site' }));
    const dialog = await screen.findByRole('dialog');
    await user.type(within(dialog).getByLabelText('Name'), 'Zürich Branch 2');
    expect(within(dialog).getByLabelText('Slug')).toHaveValue('zurich-branch-2');
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/sites')[0].body).toEqual({ name: 'Zürich Branch 2', site_worker_slug: 'zurich-branch-2' });
    expect(await screen.findByText('Zürich Branch 2')).toBeInTheDocument();
  });

  it('shows a duplicate slug under the Slug field', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/sites': { body: { sites: [site(1, 'Head office', 'head-office')] } },
      'POST /api/sites': validationFailed({ site_worker_slug: 'slug is already used by another site' }, 409, 'conflict'),
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Create site' }));
    const dialog = await screen.findByRole('dialog');
    await user.type(within(dialog).getByLabelText('Name'), 'Head office');
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    const message = await within(dialog).findByText('slug is already used by another site');
    expect(message).toHaveClass('Mui-error');
    expect(within(dialog).getByLabelText('Slug')).toHaveAttribute('aria-invalid', 'true');
    expect(within(dialog).getByLabelText('Name')).toHaveAttribute('aria-invalid', 'false');
  });

  it('checks slug length before sending', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({ 'GET /api/sites': { body: { sites: [] } } });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Create site' }));
    const dialog = await screen.findByRole('dialog');
    await user.type(within(dialog).getByLabelText('Name'), 'Lab');
    await user.clear(within(dialog).getByLabelText('Slug'));
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    expect(within(dialog).getByText('Enter a slug.')).toBeInTheDocument();
    await user.type(within(dialog).getByLabelText('Slug'), 'x'.repeat(52));
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    expect(within(dialog).getByText('At most 51 characters.')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/sites')).toHaveLength(0);
  });

  it('renames a site, sending the slug only when it changed', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: [site(4, 'Lab', 'lab')] } },
      'POST /api/sites/rename': (call) => ({ body: { ...site(4, 'Lab', 'lab'), ...(call.body as object) } }),
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Rename Lab' }));
    let dialog = await screen.findByRole('dialog');
    await user.clear(within(dialog).getByLabelText('Name'));
    await user.type(within(dialog).getByLabelText('Name'), 'Research lab');
    expect(within(dialog).getByLabelText('Slug')).toHaveValue('lab'); // a rename does not re-suggest
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('POST', '/api/sites/rename')[0].body).toEqual({ site_id: 4, name: 'Research lab' });

    await user.click(screen.getByRole('button', { name: 'Rename Lab' }));
    dialog = await screen.findByRole('dialog');
    await user.clear(within(dialog).getByLabelText('Slug'));
    await user.type(within(dialog).getByLabelText('Slug'), 'research');
    expect(within(dialog).getByText(/moves the site's worker/)).toBeInTheDocument();
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/sites/rename')).toHaveLength(2));
    expect(engine.callsTo('POST', '/api/sites/rename')[1].body).toEqual({ site_id: 4, name: 'Lab', site_worker_slug: 'research' });
  });

  it('deletes after confirmation and shows site_not_empty', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: [site(9, 'Warehouse', 'warehouse', 2)] } },
      'POST /api/sites/delete': { status: 409, body: { error: 'site_not_empty', message: 'site Warehouse still has 2 devices' } },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Delete Warehouse' }));
    const dialog = await screen.findByRole('dialog');
    expect(dialog).toHaveTextContent('Delete Warehouse?');
    expect(dialog).toHaveTextContent('still has devices');
    await user.click(within(dialog).getByRole('button', { name: 'Delete' }));
    expect(await within(dialog).findByText('site Warehouse still has 2 devices')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/sites/delete')[0].body).toEqual({ site_ids: [9] });
  });

  it('links the device count to the site drilldown and lets everyone open enrollment', async () => {
    fakeEngine({ 'GET /api/sites': { body: { sites: [site(3, 'Lab', 'lab', 4)] } } });
    renderPage({ ...ADMIN, username: 'op', role: 'operator' });
    expect(await screen.findByRole('link', { name: 'Devices of Lab' })).toHaveAttribute('href', '/devices?site=3');
    expect(screen.getByRole('button', { name: 'Enroll agents in Lab' })).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Rename Lab' })).not.toBeInTheDocument();
  });

  it('hides changes from operators who are not administrators', async () => {
    fakeEngine({ 'GET /api/sites': { body: { sites: [site(1, 'HQ', 'hq')] } } });
    renderPage({ ...ADMIN, username: 'op', role: 'operator' });
    expect(await screen.findByText('HQ')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Create site' })).not.toBeInTheDocument();
    expect(screen.getByText(/Only administrators can create, rename or delete sites/)).toBeInTheDocument();
  });
});
