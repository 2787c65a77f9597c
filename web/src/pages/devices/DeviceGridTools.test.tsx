// The devices page's filter builder, saved views and column chooser.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { DeviceFilter, DeviceListView, FilterMetadata, MetadataFieldDefinition } from '../../api/types';
import { fakeEngine, validationFailed, type RecordedCall } from '../../test/fakeEngine';
import { BASE, pagedDevices, query, renderPage, rowOf } from '../../test/devicesGrid';
import { device } from './fixtures';

const STRING_OPS = ['equals', 'not_equals', 'contains', 'not_contains', 'starts_with', 'ends_with', 'is_empty', 'is_not_empty'];

const META: FilterMetadata = {
  fields: [
    { field: 'hostname', label: 'Hostname', group: 'Device', ops: STRING_OPS, value_type: 'string', key_type: null, op_value_types: {}, values: [] },
    { field: 'status', label: 'Status', group: 'Device', ops: ['is', 'is_not'], value_type: 'enum', key_type: null, op_value_types: {}, values: ['Connected', 'Disconnected', 'Offline'] },
    {
      field: 'last_seen',
      label: 'Last seen',
      group: 'Device',
      ops: ['within_last', 'not_within_last', 'before', 'after', 'never'],
      value_type: 'duration_seconds',
      key_type: null,
      op_value_types: {},
      values: [],
    },
    { field: 'ip_address', label: 'IP address', group: 'Network', ops: ['in_cidr', 'not_in_cidr'], value_type: 'cidr', key_type: null, op_value_types: {}, values: [] },
    { field: 'metadata', label: 'Metadata field', group: 'Metadata', ops: STRING_OPS, value_type: 'string', key_type: 'metadata_field', op_value_types: {}, values: [] },
  ],
  metadata_fields: [{ field_number: 12, description: 'Rack' }],
  sites: [
    { id: 1, name: 'Head office' },
    { id: 2, name: 'Lab' },
  ],
};

function definitions(): MetadataFieldDefinition[] {
  const labels: Record<number, string> = {
    1: 'Server Roles',
    2: 'Bitlocker Drive Encryption',
    3: 'Reserved',
    12: 'Rack',
    13: 'Reserved',
    14: '   ',
    15: 'Owner',
  };
  return Array.from({ length: 500 }, (_, i) => ({
    field_number: i + 1,
    description: labels[i + 1] ?? '',
    reserved: i + 1 <= 10,
    linked_assembly_id: null,
    updated_at: null,
    updated_by: '',
  }));
}

const RACKED = [
  device('web-1', { metadata_fields: { '12': 'rack 4', '15': 'alice' } }),
  device('web-2', { metadata_fields: { '12': 'rack 9' } }),
  device('lab-1', { site_id: 2, site_name: 'Lab' }),
];

function engineFor(extra: Record<string, unknown> = {}) {
  return fakeEngine({
    ...BASE,
    'GET /api/metadata_fields': { body: { fields: definitions(), value_max_length: 1024 } },
    'GET /api/device_filters/metadata': { body: META },
    'GET /api/device_filters': { body: { filters: [] } },
    'GET /api/devices': pagedDevices(() => RACKED),
    ...(extra as Record<string, never>),
  });
}

const lastDevicesCall = (engine: ReturnType<typeof fakeEngine>) => engine.callsTo('GET', '/api/devices').at(-1)!;

async function choose(user: ReturnType<typeof userEvent.setup>, scope: HTMLElement, label: string, option: string) {
  await user.click(within(scope).getByRole('combobox', { name: label }));
  await user.click(await screen.findByRole('option', { name: option }));
  await waitFor(() => expect(screen.queryByRole('listbox')).not.toBeInTheDocument());
}

afterEach(() => vi.unstubAllGlobals());

