import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes, useLocation } from 'react-router';
import type { SoftwareAuditRow, User } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { fill } from '../../test/codeEditor';
import { ADMIN, fakeEngine, validationFailed, type RecordedCall } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { WithToasts } from '../../test/toasts';
import { device } from '../devices/fixtures';
import SoftwarePage, { devicesWithPath, softwareFilter } from './SoftwarePage';

function Probe() {
  const location = useLocation();
  return <div data-testid="location">{location.pathname + location.search}</div>;
}

const OPERATOR: User = { ...ADMIN, username: 'olga', role: 'operator' };

function renderPage(user: User = ADMIN) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user, signOut: async () => {} }}>
      <WithToasts>
        <Routes>
          <Route path="/software" element={<SoftwarePage />} />
          <Route path="/devices" element={<div data-testid="devices-page" />} />
        </Routes>
        <Probe />
      </WithToasts>
    </SessionContext.Provider>,
    { route: '/software' },
  );
}

const row = (name: string, version: string, extra: Partial<SoftwareAuditRow> = {}): SoftwareAuditRow => ({
  name,
  version,
  publisher: 'Example Corp',
  device_count: 3,
  icon_hash: null,
  uninstall_blocked: false,
  uninstall_override: false,
  ...extra,
});

const ROWS = [
  row('7-Zip', '23.01', { device_count: 41, icon_hash: 'abc123', publisher: 'Igor Pavlov' }),
  row('nginx', '1.22.1-9', { device_count: 12, uninstall_blocked: true }),
  row('openssl', '', { device_count: 1, uninstall_override: true }),
];

/** The audit answers ROWS for any query, with `total` as given. */
function engine(total = ROWS.length, extra: Record<string, unknown> = {}) {
  return fakeEngine({
    'GET /api/software/audit': { body: { software: ROWS, total } },
    'GET /api/devices': { body: { devices: [device('web-1')], total: 1, limit: 1, offset: 0, online_window_seconds: 90 } },
    ...(extra as Record<string, never>),
  });
}

const auditCalls = (fake: ReturnType<typeof engine>) =>
  fake.callsTo('GET', '/api/software/audit').map((c) => Object.fromEntries(c.query.entries()));
const rowOf = (text: string) => screen.getByText(text).closest('tr') as HTMLElement;

afterEach(() => vi.unstubAllGlobals());

describe('softwareFilter', () => {
  it('matches the name and version, or the name alone', () => {
    expect(softwareFilter({ name: 'nginx', version: '1.22' })).toEqual({
      match: 'all',
      conditions: [{ field: 'software', key: 'nginx', op: 'version_eq', value: '1.22' }],
    });
    expect(softwareFilter({ name: 'openssl', version: '' }).conditions).toEqual([
      { field: 'software', key: 'openssl', op: 'installed' },
    ]);
  });
});

