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

const ROOTS = {
  roots: [
    { path: 'HKLM', label: 'HKEY_LOCAL_MACHINE' },
    { path: 'HKCU', label: 'HKEY_CURRENT_USER' },
  ],
};

type Body = { path: string; value?: unknown };

function children(path: string) {
  if (path === 'HKCU') return { path, subkeys: [{ name: 'Software', path: 'HKCU\\Software' }], values: [], truncated: false };
  if (path === 'HKCU\\Software') {
    return {
      path,
      subkeys: [],
      values: [
        { name: '', type: 'REG_SZ', data: 'default' },
        { name: 'Count', type: 'REG_DWORD', data: 16 },
        { name: 'Odd', type: 'REG_LINK', data: 'abcd' },
        { name: 'Huge', type: 'REG_BINARY', data: null },
      ],
      truncated: true,
    };
  }
  return { path, subkeys: [], values: [], truncated: false };
}

afterEach(() => vi.unstubAllGlobals());

describe('Registry tab', () => {
  it('is shown for Windows devices only', async () => {
    fakeEngine({ 'GET /api/device/details/lin-1': { body: bareDetails('lin-1') } });
    renderPage('/devices/lin-1/registry');
    await screen.findByRole('tab', { name: 'Summary' });
    expect(screen.queryByRole('tab', { name: 'Registry' })).not.toBeInTheDocument();
  });

  it('opens keys lazily, lists typed values and edits them with checks per type', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/device/details/win-1': { body: bareDetails('win-1', { operating_system: 'Microsoft Windows 11 Pro' }) },
      'GET /api/device/registry/win-1/roots': { body: ROOTS },
      'GET /api/device/registry/win-1/children': (c) => ({ body: children(c.query.get('path') ?? '') }),
      'POST /api/device/registry/win-1/value/update': (c) => ({ body: { path: (c.body as Body).path, value: (c.body as Body).value } }),
      'POST /api/device/registry/win-1/value/create': { status: 400, body: { error: 'validation_failed', message: 'bad', fields: { 'value.data': 'bad' } } },
      'POST /api/device/registry/win-1/key/delete': (c) => ({ body: { key: { name: 'Software', path: (c.body as Body).path } } }),
    });
    renderPage('/devices/win-1/registry');
    const tree = await screen.findByRole('tree', { name: 'Registry keys' });
    expect(engine.callsTo('GET', '/api/device/registry/win-1/children')).toHaveLength(0);

    await user.click(within(tree).getByRole('button', { name: 'Expand HKCU' }));
    await user.click(await within(tree).findByRole('button', { name: 'Software' }));
    const values = await screen.findByRole('table', { name: 'Values' });
    await within(values).findByText('0x00000010 (16)');
    expect(within(values).getByText('(Default)')).toBeInTheDocument();
    expect(within(values).getByRole('button', { name: 'Edit Odd' })).toBeDisabled();
    expect(within(values).getByRole('button', { name: 'Edit Huge' })).toBeDisabled();
    expect(screen.getByText(/too large to list whole/)).toBeInTheDocument();

    // A DWORD out of range is refused in the dialog; a good one is sent as a number.
    await user.click(within(values).getByRole('button', { name: 'Edit Count' }));
    let dialog = await screen.findByRole('dialog', { name: 'Edit value Count' });
    const data = within(dialog).getByRole('textbox', { name: 'Data' });
    await user.clear(data);
    await user.type(data, '4294967296');
    expect(within(dialog).getByText(/The largest REG_DWORD is 4294967295/)).toBeInTheDocument();
    expect(within(dialog).getByRole('button', { name: 'Save' })).toBeDisabled();
    await user.clear(data);
    await user.type(data, '0xff');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device/registry/win-1/value/update')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/device/registry/win-1/value/update')[0].body).toEqual({
      path: 'HKCU\\Software',
      value: { name: 'Count', type: 'REG_DWORD', data: 255 },
    });

    // A QWORD travels as a decimal string.
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    await user.click(screen.getByRole('button', { name: 'New value' }));
    dialog = await screen.findByRole('dialog', { name: 'New value in HKCU\\Software' });
    await user.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'Big');
    await user.click(within(dialog).getByRole('combobox', { name: 'Type' }));
    await user.click(await screen.findByRole('option', { name: 'REG_QWORD' }));
    await user.type(within(dialog).getByRole('textbox', { name: 'Data' }), '18446744073709551615');
    await user.click(within(dialog).getByRole('button', { name: 'Create' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device/registry/win-1/value/create')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/device/registry/win-1/value/create')[0].body).toEqual({
      path: 'HKCU\\Software',
      value: { name: 'Big', type: 'REG_QWORD', data: '18446744073709551615' },
    });
    await screen.findByText('Create value Big failed', { selector: '[data-testid="toast"] h6' });
    await user.click(within(screen.getByRole('dialog')).getByRole('button', { name: 'Cancel' }));

    // Deleting a key asks first.
    await user.click(screen.getByRole('button', { name: 'Delete key' }));
    dialog = await screen.findByRole('dialog', { name: 'Delete HKCU\\Software?' });
    expect(engine.callsTo('POST', '/api/device/registry/win-1/key/delete')).toHaveLength(0);
    await user.click(within(dialog).getByRole('button', { name: 'Delete' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device/registry/win-1/key/delete')).toHaveLength(1));
    await waitFor(() => expect(screen.getByTestId('registry-path')).toHaveTextContent(/^HKCU$/));
  });
});
