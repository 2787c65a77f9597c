import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router';
import { SessionContext } from '../../../auth/session';
import { ADMIN, fakeEngine } from '../../../test/fakeEngine';
import { renderWithProviders } from '../../../test/render';
import { WithToasts } from '../../../test/toasts';
import DevicePage from '../DevicePage';
import { bareDetails } from '../fixtures';
import { crumbs, joinPath } from './FilesTab';

function renderPage(route: string) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user: ADMIN, signOut: async () => {} }}>
      <WithToasts>
        <Routes>
          <Route path="/devices/:hostname/:tab?" element={<DevicePage />} />
        </Routes>
      </WithToasts>
    </SessionContext.Provider>,
    { route },
  );
}

const T = '2026-11-26T10:00:00Z';
const entry = (path: string, type: string, size = 0) => ({ name: path.split('/').pop()!, path, type, size, modified_at: T });

function children(path: string) {
  if (path === '/') return { path, entries: [entry('/srv', 'dir')], truncated: false };
  if (path === '/srv') return { path, entries: [entry('/srv/data', 'dir'), entry('/srv/notes.txt', 'file', 5), entry('/srv/l', 'symlink', 4)], truncated: false };
  return { path, entries: [], truncated: false };
}

afterEach(() => vi.unstubAllGlobals());

describe('path helpers', () => {
  it('builds breadcrumbs and joins for Linux and Windows paths', () => {
    expect(crumbs('/srv/data')).toEqual([
      { label: '/', path: '/' },
      { label: 'srv', path: '/srv' },
      { label: 'data', path: '/srv/data' },
    ]);
    expect(crumbs('C:\\Users\\me').map((c) => c.path)).toEqual(['C:\\', 'C:\\Users', 'C:\\Users\\me']);
    expect(crumbs('\\\\srv\\share\\a').map((c) => c.path)).toEqual(['\\\\srv\\share', '\\\\srv\\share\\a']);
    expect(joinPath('/', 'a')).toBe('/a');
    expect(joinPath('C:\\', 'a')).toBe('C:\\a');
    expect(joinPath('C:\\x', 'a')).toBe('C:\\x\\a');
  });
});