describe('SoftwarePage', () => {
  it('shows the audit with icons, counts and uninstall rules', async () => {
    const fake = engine();
    renderPage();
    expect(await screen.findByTestId('software-total')).toHaveTextContent('3 rows');
    expect(screen.getAllByTestId('software-row')).toHaveLength(3);
    const zip = rowOf('7-Zip');
    expect(zip).toHaveTextContent('23.01');
    expect(zip).toHaveTextContent('Igor Pavlov');
    expect(within(zip).getByRole('button', { name: 'Devices with 7-Zip 23.01' })).toHaveTextContent('41');
    expect(zip.querySelector('img')).toHaveAttribute('src', '/api/device/software/icon/abc123');
    expect(within(rowOf('nginx')).getByText('Blocked')).toBeInTheDocument();
    expect(within(rowOf('openssl')).getByText('Custom command')).toBeInTheDocument();
    expect(auditCalls(fake)[0]).toEqual({ limit: '100', offset: '0', sort: 'name' });
  });

  it('searches, sorts and pages on the Engine', async () => {
    const user = userEvent.setup({ delay: null });
    const fake = engine(250);
    renderPage();
    await screen.findByTestId('software-total');

    await user.click(screen.getByRole('button', { name: 'Go to next page' }));
    await waitFor(() => expect(auditCalls(fake).at(-1)).toEqual({ limit: '100', offset: '100', sort: 'name' }));

    await user.click(screen.getByRole('button', { name: 'Name' }));
    await waitFor(() => expect(auditCalls(fake).at(-1)).toEqual({ limit: '100', offset: '0', sort: '-name' }));
    await user.click(screen.getByRole('button', { name: 'Devices' }));
    await waitFor(() => expect(auditCalls(fake).at(-1)).toEqual({ limit: '100', offset: '0', sort: '-device_count' }));
    await user.click(screen.getByRole('button', { name: 'Devices' }));
    await waitFor(() => expect(auditCalls(fake).at(-1)).toEqual({ limit: '100', offset: '0', sort: 'device_count' }));

    await fill(user, screen.getByRole('searchbox', { name: 'Search software' }), ' zip ');
    await waitFor(() =>
      expect(auditCalls(fake).at(-1)).toEqual({ limit: '100', offset: '0', sort: 'device_count', q: 'zip' }),
    );
    expect(await screen.findByTestId('software-total')).toHaveTextContent('250 rows matching “zip”');
    // Typing settles before the Engine is asked: no request per key.
    expect(auditCalls(fake).filter((c) => c.q && c.q !== 'zip')).toEqual([]);
  });

  it('drills down to the devices with a row through a draft filter in the URL', async () => {
    const user = userEvent.setup({ delay: null });
    engine();
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Devices with nginx 1.22.1-9' }));
    await screen.findByTestId('devices-page');
    const url = new URL(screen.getByTestId('location').textContent!, 'http://console.test');
    expect(url.pathname).toBe('/devices');
    expect(JSON.parse(url.searchParams.get('filter')!)).toEqual({
      match: 'all',
      conditions: [{ field: 'software', key: 'nginx', op: 'version_eq', value: '1.22.1-9' }],
    });
    expect(devicesWithPath({ name: 'a b&c', version: '' })).toBe(
      `/devices?filter=${encodeURIComponent(JSON.stringify(softwareFilter({ name: 'a b&c', version: '' }))).replace(/%20/g, '+')}`,
    );
  });

  it('blocks and allows uninstalling through a device that has the row', async () => {
    const user = userEvent.setup({ delay: null });
    const fake = engine(3, {
      'POST /api/device/software/web-1/uninstall-block': { body: {} },
      'POST /api/device/software/web-1/uninstall-unblock': { body: {} },
    });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Actions for 7-Zip 23.01' }));
    await user.click(await screen.findByRole('menuitem', { name: 'Block uninstall…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Block uninstalling 7-Zip 23.01' });
    const before = fake.callsTo('GET', '/api/software/audit').length;
    // A reason is required.
    expect(within(dialog).getByRole('button', { name: 'Block' })).toBeDisabled();
    await fill(user, within(dialog).getByRole('textbox', { name: 'Reason' }), 'the backup agent needs it');
    await user.click(within(dialog).getByRole('button', { name: 'Block' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());

    const lookup = fake.callsTo('GET', '/api/devices')[0];
    expect(lookup.query.get('limit')).toBe('1');
    expect(JSON.parse(lookup.query.get('filter')!)).toEqual(softwareFilter({ name: '7-Zip', version: '23.01' }));
    expect(fake.callsTo('POST', '/api/device/software/web-1/uninstall-block').map((c) => c.body)).toEqual([
      { name: '7-Zip', version: '23.01', reason: 'the backup agent needs it' },
    ]);
    await waitFor(() => expect(fake.callsTo('GET', '/api/software/audit').length).toBeGreaterThan(before));
    expect(await screen.findByText('Block uninstalling 7-Zip 23.01: saved')).toBeInTheDocument();

    // Every version: no version in the rule, and the device lookup matches the name alone.
    await user.click(screen.getByRole('button', { name: 'Actions for nginx 1.22.1-9' }));
    await user.click(await screen.findByRole('menuitem', { name: 'Allow uninstall…' }));
    const allow = await screen.findByRole('dialog', { name: 'Allow uninstalling nginx 1.22.1-9' });
    await user.click(within(allow).getByRole('combobox', { name: 'Applies to' }));
    await user.click(await screen.findByRole('option', { name: 'Every version of nginx' }));
    await user.click(within(allow).getByRole('button', { name: 'Allow' }));
    await waitFor(() =>
      expect(fake.callsTo('POST', '/api/device/software/web-1/uninstall-unblock').map((c) => c.body)).toEqual([{ name: 'nginx' }]),
    );
    expect(JSON.parse(fake.callsTo('GET', '/api/devices').at(-1)!.query.get('filter')!)).toEqual(softwareFilter({ name: 'nginx' }));
  });

  it('sets an uninstall command and shows the API field error', async () => {
    const user = userEvent.setup({ delay: null });
    const replies = [validationFailed({ executable: 'must be an absolute path (C:\\..., \\\\server\\share\\... or /...) or msiexec.exe' }), { body: {} }];
    const fake = engine(3, { 'POST /api/device/software/web-1/uninstall-override': replies });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Actions for openssl' }));
    await user.click(await screen.findByRole('menuitem', { name: 'Set uninstall command…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Uninstall command of openssl' });
    const save = within(dialog).getByRole('button', { name: 'Save' });
    expect(save).toBeDisabled();
    await fill(user, within(dialog).getByRole('textbox', { name: 'Executable' }), 'uninstall.exe');
    await fill(user, within(dialog).getByRole('textbox', { name: 'Arguments' }), '/S');
    await user.click(save);
    expect(await within(dialog).findByText(/must be an absolute path/)).toBeInTheDocument();
    expect(within(dialog).getByRole('textbox', { name: 'Executable' })).toHaveAttribute('aria-invalid', 'true');
    await fill(user, within(dialog).getByRole('textbox', { name: 'Executable' }), 'C:\\Tools\\uninstall.exe');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(fake.callsTo('POST', '/api/device/software/web-1/uninstall-override').map((c) => c.body)).toEqual([
      { name: 'openssl', version: '', executable: 'uninstall.exe', arguments: '/S' },
      { name: 'openssl', version: '', executable: 'C:\\Tools\\uninstall.exe', arguments: '/S' },
    ]);

    // Removing the override sends remove alone.
    await user.click(screen.getByRole('button', { name: 'Actions for openssl' }));
    await user.click(await screen.findByRole('menuitem', { name: 'Set uninstall command…' }));
    const again = await screen.findByRole('dialog', { name: 'Uninstall command of openssl' });
    await user.click(within(again).getByRole('switch', { name: /Remove the override/ }));
    await user.click(within(again).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(fake.callsTo('POST', '/api/device/software/web-1/uninstall-override')).toHaveLength(3));
    expect(fake.callsTo('POST', '/api/device/software/web-1/uninstall-override')[2].body).toEqual({ name: 'openssl', version: '', remove: true });
  });

  it('uploads an icon as base64', async () => {
    const user = userEvent.setup({ delay: null });
    const fake = engine(3, { 'POST /api/device/software/web-1/icon-override': (c: RecordedCall) => ({ body: c.body }) });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Actions for 7-Zip 23.01' }));
    await user.click(await screen.findByRole('menuitem', { name: 'Set icon…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Icon of 7-Zip 23.01' });
    // Larger than the Engine takes: refused before sending.
    await user.upload(within(dialog).getByLabelText('Icon image'), new File(['x'.repeat(262_145)], 'big.png', { type: 'image/png' }));
    expect(dialog).toHaveTextContent('big.png is 262145 bytes; an icon is at most 262144 bytes.');
    expect(within(dialog).getByRole('button', { name: 'Save' })).toBeDisabled();
    await user.upload(within(dialog).getByLabelText('Icon image'), new File(['PNGDATA'], 'zip.png', { type: 'image/png' }));
    expect(dialog).toHaveTextContent('zip.png (7 bytes)');
    await user.click(within(dialog).getByRole('button', { name: 'Save' }));
    await waitFor(() => expect(screen.queryByRole('dialog')).not.toBeInTheDocument());
    expect(fake.callsTo('POST', '/api/device/software/web-1/icon-override').map((c) => c.body)).toEqual([
      { name: '7-Zip', icon: btoa('PNGDATA') },
    ]);
    // An icon is the product's: the device lookup matches the name alone.
    expect(JSON.parse(fake.callsTo('GET', '/api/devices')[0].query.get('filter')!)).toEqual(softwareFilter({ name: '7-Zip' }));
  });

  it('says so when no visible device has the row any more', async () => {
    const user = userEvent.setup({ delay: null });
    const fake = engine(3, { 'GET /api/devices': { body: { devices: [], total: 0 } } });
    renderPage();
    await user.click(await screen.findByRole('button', { name: 'Actions for nginx 1.22.1-9' }));
    await user.click(await screen.findByRole('menuitem', { name: 'Allow uninstall…' }));
    const dialog = await screen.findByRole('dialog');
    await user.click(within(dialog).getByRole('button', { name: 'Allow' }));
    expect(await within(dialog).findByTestId('error-alert')).toHaveTextContent('No device you can see has nginx 1.22.1-9 any more.');
    expect(fake.calls.filter((c) => c.method === 'POST')).toEqual([]);
  });

  it('offers operators only the rules the Engine lets them change', async () => {
    const user = userEvent.setup({ delay: null });
    engine();
    renderPage(OPERATOR);
    await user.click(await screen.findByRole('button', { name: 'Actions for nginx 1.22.1-9' }));
    const items = (await screen.findAllByRole('menuitem')).map((m) => m.textContent);
    expect(items).toEqual(['Set icon…']);
    await user.keyboard('{Escape}');
    await user.click(screen.getByRole('button', { name: 'Actions for 7-Zip 23.01' }));
    await waitFor(() => expect(screen.getAllByRole('menuitem').map((m) => m.textContent)).toEqual(['Set icon…', 'Block uninstall…']));
  });
});