describe('the filter builder', () => {
  it('builds a nested tree, counts matches live, shows errors at their node, applies and saves it', async () => {
    const user = userEvent.setup({ delay: null });
    const preview = (call: RecordedCall) => {
      const json = JSON.stringify(call.body);
      if (json.includes('"bogus"')) return validationFailed({ 'filter.conditions[1].conditions[0].value': 'not a CIDR or address' });
      return { body: { total: json.includes('10.0.0.0/8') ? 2 : 3, devices: [] } };
    };
    const engine = engineFor({
      'POST /api/device_filters/preview': preview,
      'POST /api/device_filters': (call: RecordedCall) => ({
        status: 201,
        body: { id: 9, ...(call.body as object), created_by: 'admin', created_at: '', updated_by: 'admin', updated_at: '' },
      }),
    });
    renderPage();
    await screen.findByText('web-1');
    await user.click(screen.getByRole('button', { name: 'Filter' }));
    const root = await screen.findByRole('group', { name: 'Filter' });
    expect(screen.getByTestId('filter-match-count')).toHaveTextContent('Add a condition');

    // hostname contains "web"
    await user.click(within(root).getAllByRole('button', { name: 'Add condition' })[0]);
    const first = await screen.findByRole('group', { name: 'Condition filter.conditions[0]' });
    await choose(user, first, 'Operator', 'contains');
    await user.type(within(first).getByRole('textbox', { name: 'Value' }), 'web');
    await waitFor(() => expect(screen.getByTestId('filter-match-count')).toHaveTextContent('3 devices match'));

    // any of: IP address in a network
    await user.click(within(root).getAllByRole('button', { name: 'Add group' })[0]);
    const group = await screen.findByRole('group', { name: 'Group filter.conditions[1]' });
    await choose(user, group, 'Match', 'Any of these');
    await user.click(within(group).getByRole('button', { name: 'Add condition' }));
    const nested = await screen.findByRole('group', { name: 'Condition filter.conditions[1].conditions[0]' });
    await choose(user, nested, 'Field', 'IP address');
    await user.type(within(nested).getByRole('textbox', { name: 'Value' }), 'bogus');

    // The Engine's error lands on the nested condition's value, nowhere else.
    expect(await within(nested).findByText('not a CIDR or address')).toBeInTheDocument();
    expect(within(first).queryByText('not a CIDR or address')).not.toBeInTheDocument();
    expect(screen.getByTestId('filter-match-count')).toHaveTextContent('The filter has errors');

    const value = within(nested).getByRole('textbox', { name: 'Value' });
    await user.clear(value);
    await user.type(value, '10.0.0.0/8');
    await waitFor(() => expect(screen.getByTestId('filter-match-count')).toHaveTextContent('2 devices match'));
    expect(within(nested).queryByText('not a CIDR or address')).not.toBeInTheDocument();

    const tree = {
      match: 'all',
      conditions: [
        { field: 'hostname', op: 'contains', value: 'web' },
        { match: 'any', conditions: [{ field: 'ip_address', op: 'in_cidr', value: '10.0.0.0/8' }] },
      ],
    };
    expect(engine.callsTo('POST', '/api/device_filters/preview').at(-1)!.body).toEqual({ filter: tree, limit: 5 });

    await user.click(screen.getByRole('button', { name: 'Apply filter' }));
    await waitFor(() => expect(JSON.parse(lastDevicesCall(engine).query.get('filter') ?? 'null')).toEqual(tree));
    expect(lastDevicesCall(engine).query.get('offset')).toBe('0');
    expect(screen.getByTestId('applied-filter')).toHaveTextContent('Custom filter (2)');
    await waitFor(() => expect(screen.queryByText('lab-1')).not.toBeInTheDocument());

    await user.click(screen.getByRole('button', { name: 'Save as filter…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Save as a named filter' });
    await user.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'Web in ten');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device_filters')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/device_filters')[0].body).toEqual({ name: 'Web in ten', description: '', filter: tree });
    await waitFor(() => expect(screen.queryByRole('dialog', { name: 'Save as a named filter' })).not.toBeInTheDocument());
  });

  it('takes values by the kind the operator needs and keys metadata conditions by field number', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = engineFor({ 'POST /api/device_filters/preview': { body: { total: 1, devices: [] } } });
    renderPage();
    await screen.findByText('web-1');
    await user.click(screen.getByRole('button', { name: 'Filter' }));
    const root = await screen.findByRole('group', { name: 'Filter' });

    await user.click(within(root).getAllByRole('button', { name: 'Add condition' })[0]);
    const seen = await screen.findByRole('group', { name: 'Condition filter.conditions[0]' });
    await choose(user, seen, 'Field', 'Last seen');
    await user.type(within(seen).getByRole('spinbutton', { name: 'Value' }), '2');
    await choose(user, seen, 'Unit', 'days');

    await user.click(within(root).getAllByRole('button', { name: 'Add condition' })[0]);
    const meta = await screen.findByRole('group', { name: 'Condition filter.conditions[1]' });
    await choose(user, meta, 'Field', 'Metadata field');
    await choose(user, meta, 'Metadata field', '12. Rack');
    await choose(user, meta, 'Operator', 'is empty');
    expect(within(meta).queryByRole('textbox', { name: 'Value' })).not.toBeInTheDocument();

    await waitFor(() =>
      expect(engine.callsTo('POST', '/api/device_filters/preview').at(-1)?.body).toEqual({
        filter: {
          match: 'all',
          conditions: [
            { field: 'last_seen', op: 'within_last', value: 2 * 86400 },
            { field: 'metadata', op: 'is_empty', key: 12 },
          ],
        },
        limit: 5,
      }),
    );
    await waitFor(() => expect(screen.getByTestId('filter-match-count')).toHaveTextContent('1 device matches'));
  });

  it('offers the labelled metadata fields from the definitions when the filter metadata lists none', async () => {
    const user = userEvent.setup({ delay: null });
    engineFor({ 'GET /api/device_filters/metadata': { body: { ...META, metadata_fields: [] } } });
    renderPage();
    await screen.findByText('web-1');
    await user.click(screen.getByRole('button', { name: 'Filter' }));
    const root = await screen.findByRole('group', { name: 'Filter' });
    await user.click(within(root).getAllByRole('button', { name: 'Add condition' })[0]);
    const cond = await screen.findByRole('group', { name: 'Condition filter.conditions[0]' });
    await choose(user, cond, 'Field', 'Metadata field');
    await user.click(within(cond).getByRole('combobox', { name: 'Metadata field' }));
    const options = (await screen.findAllByRole('option')).map((o) => o.textContent);
    expect(options).toEqual(['1. Server Roles', '2. Bitlocker Drive Encryption', '12. Rack', '15. Owner']);
  });

  it('loads a saved filter and applies it by its ID', async () => {
    const user = userEvent.setup({ delay: null });
    const saved: DeviceFilter = {
      id: 4,
      name: 'Lab boxes',
      description: '',
      filter: { match: 'all', conditions: [{ field: 'hostname', op: 'starts_with', value: 'lab' }] },
      owner_user_id: 1,
      site_scope: null,
      created_by: 'admin',
      created_at: '',
      updated_by: 'admin',
      updated_at: '',
    };
    const engine = fakeEngine({
      ...BASE,
      'GET /api/device_filters/metadata': { body: META },
      'GET /api/device_filters': { body: { filters: [saved] } },
      'POST /api/device_filters/preview': { body: { total: 1, devices: [] } },
      'GET /api/devices': pagedDevices(() => RACKED, { '4': (d) => d.hostname.startsWith('lab') }),
    });
    renderPage();
    await screen.findByText('web-1');
    await user.click(screen.getByRole('button', { name: 'Filter' }));
    const panel = await screen.findByTestId('filter-panel');
    await choose(user, panel, 'Saved filter', 'Lab boxes');
    const cond = await screen.findByRole('group', { name: 'Condition filter.conditions[0]' });
    expect(within(cond).getByRole('textbox', { name: 'Value' })).toHaveValue('lab');
    await user.click(screen.getByRole('button', { name: 'Apply filter' }));
    await waitFor(() => expect(lastDevicesCall(engine).query.get('filter_id')).toBe('4'));
    expect(lastDevicesCall(engine).query.get('filter')).toBeNull();
    expect(screen.getByTestId('applied-filter')).toHaveTextContent('Filter: Lab boxes');
    await waitFor(() => expect(screen.queryByText('web-1')).not.toBeInTheDocument());
    expect(screen.getByText('lab-1')).toBeInTheDocument();
  });
});

