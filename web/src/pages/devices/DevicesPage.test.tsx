import { afterEach, describe, expect, it, vi } from 'vitest';
import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { fakeEngine } from '../../test/fakeEngine';
import { BASE, DEVICES, pagedDevices, query, renderPage, rowOf } from '../../test/devicesGrid';
import { device } from './fixtures';
import { invalidateForDeviceEvent } from './queries';

afterEach(() => vi.unstubAllGlobals());

describe('DevicesPage', () => {
  it('asks for the first page sorted by hostname, with the drilldown and a canonical status token', async () => {
    const engine = fakeEngine({ ...BASE, 'GET /api/devices': pagedDevices(() => DEVICES) });
    renderPage('/devices?site=2&status=CONNECTED');
    expect(await screen.findByText('lab-1')).toBeInTheDocument();
    expect(screen.queryByText('lab-2')).not.toBeInTheDocument();
    expect(screen.queryByText('web-1')).not.toBeInTheDocument();
    await waitFor(() => expect(screen.getByTestId('location')).toHaveTextContent('/devices?site=2&status=connected'));
    const call = engine.callsTo('GET', '/api/devices').at(-1)!;
    expect(call.query.get('site_id')).toBe('2');
    expect(call.query.get('status')).toBe('connected');
    expect(call.query.get('limit')).toBe('100');
    expect(call.query.get('offset')).toBe('0');
    expect(call.query.get('sort')).toBe('hostname');
    expect(screen.getByRole('combobox', { name: 'Site' })).toHaveTextContent('Lab');
    expect(screen.getByRole('combobox', { name: 'Status' })).toHaveTextContent('Connected');
    expect(screen.getByTestId('device-count')).toHaveTextContent('1 device');
  });

  it('shows the server total, not the rows loaded so far', async () => {
    const many = Array.from({ length: 250 }, (_, i) => device(`host-${String(i).padStart(3, '0')}`));
    const engine = fakeEngine({ ...BASE, 'GET /api/devices': pagedDevices(() => many) });
    renderPage();
    expect(await screen.findByText('host-000')).toBeInTheDocument();
    expect(screen.getByTestId('device-count')).toHaveTextContent('250 devices');
    // Only the first block was asked for.
    expect(engine.callsTo('GET', '/api/devices').every((c) => c.query.get('offset') === '0' && c.query.get('limit') === '100')).toBe(true);
  });

  it('sorts on the server when a column header is clicked', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({ ...BASE, 'GET /api/devices': pagedDevices(() => DEVICES) });
    renderPage();
    await screen.findByText('web-1');
    const header = () => screen.getByRole('columnheader', { name: /Last seen/ });
    await user.click(within(header()).getByText('Last seen'));
    await waitFor(() => expect(engine.callsTo('GET', '/api/devices').at(-1)?.query.get('sort')).toBe('last_seen'));
    await waitFor(() => expect(header()).toHaveAttribute('aria-sort', 'ascending'));
    await user.click(within(header()).getByText('Last seen'));
    await waitFor(() => expect(engine.callsTo('GET', '/api/devices').at(-1)?.query.get('sort')).toBe('-last_seen'));
    expect(engine.callsTo('GET', '/api/devices').at(-1)?.query.get('offset')).toBe('0');
  });

  it('writes site and status changes to the URL and queries with them', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({ ...BASE, 'GET /api/devices': pagedDevices(() => DEVICES) });
    renderPage();
    expect(await screen.findByText('web-1')).toBeInTheDocument();

    await user.click(screen.getByRole('combobox', { name: 'Status' }));
    await user.click(await screen.findByRole('option', { name: 'Offline' }));
    await waitFor(() => expect(query().get('status')).toBe('offline'));
    expect(await screen.findByText('db-1')).toBeInTheDocument();
    await waitFor(() => expect(screen.queryByText('web-1')).not.toBeInTheDocument());

    await user.click(screen.getByRole('combobox', { name: 'Site' }));
    await user.click(await screen.findByRole('option', { name: 'Lab' }));
    await waitFor(() => expect(query().get('site')).toBe('2'));
    expect(query().get('status')).toBe('offline');
    await waitFor(() =>
      expect(engine.callsTo('GET', '/api/devices').some((c) => c.query.get('site_id') === '2' && c.query.get('status') === 'offline')).toBe(true),
    );
    expect(await screen.findByTestId('devices-none-match')).toBeInTheDocument();

    await user.click(screen.getByRole('button', { name: 'Clear filters' }));
    await waitFor(() => expect(query().toString()).toBe(''));
    expect(await screen.findByText('web-1')).toBeInTheDocument();
  });

  it('searches by hostname through the paged list, keeping the text in the URL', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({ ...BASE, 'GET /api/devices': pagedDevices(() => DEVICES) });
    renderPage();
    expect(await screen.findByText('web-1')).toBeInTheDocument();
    await user.type(screen.getByRole('searchbox', { name: 'Search hostname' }), 'lab');
    await waitFor(() => expect(query().get('q')).toBe('lab'));
    await waitFor(() =>
      expect(JSON.parse(engine.callsTo('GET', '/api/devices').at(-1)?.query.get('filter') ?? 'null')).toEqual({
        match: 'all',
        conditions: [{ field: 'hostname', op: 'contains', value: 'lab' }],
      }),
    );
    await waitFor(() => expect(screen.getByText('lab-2')).toBeInTheDocument());
    await waitFor(() => expect(screen.queryByText('web-1')).not.toBeInTheDocument());
    expect(screen.getByRole('searchbox', { name: 'Search hostname' })).toHaveValue('lab');

    await user.click(screen.getByRole('button', { name: 'Clear filters' }));
    await waitFor(() => expect(screen.getByRole('searchbox', { name: 'Search hostname' })).toHaveValue(''));
    expect(query().get('q')).toBeNull();
  });

  it('shows each device with a link, a coloured status chip, relative last seen and its description', async () => {
    fakeEngine({ ...BASE, 'GET /api/devices': pagedDevices(() => DEVICES) });
    renderPage();
    await screen.findByText('web-1');
    await screen.findByText('lab-2');
    expect(screen.getByRole('link', { name: 'web-1' })).toHaveAttribute('href', '/devices/web-1');
    const chip = (host: string) => within(rowOf(host)).getByTestId('status-chip');
    expect(chip('web-1')).toHaveTextContent('Connected');
    expect(chip('web-1')).toHaveAttribute('data-color', 'success');
    expect(chip('lab-2')).toHaveAttribute('data-color', 'warning');
    expect(chip('db-1')).toHaveAttribute('data-color', 'default');
    expect(within(rowOf('db-1')).getByText('Never')).toBeInTheDocument();
    const seen = rowOf('web-1').querySelector('time')!;
    expect(seen).toHaveAttribute('datetime', '2026-11-21T08:00:00Z');
    expect(seen.getAttribute('title')).toBeTruthy();
    expect(seen.textContent).toMatch(/ago$/);
    expect(within(rowOf('web-1')).getByText('Front web server')).toBeInTheDocument();
    expect(within(rowOf('lab-1')).getByTestId('trust-badge')).toHaveTextContent('Quarantined');
    expect(within(rowOf('web-1')).queryByTestId('trust-badge')).not.toBeInTheDocument();
  });

  it('tells how to enroll an agent when there are no devices at all', async () => {
    fakeEngine({ ...BASE, 'GET /api/devices': pagedDevices(() => []) });
    renderPage();
    const empty = await screen.findByTestId('devices-empty');
    expect(empty).toHaveTextContent('No devices yet');
    expect(within(empty).getByRole('link', { name: 'Sites' })).toHaveAttribute('href', '/sites');
    expect(empty).toHaveTextContent('Enroll agents');
  });

  it('shows an error instead of an empty state when the list fails', async () => {
    fakeEngine({ ...BASE, 'GET /api/devices': { status: 503, body: { error: 'unavailable', message: 'PostgreSQL does not answer' } } });
    renderPage();
    expect(await screen.findByText('PostgreSQL does not answer')).toBeInTheDocument();
    expect(screen.queryByTestId('devices-empty')).not.toBeInTheDocument();
  });

  it('reloads only the held block when an event names a device on screen', async () => {
    let status = 'Connected';
    const engine = fakeEngine({
      ...BASE,
      'GET /api/devices': pagedDevices(() => [device('web-1', { connectivity_status: status as 'Connected' }), device('web-2')]),
    });
    const { queryClient } = renderPage();
    await screen.findByText('web-1');
    expect(within(rowOf('web-1')).getByTestId('status-chip')).toHaveTextContent('Connected');
    const before = engine.callsTo('GET', '/api/devices').length;
    status = 'Disconnected';
    act(() => invalidateForDeviceEvent(queryClient, { guid: 'guid-web-1' }));
    await waitFor(() => expect(within(rowOf('web-1')).getByTestId('status-chip')).toHaveTextContent('Disconnected'));
    const reloads = engine.callsTo('GET', '/api/devices').slice(before);
    expect(reloads.length).toBeGreaterThan(0);
    // The held block again (offset 0, one block), never a walk through the whole list.
    for (const c of reloads) {
      expect(c.query.get('offset')).toBe('0');
      expect(c.query.get('limit')).toBe('100');
    }
  });

  it('updates the agents of the selected devices after a confirmation', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      ...BASE,
      'GET /api/devices': pagedDevices(() => DEVICES),
      'POST /api/devices/agent-maintenance': (call) => ({
        status: 202,
        body: { run_id: 'run-9', operations: (call.body as { guids: string[] }).guids.map((guid, i) => ({ guid, operation_id: `op-${i}` })) },
      }),
    });
    renderPage();
    await screen.findByText('web-1');
    await screen.findByText('lab-2');
    expect(screen.queryByRole('group', { name: 'Selected devices' })).not.toBeInTheDocument();
    await user.click(rowOf('web-1').querySelector('input[type="checkbox"]')!);
    await user.click(rowOf('lab-2').querySelector('input[type="checkbox"]')!);
    const bar = await screen.findByRole('group', { name: 'Selected devices' });
    // AG Grid reports a selection change after its own render pass, so the
    // bar can show the first click's count for a moment: wait for the second.
    await waitFor(() => expect(within(bar).getByTestId('selected-count')).toHaveTextContent('2 selected'));

    await user.click(within(bar).getByRole('button', { name: 'Update agents' }));
    const dialog = await screen.findByRole('dialog', { name: 'Update 2 agents?' });
    await user.click(within(dialog).getByRole('button', { name: 'Update agents' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/devices/agent-maintenance')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/devices/agent-maintenance')[0].body).toEqual({
      action: 'update_now',
      guids: expect.arrayContaining(['guid-web-1', 'guid-lab-2']),
    });
    expect((engine.callsTo('POST', '/api/devices/agent-maintenance')[0].body as { guids: string[] }).guids).toHaveLength(2);
    expect(await screen.findByText('Updating 2 agents')).toBeInTheDocument();
  });

  it('drops the selection when the filters change, so bulk actions reach listed devices only', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      ...BASE,
      'GET /api/devices': pagedDevices(() => DEVICES),
      'POST /api/devices/agent-maintenance': { status: 202, body: { run_id: 'run-1', operations: [{ guid: 'guid-db-1', operation_id: 'op-1' }] } },
    });
    renderPage();
    await screen.findByText('web-1');
    await user.click(rowOf('web-1').querySelector('input[type="checkbox"]')!);
    await waitFor(() => expect(screen.getByTestId('selected-count')).toHaveTextContent('1 selected'));

    await user.click(screen.getByRole('combobox', { name: 'Status' }));
    await user.click(await screen.findByRole('option', { name: 'Offline' }));
    await waitFor(() => expect(screen.queryByText('web-1')).not.toBeInTheDocument());
    await waitFor(() => expect(screen.queryByRole('group', { name: 'Selected devices' })).not.toBeInTheDocument());

    await user.click((await waitFor(() => rowOf('db-1'))).querySelector('input[type="checkbox"]')!);
    const bar = await screen.findByRole('group', { name: 'Selected devices' });
    await waitFor(() => expect(within(bar).getByTestId('selected-count')).toHaveTextContent('1 selected'));
    await user.click(within(bar).getByRole('button', { name: 'Update agents' }));
    const dialog = await screen.findByRole('dialog', { name: 'Update the agent on db-1?' });
    await user.click(within(dialog).getByRole('button', { name: 'Update agents' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/devices/agent-maintenance')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/devices/agent-maintenance')[0].body).toEqual({ action: 'update_now', guids: ['guid-db-1'] });
  });

  it('opens the quick run dialog with the selected devices', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      ...BASE,
      'GET /api/devices': pagedDevices(() => DEVICES),
      'GET /api/assemblies': { body: { assemblies: [] } },
    });
    renderPage();
    await screen.findByText('db-1');
    await user.click(rowOf('db-1').querySelector('input[type="checkbox"]')!);
    await user.click(within(await screen.findByRole('group', { name: 'Selected devices' })).getByRole('button', { name: 'Run script' }));
    const dialog = await screen.findByRole('dialog', { name: 'Run a script' });
    expect(within(dialog).getByRole('button', { name: 'db-1' })).toBeInTheDocument();
    expect(within(dialog).queryByRole('button', { name: 'web-1' })).not.toBeInTheDocument();
  });
});
