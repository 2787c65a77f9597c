import { afterEach, describe, expect, it, vi } from 'vitest';
import { act, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { useLocation } from 'react-router';
import type { Site } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import DevicesPage from './DevicesPage';
import { device } from './fixtures';
import { invalidateForDeviceEvent } from './queries';

const SITES: Site[] = [
  { site_id: 1, name: 'Head office', site_worker_slug: 'hq', site_worker_name: 'site:hq', device_count: 2, created_at: '2026-11-21T08:00:00Z' },
  { site_id: 2, name: 'Lab', site_worker_slug: 'lab', site_worker_name: 'site:lab', device_count: 2, created_at: '2026-11-21T08:00:00Z' },
];

const DEVICES = [
  device('web-1', { site_id: 1, site_name: 'Head office', connectivity_status: 'Connected', description: 'Front web server' }),
  device('db-1', { site_id: 1, site_name: 'Head office', connectivity_status: 'Offline', last_seen: null }),
  device('lab-1', { site_id: 2, site_name: 'Lab', connectivity_status: 'Connected', trust_state: 'quarantined' }),
  device('lab-2', { site_id: 2, site_name: 'Lab', connectivity_status: 'Disconnected' }),
];

function LocationProbe() {
  const location = useLocation();
  return <div data-testid="location">{location.pathname + location.search}</div>;
}

const query = () => new URLSearchParams(screen.getByTestId('location').textContent!.split('?')[1] ?? '');

function renderPage(route = '/devices') {
  return renderWithProviders(
    <SessionContext.Provider value={{ user: ADMIN, signOut: async () => {} }}>
      <WithToasts>
        <DevicesPage />
        <LocationProbe />
      </WithToasts>
    </SessionContext.Provider>,
    { route },
  );
}

const rowOf = (text: string) => screen.getByText(text).closest('.ag-row') as HTMLElement;

afterEach(() => vi.unstubAllGlobals());

describe('DevicesPage', () => {
  it('opens the spec drilldown URL pre-filtered, with the status token made canonical', async () => {
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      // Answer with everything: the page must still show only the filtered devices.
      'GET /api/devices': { body: { devices: DEVICES } },
    });
    renderPage('/devices?site=2&status=CONNECTED');
    expect(await screen.findByText('lab-1')).toBeInTheDocument();
    expect(screen.queryByText('lab-2')).not.toBeInTheDocument();
    expect(screen.queryByText('web-1')).not.toBeInTheDocument();
    await waitFor(() => expect(screen.getByTestId('location')).toHaveTextContent('/devices?site=2&status=connected'));
    const call = engine.callsTo('GET', '/api/devices')[0];
    expect(call.query.get('site_id')).toBe('2');
    expect(call.query.get('status')).toBe('connected');
    expect(screen.getByRole('combobox', { name: 'Site' })).toHaveTextContent('Lab');
    expect(screen.getByRole('combobox', { name: 'Status' })).toHaveTextContent('Connected');
    expect(screen.getByTestId('device-count')).toHaveTextContent('1 device');
  });

  it('writes site and status changes to the URL and queries with them', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/devices': { body: { devices: DEVICES } },
      'GET /api/devices/search': (call) => ({
        body: { devices: DEVICES.filter((d) => d.hostname.includes(call.query.get('hostname') ?? '')) },
      }),
    });
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
    expect(await screen.findByText('No devices match these filters.')).toBeInTheDocument();

    await user.click(screen.getByRole('button', { name: 'Clear filters' }));
    await waitFor(() => expect(query().toString()).toBe(''));
    expect(await screen.findByText('web-1')).toBeInTheDocument();
  });

  it('searches by hostname through the search route, keeping the text in the URL', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/devices': { body: { devices: DEVICES } },
      'GET /api/devices/search': (call) => ({
        body: { devices: DEVICES.filter((d) => d.hostname.includes(call.query.get('hostname') ?? '')) },
      }),
    });
    renderPage();
    expect(await screen.findByText('web-1')).toBeInTheDocument();
    await user.type(screen.getByRole('searchbox', { name: 'Search hostname' }), 'lab');
    await waitFor(() => expect(query().get('q')).toBe('lab'));
    await waitFor(() => expect(engine.callsTo('GET', '/api/devices/search').at(-1)?.query.get('hostname')).toBe('lab'));
    // Re-query on every try: the grid replaces its rows as the search
    // answers arrive, so an element found once may be detached by the time
    // it is checked.
    await waitFor(() => expect(screen.getByText('lab-2')).toBeInTheDocument());
    await waitFor(() => expect(screen.queryByText('web-1')).not.toBeInTheDocument());
    expect(screen.getByRole('searchbox', { name: 'Search hostname' })).toHaveValue('lab');

    await user.click(screen.getByRole('button', { name: 'Clear filters' }));
    await waitFor(() => expect(screen.getByRole('searchbox', { name: 'Search hostname' })).toHaveValue(''));
    expect(query().get('q')).toBeNull();
  });

  it('opens with the search from the URL', async () => {
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/devices/search': { body: { devices: [DEVICES[0]] } },
    });
    renderPage('/devices?q=web');
    expect(await screen.findByText('web-1')).toBeInTheDocument();
    expect(screen.getByRole('searchbox', { name: 'Search hostname' })).toHaveValue('web');
    expect(engine.callsTo('GET', '/api/devices/search')[0].query.get('hostname')).toBe('web');
    expect(engine.callsTo('GET', '/api/devices')).toHaveLength(0);
  });

  it('shows each device with a link, a coloured status chip, relative last seen and its description', async () => {
    fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/devices': { body: { devices: DEVICES } },
    });
    renderPage();
    await screen.findByText('web-1');
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
    fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/devices': { body: { devices: [] } },
    });
    renderPage();
    const empty = await screen.findByTestId('devices-empty');
    expect(empty).toHaveTextContent('No devices yet');
    expect(within(empty).getByRole('link', { name: 'Sites' })).toHaveAttribute('href', '/sites');
    expect(empty).toHaveTextContent('Enroll agents');
  });

  it('shows an error instead of an empty state when the list fails', async () => {
    fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/devices': { status: 503, body: { error: 'unavailable', message: 'PostgreSQL does not answer' } },
    });
    renderPage();
    expect(await screen.findByText('PostgreSQL does not answer')).toBeInTheDocument();
    expect(screen.queryByTestId('devices-empty')).not.toBeInTheDocument();
  });

  it('refetches when a device event arrives, so the grid updates live', async () => {
    let status = 'Connected';
    fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/devices': () => ({ body: { devices: [device('web-1', { connectivity_status: status as 'Connected' })] } }),
    });
    const { queryClient } = renderPage();
    await screen.findByText('web-1');
    expect(within(rowOf('web-1')).getByTestId('status-chip')).toHaveTextContent('Connected');
    status = 'Disconnected';
    act(() => invalidateForDeviceEvent(queryClient, { guid: 'guid-web-1' }));
    await waitFor(() => expect(within(rowOf('web-1')).getByTestId('status-chip')).toHaveTextContent('Disconnected'));
  });

  it('updates the agents of the selected devices after a confirmation', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/devices': { body: { devices: DEVICES } },
      'POST /api/devices/agent-maintenance': (call) => ({
        status: 202,
        body: { run_id: 'run-9', operations: (call.body as { guids: string[] }).guids.map((guid, i) => ({ guid, operation_id: `op-${i}` })) },
      }),
    });
    renderPage();
    await screen.findByText('web-1');
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

  it('opens the quick run dialog with the selected devices', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/sites': { body: { sites: SITES } },
      'GET /api/devices': { body: { devices: DEVICES } },
      'GET /api/assemblies': { body: { assemblies: [] } },
    });
    renderPage();
    await screen.findByText('web-1');
    await user.click(rowOf('db-1').querySelector('input[type="checkbox"]')!);
    await user.click(within(await screen.findByRole('group', { name: 'Selected devices' })).getByRole('button', { name: 'Run script' }));
    const dialog = await screen.findByRole('dialog', { name: 'Run a script' });
    expect(within(dialog).getByRole('button', { name: 'db-1' })).toBeInTheDocument();
    expect(within(dialog).queryByRole('button', { name: 'web-1' })).not.toBeInTheDocument();
  });
});
