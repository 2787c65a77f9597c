import { afterEach, describe, expect, it, vi } from 'vitest';
import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router';
import type { DeviceMetadataField } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine, validationFailed, type RecordedCall } from '../../test/fakeEngine';
import { fill } from '../../test/codeEditor';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import DevicePage from './DevicePage';
import { fullDetails } from './fixtures';
import { formatSource, valueLength } from './MetadataTab';
import { invalidateForDeviceEvent } from './queries';

const GUID = 'guid-web-1';

/** The device's 500 rows; `set` gives values (and labels) by number. */
function metadataRows(set: Record<number, Partial<DeviceMetadataField>> = {}): DeviceMetadataField[] {
  return Array.from({ length: 500 }, (_, i) => {
    const n = i + 1;
    const description = n === 1 ? 'Server Roles' : n === 2 ? 'Bitlocker Drive Encryption' : n <= 10 ? 'Reserved' : '';
    return { field_number: n, description, value: '', modified_at: null, source: '', ...set[n] };
  });
}

const SET = {
  1: { value: 'IIS, DNS', modified_at: '2026-11-21T09:00:00Z', source: 'agent' },
  12: { description: 'Rack', value: 'rack 4', modified_at: '2026-11-21T10:00:00Z', source: 'operator:olga' },
  40: { description: 'Owner', value: 'finance', modified_at: '2026-11-21T11:00:00Z', source: 'operator:admin' },
};

function renderTab() {
  return renderWithProviders(
    <SessionContext.Provider value={{ user: ADMIN, signOut: async () => {} }}>
      <WithToasts>
        <Routes>
          <Route path="/devices/:hostname/:tab?" element={<DevicePage />} />
        </Routes>
      </WithToasts>
    </SessionContext.Provider>,
    { route: '/devices/web-1/metadata' },
  );
}

/** Answers a PUT with the row as the Engine would. */
function putReply(call: RecordedCall) {
  const n = Number(call.path.split('/').pop());
  const value = (call.body as { value: string }).value;
  return {
    body: {
      field_number: n,
      description: n === 12 ? 'Rack' : '',
      value,
      modified_at: value ? '2026-11-22T12:00:00Z' : null,
      source: 'operator:admin',
    },
  };
}

/** A fake Engine whose GET answers what the PUTs stored. */
function statefulEngine(initial: DeviceMetadataField[], puts: Record<string, unknown> = {}) {
  let rows = initial;
  const put = (call: RecordedCall) => {
    const reply = putReply(call);
    rows = rows.map((r) => (r.field_number === reply.body.field_number ? { ...r, ...reply.body, description: r.description } : r));
    return reply;
  };
  const routes: Parameters<typeof fakeEngine>[0] = {
    'GET /api/device/details/web-1': { body: fullDetails() },
    [`GET /api/devices/${GUID}/metadata_fields`]: () => ({ body: { fields: rows } }),
  };
  for (const n of [1, 12, 40]) routes[`PUT /api/devices/${GUID}/metadata_fields/${n}`] = put;
  return { ...fakeEngine({ ...routes, ...(puts as typeof routes) }), setRows: (r: DeviceMetadataField[]) => (rows = r) };
}

const panel = () => screen.getByRole('tabpanel');
const search = () => within(panel()).getByRole('searchbox', { name: 'Search fields' });

afterEach(() => vi.unstubAllGlobals());

describe('formatSource and valueLength', () => {
  it.each([
    ['', '—'],
    ['agent', 'Agent'],
    ['operator:olga', 'olga'],
  ])('formats %j as %j', (source, text) => expect(formatSource(source)).toBe(text));

  it('counts code points, as the Engine does', () => expect(valueLength('a😀b')).toBe(3));
});