describe('the column chooser', () => {
  it('offers labelled metadata fields only, never reserved ones, and shows their values', async () => {
    const user = userEvent.setup({ delay: null });
    engineFor();
    renderPage();
    await screen.findByText('web-1');
    await user.click(screen.getByRole('button', { name: 'Columns' }));
    const chooser = await screen.findByRole('dialog', { name: 'Columns' });
    const metaList = within(chooser).getByTestId('metadata-columns');
    await waitFor(() => expect(within(metaList).getAllByRole('checkbox')).toHaveLength(2));
    expect(within(metaList).getByLabelText('Rack')).toBeInTheDocument();
    expect(within(metaList).getByLabelText('Owner')).toBeInTheDocument();
    for (const hidden of ['Server Roles', 'Bitlocker Drive Encryption', 'Reserved']) {
      expect(within(chooser).queryByLabelText(hidden)).not.toBeInTheDocument();
    }
    expect(within(chooser).getByLabelText('Hostname')).toBeDisabled();

    await user.click(within(metaList).getByLabelText('Rack'));
    await user.click(within(chooser).getByLabelText('OS'));
    await user.keyboard('{Escape}');
    expect(await screen.findByRole('columnheader', { name: /Rack/ })).toBeInTheDocument();
    await waitFor(() => expect(screen.queryByRole('columnheader', { name: /^OS/ })).not.toBeInTheDocument());
    await waitFor(() => expect(within(rowOf('web-1')).getByText('rack 4')).toBeInTheDocument());
    expect(within(rowOf('web-2')).getByText('rack 9')).toBeInTheDocument();
  });
});