describe('Files tab', () => {
  it('navigates, edits a file, makes a folder, renames, pastes and deletes', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/device/details/lin-1': { body: bareDetails('lin-1') },
      'GET /api/device/files/lin-1/roots': { body: { roots: [{ path: '/', type: 'fixed', label: '/' }] } },
      'GET /api/device/files/lin-1/children': (c) => ({ body: children(c.query.get('path') ?? '') }),
      'GET /api/device/files/lin-1/text': { body: { path: '/srv/notes.txt', content: 'hello', size: 5, modified_at: T } },
      'POST /api/device/files/lin-1/text': { body: { path: '/srv/notes.txt', size: 11 } },
      'POST /api/device/files/lin-1/mkdir': { body: { entries: [entry('/srv/new', 'dir')] } },
      'POST /api/device/files/lin-1/rename': { body: { entries: [entry('/srv/renamed.txt', 'file', 5)] } },
      'POST /api/device/files/lin-1/paste': { body: { entries: [entry('/srv/data/notes.txt', 'file', 5)] } },
      'POST /api/device/files/lin-1/delete': { body: { entries: [entry('/srv/l', 'symlink', 4)] } },
    });
    renderPage('/devices/lin-1/files');
    await user.click(await screen.findByRole('button', { name: 'srv' }));
    const table = await screen.findByRole('table', { name: 'Entries' });
    await within(table).findByRole('button', { name: 'notes.txt' });
    expect(within(table).getByText('symlink')).toBeInTheDocument();
    expect(within(screen.getByRole('navigation', { name: 'Path' })).getByRole('button', { name: 'srv' })).toBeInTheDocument();

    // The editor loads the text and saves what was typed.
    await user.click(within(table).getByRole('button', { name: 'notes.txt' }));
    const editor = await screen.findByRole('textbox', { name: 'File content' });
    await waitFor(() => expect(editor).toHaveValue('hello'));
    await user.type(editor, ' world');
    await user.click(screen.getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device/files/lin-1/text')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/device/files/lin-1/text')[0].body).toEqual({ path: '/srv/notes.txt', content: 'hello world' });
    await waitFor(() => expect(screen.queryByRole('textbox', { name: 'File content' })).not.toBeInTheDocument());

    await user.click(screen.getByRole('button', { name: 'New folder' }));
    let dialog = await screen.findByRole('dialog', { name: 'New folder' });
    await user.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'new');
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device/files/lin-1/mkdir')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/device/files/lin-1/mkdir')[0].body).toEqual({ path: '/srv/new' });
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());

    await user.click(screen.getByRole('checkbox', { name: 'Select notes.txt' }));
    await user.click(screen.getByRole('button', { name: 'Rename' }));
    dialog = await screen.findByRole('dialog', { name: 'Rename notes.txt' });
    const name = within(dialog).getByRole('textbox', { name: 'Name' });
    await user.clear(name);
    await user.type(name, 'a/b');
    expect(within(dialog).getByRole('button', { name: 'Rename' })).toBeDisabled();
    await user.clear(name);
    await user.type(name, 'renamed.txt');
    await user.click(within(dialog).getByRole('button', { name: 'Rename' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device/files/lin-1/rename')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/device/files/lin-1/rename')[0].body).toEqual({ path: '/srv/notes.txt', new_name: 'renamed.txt' });
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());

    // Copy, then paste into a subfolder.
    await user.click(screen.getByRole('checkbox', { name: 'Select notes.txt' }));
    await user.click(screen.getByRole('button', { name: 'Copy' }));
    await user.click(within(table).getByRole('button', { name: 'data' }));
    await screen.findByText('Empty folder');
    await user.click(screen.getByRole('button', { name: 'Paste (1)' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device/files/lin-1/paste')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/device/files/lin-1/paste')[0].body).toEqual({ paths: ['/srv/notes.txt'], destination: '/srv/data' });

    // Delete asks first.
    await user.click(within(screen.getByRole('navigation', { name: 'Path' })).getByRole('button', { name: 'srv' }));
    await user.click(await screen.findByRole('checkbox', { name: 'Select l' }));
    await user.click(screen.getByRole('button', { name: 'Delete' }));
    dialog = await screen.findByRole('dialog', { name: 'Delete l?' });
    expect(engine.callsTo('POST', '/api/device/files/lin-1/delete')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Delete' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device/files/lin-1/delete')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/device/files/lin-1/delete')[0].body).toEqual({ paths: ['/srv/l'] });
  });

  it('asks about conflicts before uploading, then sends the chosen policy as multipart', async () => {
    const user = userEvent.setup({ delay: null });
    let form: FormData | undefined;
    const engine = fakeEngine({
      'GET /api/device/details/lin-1': { body: bareDetails('lin-1') },
      'GET /api/device/files/lin-1/roots': { body: { roots: [{ path: '/', type: 'fixed', label: '/' }] } },
      'GET /api/device/files/lin-1/children': (c) => ({ body: children(c.query.get('path') ?? '') }),
      'POST /api/device/files/lin-1/upload/conflicts': { body: { destination: '/', conflicts: [entry('/srv', 'dir')] } },
    });
    const fetchMock = vi.mocked(globalThis.fetch);
    const inner = fetchMock.getMockImplementation()!;
    fetchMock.mockImplementation(async (input, init = {}) => {
      if (String(input).endsWith('/upload') && init.body instanceof FormData) {
        form = init.body;
        return new Response(JSON.stringify({ transfer_id: 't1', direction: 'upload', state: 'completed', bytes_total: 2, bytes_done: 2, items: [], error: null, created_at: T, updated_at: T, content_name: 'srv' }), { status: 202 });
      }
      return inner(input, init);
    });
    renderPage('/devices/lin-1/files');
    await screen.findByRole('button', { name: 'srv' });
    await user.upload(screen.getByTestId('upload-input'), new File(['hi'], 'srv', { type: 'text/plain' }));
    const dialog = await screen.findByRole('dialog', { name: 'Some names already exist' });
    expect(engine.callsTo('POST', '/api/device/files/lin-1/upload/conflicts')[0].body).toEqual({ destination: '/', names: ['srv'] });
    await user.click(within(dialog).getByRole('button', { name: 'Overwrite' }));
    await waitFor(() => expect(form).toBeDefined());
    expect(form!.get('destination')).toBe('/');
    expect(form!.get('conflict')).toBe('overwrite');
    expect((form!.get('file') as File).name).toBe('srv');
    await screen.findByText(/Upload srv — completed/);
  });
});