describe('MetadataTab', () => {
  it('lists the rows with search, the set-only toggle and the counts', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      [`GET /api/devices/${GUID}/metadata_fields`]: { body: { fields: metadataRows(SET) } },
    });
    renderTab();
    expect(await screen.findByTestId('metadata-count')).toHaveTextContent('3 of 500 fields set');
    expect(screen.getByRole('tab', { name: 'Metadata' })).toHaveAttribute('aria-selected', 'true');
    expect(engine.callsTo('GET', `/api/devices/${GUID}/metadata_fields`)).toHaveLength(1);
    expect(await within(panel()).findByText('Server Roles')).toBeInTheDocument();

    await fill(user, search(), 'finance');
    expect(await within(panel()).findByText('Owner')).toBeInTheDocument();
    await waitFor(() => expect(within(panel()).queryByText('Server Roles')).not.toBeInTheDocument());
    const row = within(panel()).getByText('finance').closest('[role="row"]') as HTMLElement;
    expect(row).toHaveTextContent('40');
    expect(row).toHaveTextContent('admin');

    await user.clear(search());
    await user.click(within(panel()).getByRole('switch', { name: 'Only set values' }));
    await waitFor(() => expect(within(panel()).queryByText('Reserved')).not.toBeInTheDocument());
    expect(within(panel()).getByText('rack 4')).toBeInTheDocument();
    expect(within(panel()).getByText('IIS, DNS')).toBeInTheDocument();
    expect(within(panel()).getByText('Agent')).toBeInTheDocument();
    expect(within(panel()).getAllByRole('row').filter((r) => r.getAttribute('row-id'))).toHaveLength(3);
  });

  it('edits a value in the dialog with a live counter and the length limit', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = statefulEngine(metadataRows(SET));
    renderTab();
    await screen.findByTestId('metadata-count');
    await fill(user, search(), 'rack');
    await user.click(await within(panel()).findByRole('button', { name: 'Edit field 12' }));

    const dialog = await screen.findByRole('dialog', { name: 'Edit field 12 (Rack)' });
    const input = within(dialog).getByRole('textbox', { name: 'Value' });
    expect(input).toHaveValue('rack 4');
    expect(within(dialog).getByTestId('metadata-counter')).toHaveTextContent('6 / 1024');

    await fill(user, input, 'x'.repeat(1025));
    expect(within(dialog).getByTestId('metadata-counter')).toHaveTextContent('1025 / 1024');
    expect(dialog).toHaveTextContent('At most 1024 characters.');
    expect(within(dialog).getByRole('button', { name: 'Save' })).toBeDisabled();

    await fill(user, input, 'rack 7, row B');
    expect(within(dialog).getByTestId('metadata-counter')).toHaveTextContent('13 / 1024');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));

    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('PUT', `/api/devices/${GUID}/metadata_fields/12`).map((c) => c.body)).toEqual([
      { value: 'rack 7, row B' },
    ]);
    expect(await within(panel()).findByText('rack 7, row B')).toBeInTheDocument();
    expect(await screen.findByText('Field 12 (Rack) saved')).toBeInTheDocument();
  });

  it('shows the API field error on the input and keeps the dialog open', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/device/details/web-1': { body: fullDetails() },
      [`GET /api/devices/${GUID}/metadata_fields`]: { body: { fields: metadataRows(SET) } },
      [`PUT /api/devices/${GUID}/metadata_fields/40`]: validationFailed({ value: 'must be valid UTF-8 text' }),
    });
    renderTab();
    await screen.findByTestId('metadata-count');
    await fill(user, search(), 'finance');
    await user.click(await within(panel()).findByRole('button', { name: 'Edit field 40' }));
    const dialog = await screen.findByRole('dialog', { name: 'Edit field 40 (Owner)' });
    await fill(user, within(dialog).getByRole('textbox', { name: 'Value' }), 'sales');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    expect(await within(dialog).findByText('must be valid UTF-8 text')).toBeInTheDocument();
    expect(within(dialog).getByRole('textbox', { name: 'Value' })).toHaveAttribute('aria-invalid', 'true');
    // The field error is on the input, not repeated in an alert.
    expect(within(dialog).queryByTestId('error-alert')).not.toBeInTheDocument();
  });

  it('clears a value only after a confirmation, reserved fields included', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = statefulEngine(metadataRows(SET));
    renderTab();
    await screen.findByTestId('metadata-count');
    await fill(user, search(), 'Server Roles');
    await user.click(await within(panel()).findByRole('button', { name: 'Edit field 1' }));
    const dialog = await screen.findByRole('dialog', { name: 'Edit field 1 (Server Roles)' });
    await fill(user, within(dialog).getByRole('textbox', { name: 'Value' }), '   ');
    expect(dialog).toHaveTextContent('A blank value clears the field.');

    await user.click(within(dialog).getByRole('button', { name: 'Clear…' }));
    const confirm = await screen.findByRole('dialog', { name: 'Clear field 1 (Server Roles)?' });
    await user.click(within(confirm).getByRole('button', { name: 'Cancel' }));
    // Cancel goes back to the editor; nothing was sent.
    expect(await screen.findByRole('dialog', { name: 'Edit field 1 (Server Roles)' })).toBeInTheDocument();
    expect(engine.callsTo('PUT', `/api/devices/${GUID}/metadata_fields/1`)).toHaveLength(0);

    await user.click(screen.getByRole('button', { name: 'Clear…' }));
    await user.click(within(await screen.findByRole('dialog', { name: /Clear field 1/ })).getByRole('button', { name: 'Clear value' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(engine.callsTo('PUT', `/api/devices/${GUID}/metadata_fields/1`).map((c) => c.body)).toEqual([{ value: '' }]);
    await waitFor(() => expect(screen.getByTestId('metadata-count')).toHaveTextContent('2 of 500 fields set'));
  });

  it('edits a value in place', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = statefulEngine(metadataRows(SET));
    renderTab();
    await screen.findByTestId('metadata-count');
    await fill(user, search(), 'Owner');
    const cell = (await within(panel()).findByText('finance')).closest('[col-id="value"]') as HTMLElement;
    await user.dblClick(cell);
    const editor = await screen.findByRole('textbox', { name: /input editor/i });
    // The editor opens focused with its text selected, so typing replaces it.
    await waitFor(() => expect(editor).toHaveFocus());
    await user.keyboard('sales');
    expect(editor).toHaveValue('sales');
    await user.keyboard('{Enter}');
    await waitFor(() =>
      expect(engine.callsTo('PUT', `/api/devices/${GUID}/metadata_fields/40`).map((c) => c.body)).toEqual([{ value: 'sales' }]),
    );
    expect(await within(panel()).findByText('sales')).toBeInTheDocument();
  });

  it('refetches the rows on a device event for this device', async () => {
    const engine = statefulEngine(metadataRows(SET));
    const { queryClient } = renderTab();
    expect(await screen.findByTestId('metadata-count')).toHaveTextContent('3 of 500 fields set');
    engine.setRows(metadataRows({ ...SET, 300: { value: 'from the agent', source: 'agent' } }));
    act(() => invalidateForDeviceEvent(queryClient, { guid: GUID, hostname: 'web-1' }));
    await waitFor(() => expect(screen.getByTestId('metadata-count')).toHaveTextContent('4 of 500 fields set'));
    expect(engine.callsTo('GET', `/api/devices/${GUID}/metadata_fields`).length).toBeGreaterThanOrEqual(2);
  });
});