describe('saved views', () => {
  const VIEW: DeviceListView = {
    id: 7,
    name: 'Racks by last seen',
    columns: ['hostname', 'metadata:12', 'last_seen'],
    sort: { column: 'metadata:12', direction: 'desc' },
    filter_id: 4,
    filter: null,
    shared: true,
    owner: 'bob',
    created_at: '',
    updated_at: '',
  };
  const SAVED: DeviceFilter = {
    id: 4,
    name: 'Web boxes',
    description: '',
    filter: { match: 'all', conditions: [{ field: 'hostname', op: 'starts_with', value: 'web' }] },
    owner_user_id: 2,
    site_scope: [1],
    created_by: 'bob',
    created_at: '',
    updated_by: 'bob',
    updated_at: '',
  };
  const viewsEngine = (extra: Record<string, unknown> = {}) =>
    engineFor({
      'GET /api/device_list_views': { body: { views: [VIEW] } },
      'GET /api/device_filters': { body: { filters: [SAVED] } },
      'GET /api/devices': pagedDevices(() => RACKED, { '4': (d) => d.hostname.startsWith('web') }),
      ...extra,
    });

  it('restores a view: its columns, its sort on the server and its filter, and keeps it in the address', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = viewsEngine();
    renderPage();
    await screen.findByText('lab-1');
    await choose(user, document.body, 'View', 'Racks by last seen (shared by bob)');
    await waitFor(() => expect(lastDevicesCall(engine).query.get('filter_id')).toBe('4'));
    expect(lastDevicesCall(engine).query.get('sort')).toBe('-metadata:12');
    await waitFor(() => expect(query().get('view')).toBe('7'));
    expect(await screen.findByRole('columnheader', { name: /Rack/ })).toBeInTheDocument();
    expect(screen.queryByRole('columnheader', { name: /^Site/ })).not.toBeInTheDocument();
    await waitFor(() => expect(screen.queryByText('lab-1')).not.toBeInTheDocument());
    expect(within(rowOf('web-2')).getByText('rack 9')).toBeInTheDocument();
    expect(screen.getByTestId('applied-filter')).toHaveTextContent('Filter: Web boxes');
  });

  it('restores the view the address names on load', async () => {
    const engine = viewsEngine();
    renderPage('/devices?view=7');
    expect(await screen.findByRole('columnheader', { name: /Rack/ })).toBeInTheDocument();
    await waitFor(() => expect(lastDevicesCall(engine).query.get('sort')).toBe('-metadata:12'));
    expect(lastDevicesCall(engine).query.get('filter_id')).toBe('4');
    await screen.findByText('web-1');
  });

  it('saves the current columns, sort and filter as a shared view', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = engineFor({
      'POST /api/device_list_views': (call: RecordedCall) => ({
        status: 201,
        body: { id: 11, ...(call.body as object), owner: 'admin', created_at: '', updated_at: '' },
      }),
    });
    renderPage();
    await screen.findByText('web-1');
    await user.click(screen.getByRole('button', { name: 'Columns' }));
    const chooser = await screen.findByRole('dialog', { name: 'Columns' });
    await user.click(await within(chooser).findByLabelText('Rack'));
    await user.keyboard('{Escape}');
    await screen.findByRole('columnheader', { name: /Rack/ });
    const header = () => screen.getByRole('columnheader', { name: /Rack/ });
    await user.click(within(header()).getByText('Rack'));
    await waitFor(() => expect(lastDevicesCall(engine).query.get('sort')).toBe('metadata:12'));

    await user.click(screen.getByRole('button', { name: 'Save view' }));
    const dialog = await screen.findByRole('dialog', { name: 'Save view' });
    await user.type(within(dialog).getByRole('textbox', { name: 'Name' }), 'By rack');
    await user.click(within(dialog).getByLabelText('Share with other operators'));
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/device_list_views')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/device_list_views')[0].body).toEqual({
      name: 'By rack',
      columns: ['hostname', 'site', 'status', 'os', 'last_seen', 'agent_version', 'description', 'metadata:12'],
      sort: { column: 'metadata:12', direction: 'asc' },
      filter_id: null,
      filter: null,
      shared: true,
    });
    await waitFor(() => expect(query().get('view')).toBe('11'));
  });

  it('updates and deletes the selected own view', async () => {
    const user = userEvent.setup({ delay: null });
    const own = { ...VIEW, owner: 'admin', shared: false, filter_id: null, sort: null };
    const engine = engineFor({
      'GET /api/device_list_views': { body: { views: [own] } },
      'PUT /api/device_list_views/7': (call: RecordedCall) => ({ body: { ...own, ...(call.body as object) } }),
      'DELETE /api/device_list_views/7': { status: 204 },
    });
    renderPage('/devices?view=7');
    await screen.findByRole('columnheader', { name: /Rack/ });
    await user.click(screen.getByRole('button', { name: 'Save view' }));
    const dialog = await screen.findByRole('dialog', { name: 'Save view Racks by last seen' });
    await user.click(within(dialog).getByRole('button', { name: 'Update view' }));
    await waitFor(() => expect(engine.callsTo('PUT', '/api/device_list_views/7')).toHaveLength(1));
    expect(engine.callsTo('PUT', '/api/device_list_views/7')[0].body).toMatchObject({
      name: 'Racks by last seen',
      columns: ['hostname', 'metadata:12', 'last_seen'],
      shared: false,
    });

    await user.click(screen.getByRole('button', { name: 'Delete view' }));
    const confirm = await screen.findByRole('dialog', { name: 'Delete the view Racks by last seen?' });
    await user.click(within(confirm).getByRole('button', { name: 'Delete view' }));
    await waitFor(() => expect(engine.callsTo('DELETE', '/api/device_list_views/7')).toHaveLength(1));
    await waitFor(() => expect(query().get('view')).toBeNull());
    expect(await screen.findByRole('columnheader', { name: /^Site/ })).toBeInTheDocument();
  });
});
