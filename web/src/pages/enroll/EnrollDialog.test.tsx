import { wireSite } from '../../test/wire';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { DeviceApproval, EnrollmentCode, InstallLink, Site, User } from '../../api/types';
import { SessionContext } from '../../auth/session';
import { ADMIN, fakeEngine, validationFailed } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import SitesPage from '../SitesPage';
import { orderApprovals } from './ApprovalsQueue';
import { installCommands, oneLiner } from './InstallCommands';

const OPERATOR: User = { ...ADMIN, username: 'olga', role: 'operator' };
const FUTURE = new Date(Date.now() + 3 * 3600_000).toISOString();

function site(extra: Partial<Site> = {}): Site {
  return wireSite({
    site_id: 1,
    name: 'Head office',
    site_worker_slug: 'hq',
    site_worker_name: 'site:hq',
    public_base_url: 'https://cairn.example.test',
    public_hostname: 'cairn.example.test',
    device_count: 0,
    created_at: '2026-11-21T08:00:00Z',
    auto_approve_until: null,
    ...extra,
  });
}

function code(id: number, value: string | null, extra: Partial<EnrollmentCode> = {}): EnrollmentCode {
  return {
    id,
    code: value,
    site_id: 1,
    site_name: 'Head office',
    expires_at: FUTURE,
    max_uses: 25,
    uses: 3,
    status: 'active',
    created_by: 'admin',
    created_at: '2026-11-21T08:00:00Z',
    rotated_at: null,
    code_status: value ? 'ok' : 'unreadable',
    ...extra,
  };
}

function approval(id: string, hostname: string, extra: Partial<DeviceApproval> = {}): DeviceApproval {
  return {
    id,
    hostname,
    site_id: 1,
    site_name: 'Head office',
    status: 'pending',
    fingerprint: 'fp-0123456789abcdef0123',
    key_thumbprint: 'jkt-1',
    operating_system: 'Debian GNU/Linux 12',
    agent_version: '0.4.0',
    remote_addr: '192.0.2.50',
    auto_approved: false,
    readmission: false,
    requested_at: '2026-11-21T08:00:00Z',
    expires_at: FUTURE,
    decided_at: null,
    decided_by: null,
    device_guid: null,
    ...extra,
  };
}

const CODE_A = 'abcdefgh-ijklmnop-qrstuvwx-yz234567';
const CODE_B = 'zzzzzzzz-yyyyyyyy-xxxxxxxx-wwwwwwww';

function renderSites(user: User = ADMIN) {
  return renderWithProviders(
    <SessionContext.Provider value={{ user, signOut: async () => {} }}>
      <SitesPage />
    </SessionContext.Provider>,
    { route: '/sites' },
  );
}

async function openDialog(u: ReturnType<typeof userEvent.setup>) {
  await u.click(await screen.findByRole('button', { name: 'Enroll agents in Head office' }));
  return screen.findByRole('dialog', { name: 'Enroll agents in Head office' });
}

const part = (dialog: HTMLElement, name: string) => within(dialog).getByRole('region', { name });

afterEach(() => vi.unstubAllGlobals());

describe('installCommands', () => {
  it('pins the CA with a fingerprint check, or leaves it out', () => {
    const pinned = installCommands({ baseUrl: 'https://cairn.example.test/', code: CODE_A, pinCA: true });
    expect(pinned.caDownload).toEqual([
      'curl -fsSk -o ca.pem https://cairn.example.test/api/tls/ca.pem',
      'openssl x509 -in ca.pem -noout -fingerprint -sha256',
    ]);
    expect(pinned.enroll).toEqual([
      `sudo cairn-agent enroll --server https://cairn.example.test --code ${CODE_A} --ca-file ca.pem`,
      'sudo cairn-agent install',
    ]);
    const plain = installCommands({ baseUrl: 'http://127.0.0.1:8080', code: '<code>', pinCA: false });
    expect(plain.caDownload).toEqual([]);
    expect(plain.enroll[0]).toBe(`sudo cairn-agent enroll --server http://127.0.0.1:8080 --code '<code>'`);
  });
});

const LINUX_URL =
  'https://cairn.example.test/api/agent/install/download/linux-amd64?artifact=linux-amd64-0123456789abcdef&download_signature=sig&expires=2030-01-08T12%3A00%3A00Z&site_id=1';
const WINDOWS_URL =
  'https://cairn.example.test/api/agent/install/download/windows-amd64?artifact=windows-amd64-fedcba9876543210&download_signature=sig2&expires=2030-01-08T12%3A00%3A00Z&site_id=1';

function link(url: string, extra: Partial<InstallLink> = {}): InstallLink {
  return {
    url,
    token_url: url.replace('?', '/token?'),
    expires_at: '2030-01-08T12:00:00Z',
    download_count: 3,
    artifact_id: 'linux-amd64-0123456789abcdef',
    build_id: 'v0.4.0-12-gabc1234',
    install_command: '',
    created_at: '2030-01-01T12:00:00Z',
    ...extra,
  };
}

const withLinks = (extra: Partial<Site> = {}) =>
  site({
    agent_binary_source: 'engine',
    install_links: { 'linux-amd64': link(LINUX_URL), 'windows-amd64': link(WINDOWS_URL, { download_count: 1 }) },
    ...extra,
  });

describe('oneLiner', () => {
  it('downloads through the signed link and runs install with the server and code', () => {
    // The same line as the Engine's install_command (installlinks.Command) for the code.
    expect(oneLiner({ platform: 'linux-amd64', linkUrl: LINUX_URL, baseUrl: 'https://cairn.example.test/', code: CODE_A, pinCA: false })).toBe(
      `f=$(mktemp) && curl -fsSL -o "$f" '${LINUX_URL}' && chmod 0755 "$f" && sudo "$f" install --server https://cairn.example.test --code ${CODE_A} && rm -f "$f"`,
    );
    expect(oneLiner({ platform: 'linux-amd64', linkUrl: LINUX_URL, baseUrl: 'https://cairn.example.test', code: CODE_A, pinCA: true })).toBe(
      `f=$(mktemp) && curl -fsSL --cacert ca.pem -o "$f" '${LINUX_URL}' && chmod 0755 "$f" && sudo "$f" install --server https://cairn.example.test --code ${CODE_A} --ca-file ca.pem && rm -f "$f"`,
    );
    expect(oneLiner({ platform: 'windows-amd64', linkUrl: WINDOWS_URL, baseUrl: 'https://cairn.example.test', code: "it's", pinCA: true })).toBe(
      "$f = Join-Path $env:TEMP ('cairn-agent-' + [guid]::NewGuid() + '.exe'); " +
        `Invoke-WebRequest -UseBasicParsing -Uri '${WINDOWS_URL}' -OutFile $f; ` +
        "& $f install --server 'https://cairn.example.test' --code 'it''s'",
    );
  });
});

describe('orderApprovals', () => {
  it('keeps the site, puts pending first (oldest first), then recent decisions', () => {
    const list = [
      approval('a', 'new', { requested_at: '2026-11-21T09:00:00Z' }),
      approval('b', 'done', { status: 'enrolled', decided_at: '2026-11-21T08:30:00Z' }),
      approval('c', 'old', { requested_at: '2026-11-21T07:00:00Z' }),
      approval('d', 'elsewhere', { site_id: 2 }),
    ];
    expect(orderApprovals(list, 1).map((a) => a.id)).toEqual(['c', 'a', 'b']);
  });
});

describe('Enroll agents dialog', () => {
  it('lists the codes and builds the install commands from the site URL and an active code', async () => {
    const u = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/sites': { body: { sites: [site()] } },
      'GET /api/admin/enrollment-codes': {
        body: { codes: [code(2, CODE_A), code(1, null, { status: 'active' }), code(3, CODE_B, { status: 'expired' })] },
      },
      'GET /api/admin/device-approvals': { body: { approvals: [] } },
    });
    renderSites();
    const dialog = await openDialog(u);
    const codes = part(dialog, 'Enrollment codes');
    const table = await within(codes).findByRole('table', { name: 'Enrollment codes' });
    expect(table).toHaveTextContent(CODE_A);
    expect(table).toHaveTextContent('3 / 25');
    expect(table).toHaveTextContent('Unreadable');
    expect(table).toHaveTextContent('Expired');

    const install = part(dialog, 'Install an agent');
    // No agent builds on this Engine: the steps with a binary copied by hand.
    expect(within(install).getByTestId('commands-no-build')).toBeInTheDocument();
    expect(within(install).queryByRole('group', { name: 'Platform' })).not.toBeInTheDocument();
    const enroll = within(install).getByTestId('commands-enroll');
    expect(enroll).toHaveTextContent(`sudo cairn-agent enroll --server https://cairn.example.test --code ${CODE_A} --ca-file ca.pem`);
    expect(enroll).toHaveTextContent('sudo cairn-agent install');
    expect(within(install).getByTestId('commands-ca')).toHaveTextContent('https://cairn.example.test/api/tls/ca.pem');
    expect(within(install).getByRole('link', { name: 'download ca.pem' })).toHaveAttribute('href', '/api/tls/ca.pem');

    await u.click(within(install).getByRole('switch', { name: 'Pin the Engine’s local CA' }));
    expect(within(install).getByTestId('commands-enroll')).not.toHaveTextContent('--ca-file');
    expect(within(install).queryByTestId('commands-ca')).not.toBeInTheDocument();

    await u.click(within(install).getByRole('button', { name: 'Copy enroll commands' }));
    expect(await navigator.clipboard.readText()).toBe(
      `sudo cairn-agent enroll --server https://cairn.example.test --code ${CODE_A}\nsudo cairn-agent install`,
    );
    await u.click(within(codes).getByRole('button', { name: 'Copy code abcdefgh' }));
    expect(await navigator.clipboard.readText()).toBe(CODE_A);
  });

  it('gives the one-line installer through the site’s signed link, per platform, and revokes a link', async () => {
    const u = userEvent.setup({ delay: null });
    let current = withLinks();
    const engine = fakeEngine({
      'GET /api/sites': () => ({ body: { sites: [current] } }),
      'GET /api/admin/enrollment-codes': { body: { codes: [code(2, CODE_A)] } },
      'GET /api/admin/device-approvals': { body: { approvals: [] } },
      'POST /api/sites/1/agent-install-links/linux-amd64/revoke': () => {
        const fresh = link(LINUX_URL.replace('=sig&', '=fresh&'), { download_count: 0 });
        current = withLinks({ install_links: { ...current.install_links, 'linux-amd64': fresh } });
        return { body: fresh };
      },
    });
    renderSites();
    const dialog = await openDialog(u);
    const install = part(dialog, 'Install an agent');
    const line = await within(install).findByTestId('commands-install');
    expect(line).toHaveTextContent(`curl -fsSL --cacert ca.pem -o "$f" '${LINUX_URL}'`);
    expect(line).toHaveTextContent(`install --server https://cairn.example.test --code ${CODE_A} --ca-file ca.pem`);
    expect(within(install).getByTestId('commands-ca')).toBeInTheDocument();
    expect(within(install).queryByTestId('commands-no-build')).not.toBeInTheDocument();
    expect(within(install).getByTestId('install-link-info')).toHaveTextContent('Agent build v0.4.0-12-gabc1234');
    expect(within(install).getByTestId('install-link-info')).toHaveTextContent('downloaded 3 times');

    await u.click(within(install).getByRole('switch', { name: 'Pin the Engine’s local CA' }));
    await u.click(within(install).getByRole('button', { name: 'Copy install command' }));
    expect(await navigator.clipboard.readText()).toBe(
      `f=$(mktemp) && curl -fsSL -o "$f" '${LINUX_URL}' && chmod 0755 "$f" && sudo "$f" install --server https://cairn.example.test --code ${CODE_A} && rm -f "$f"`,
    );

    await u.click(within(install).getByRole('button', { name: 'Windows' }));
    expect(within(install).getByTestId('commands-install')).toHaveTextContent(`Invoke-WebRequest -UseBasicParsing -Uri '${WINDOWS_URL}'`);
    expect(within(install).getByTestId('install-link-info')).toHaveTextContent('downloaded 1 time');
    expect(within(install).getByTestId('windows-note')).toBeInTheDocument();
    expect(within(install).queryByRole('switch', { name: 'Pin the Engine’s local CA' })).not.toBeInTheDocument();

    await u.click(within(install).getByRole('button', { name: 'Linux' }));
    await u.click(within(install).getByRole('button', { name: 'Revoke link' }));
    expect(await within(install).findByTestId('install-link-revoked')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/sites/1/agent-install-links/linux-amd64/revoke')).toHaveLength(1);
    await waitFor(() => expect(within(install).getByTestId('commands-install')).toHaveTextContent('download_signature=fresh'));
    expect(within(install).getByTestId('install-link-info')).toHaveTextContent('downloaded 0 times');
  });

  it('does not offer operators to revoke a link', async () => {
    const u = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/sites': { body: { sites: [withLinks()] } },
      'GET /api/admin/enrollment-codes': { body: { codes: [code(2, CODE_A)] } },
      'GET /api/admin/device-approvals': { body: { approvals: [] } },
    });
    renderSites(OPERATOR);
    const dialog = await openDialog(u);
    const install = part(dialog, 'Install an agent');
    expect(await within(install).findByTestId('commands-install')).toBeInTheDocument();
    expect(within(install).queryByRole('button', { name: 'Revoke link' })).not.toBeInTheDocument();
  });

  it('creates a code with the chosen expiry and use limit, checking the limit first', async () => {
    const u = userEvent.setup({ delay: null });
    const codes: EnrollmentCode[] = [];
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: [site()] } },
      'GET /api/admin/enrollment-codes': () => ({ body: { codes } }),
      'GET /api/admin/device-approvals': { body: { approvals: [] } },
      'POST /api/admin/enrollment-codes': (call) => {
        const b = call.body as { expires_in_seconds: number; max_uses: number };
        const c = code(9, CODE_B, { max_uses: b.max_uses, uses: 0 });
        codes.unshift(c);
        return { status: 201, body: c };
      },
    });
    renderSites();
    const dialog = await openDialog(u);
    const codesPart = part(dialog, 'Enrollment codes');
    expect(await within(codesPart).findByTestId('no-codes')).toBeInTheDocument();
    expect(within(part(dialog, 'Install an agent')).getByTestId('commands-need-code')).toBeInTheDocument();

    const uses = within(codesPart).getByLabelText('Max uses');
    await u.clear(uses);
    await u.type(uses, '0');
    await u.click(within(codesPart).getByRole('button', { name: 'Create code' }));
    expect(within(codesPart).getByText('Enter a whole number from 1 to 100000.')).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/admin/enrollment-codes')).toHaveLength(0);

    await u.clear(uses);
    await u.type(uses, '5');
    await u.click(within(codesPart).getByRole('combobox', { name: 'Expires after' }));
    await u.click(await screen.findByRole('option', { name: '1 day' }));
    await u.click(within(codesPart).getByRole('button', { name: 'Create code' }));
    expect(await within(codesPart).findByText(CODE_B)).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/admin/enrollment-codes')[0].body).toEqual({
      site_id: 1,
      expires_in_seconds: 86400,
      max_uses: 5,
    });
    expect(within(part(dialog, 'Install an agent')).getByTestId('commands-enroll')).toHaveTextContent(`--code ${CODE_B}`);
  });

  it('shows the Engine’s field errors under the inputs and the rest above', async () => {
    const u = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/sites': { body: { sites: [site()] } },
      'GET /api/admin/enrollment-codes': { body: { codes: [] } },
      'GET /api/admin/device-approvals': { body: { approvals: [] } },
      'POST /api/admin/enrollment-codes': [
        validationFailed({ max_uses: 'must be at most 100000', expires_in_seconds: 'must be at least 60' }),
        validationFailed({ site_id: 'site 1 is not in your scope' }),
      ],
    });
    renderSites();
    const dialog = await openDialog(u);
    const codesPart = part(dialog, 'Enrollment codes');
    await within(codesPart).findByTestId('no-codes');
    await u.click(within(codesPart).getByRole('button', { name: 'Create code' }));
    expect(await within(codesPart).findByText('must be at most 100000')).toHaveClass('Mui-error');
    expect(within(codesPart).getByText('must be at least 60')).toHaveClass('Mui-error');
    expect(within(codesPart).queryByTestId('error-alert')).not.toBeInTheDocument();
    await u.click(within(codesPart).getByRole('button', { name: 'Create code' }));
    const alert = await within(codesPart).findByTestId('error-alert');
    expect(alert).toHaveTextContent('site_id: site 1 is not in your scope');
  });

  it('rotates and deletes a code only after confirming', async () => {
    const u = userEvent.setup({ delay: null });
    let codes = [code(2, CODE_A)];
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: [site()] } },
      'GET /api/admin/enrollment-codes': () => ({ body: { codes } }),
      'GET /api/admin/device-approvals': { body: { approvals: [] } },
      'POST /api/admin/enrollment-codes/2/rotate': () => {
        codes = [code(2, CODE_B, { uses: 0 })];
        return { body: codes[0] };
      },
      'DELETE /api/admin/enrollment-codes/2': () => {
        codes = [];
        return { body: { deleted: 2 } };
      },
    });
    renderSites();
    const dialog = await openDialog(u);
    const codesPart = part(dialog, 'Enrollment codes');
    await within(codesPart).findByText(CODE_A);

    await u.click(within(codesPart).getByRole('button', { name: 'Rotate code abcdefgh' }));
    let confirm = await screen.findByRole('dialog', { name: 'Rotate code abcdefgh…?' });
    expect(confirm).toHaveTextContent('stops working at once');
    await u.click(within(confirm).getByRole('button', { name: 'Cancel' }));
    expect(engine.callsTo('POST', '/api/admin/enrollment-codes/2/rotate')).toHaveLength(0);
    await u.click(within(codesPart).getByRole('button', { name: 'Rotate code abcdefgh' }));
    confirm = await screen.findByRole('dialog', { name: 'Rotate code abcdefgh…?' });
    await u.click(within(confirm).getByRole('button', { name: 'Rotate' }));
    expect(await within(codesPart).findByText(CODE_B)).toBeInTheDocument();
    expect(within(codesPart).queryByText(CODE_A)).not.toBeInTheDocument();
    expect(within(codesPart).getByRole('table')).toHaveTextContent('0 / 25');

    await u.click(within(codesPart).getByRole('button', { name: 'Delete code zzzzzzzz' }));
    confirm = await screen.findByRole('dialog', { name: 'Delete code zzzzzzzz…?' });
    expect(confirm).toHaveTextContent('can no longer enroll');
    await u.click(within(confirm).getByRole('button', { name: 'Delete' }));
    expect(await within(codesPart).findByTestId('no-codes')).toBeInTheDocument();
    expect(engine.callsTo('DELETE', '/api/admin/enrollment-codes/2')).toHaveLength(1);
  });

  it('approves and denies pending requests and shows what the Engine recorded', async () => {
    const u = userEvent.setup({ delay: null });
    let approvals = [
      approval('ap-2', 'web-2', { requested_at: '2026-11-21T09:00:00Z' }),
      approval('ap-0', 'old-1', { status: 'denied', decided_by: 'admin', decided_at: '2026-11-21T07:30:00Z' }),
      approval('ap-1', 'web-1', { requested_at: '2026-11-21T08:00:00Z' }),
      approval('ap-3', 'web-3', { requested_at: '2026-11-21T09:30:00Z' }),
      approval('ap-9', 'other-site', { site_id: 2 }),
    ];
    const decide = (id: string, status: string) => {
      approvals = approvals.map((a) => (a.id === id ? { ...a, status, decided_by: 'admin', decided_at: new Date().toISOString() } : a));
      return { body: approvals.find((a) => a.id === id) };
    };
    const engine = fakeEngine({
      'GET /api/sites': { body: { sites: [site()] } },
      'GET /api/admin/enrollment-codes': { body: { codes: [] } },
      'GET /api/admin/device-approvals': () => ({ body: { approvals } }),
      'POST /api/admin/device-approvals/ap-1/approve': () => decide('ap-1', 'approved'),
      'POST /api/admin/device-approvals/ap-2/deny': () => decide('ap-2', 'denied'),
      // The workflow has not recorded it within the wait: 202 with the request still pending.
      'POST /api/admin/device-approvals/ap-3/approve': () => ({ status: 202, body: approvals.find((a) => a.id === 'ap-3') }),
    });
    renderSites();
    const dialog = await openDialog(u);
    const queue = part(dialog, 'Approvals');
    const table = await within(queue).findByRole('table', { name: 'Enrollment requests' });
    const hosts = () => within(table).getAllByRole('row').slice(1).map((r) => within(r).getAllByRole('cell')[0].textContent);
    expect(hosts().map((h) => h?.split('fingerprint')[0])).toEqual(['web-1', 'web-2', 'web-3', 'old-1']);
    expect(queue).toHaveTextContent('3 waiting for a decision.');

    await u.click(within(queue).getByRole('button', { name: 'Approve web-1' }));
    expect(await within(queue).findByTestId('approval-result')).toHaveTextContent('Approved web-1.');
    expect(engine.callsTo('POST', '/api/admin/device-approvals/ap-1/approve')).toHaveLength(1);
    const row = (host: string) => within(table).getByText(host).closest('tr') as HTMLElement;
    await waitFor(() => expect(within(row('web-1')).getByTestId('approval-status')).toHaveTextContent('Approved'));
    expect(within(row('web-1')).queryByRole('button', { name: 'Approve web-1' })).not.toBeInTheDocument();

    await u.click(within(queue).getByRole('button', { name: 'Deny web-2' }));
    expect(await within(queue).findByText(/Denied web-2\./)).toBeInTheDocument();
    await waitFor(() => expect(within(row('web-2')).getByTestId('approval-status')).toHaveTextContent('Denied'));

    await u.click(within(queue).getByRole('button', { name: 'Approve web-3' }));
    expect(await within(queue).findByText(/has not recorded it yet/)).toBeInTheDocument();
  });

  it('marks a readmission, which only an administrator may approve', async () => {
    const u = userEvent.setup({ delay: null });
    const approvals = [approval('ap-1', 'back-again', { readmission: true }), approval('ap-2', 'fresh')];
    for (const [user, approvable] of [
      [OPERATOR, false],
      [ADMIN, true],
    ] as const) {
      fakeEngine({
        'GET /api/sites': { body: { sites: [site()] } },
        'GET /api/admin/enrollment-codes': { body: { codes: [] } },
        'GET /api/admin/device-approvals': { body: { approvals } },
      });
      const view = renderSites(user);
      const dialog = await openDialog(u);
      const queue = part(dialog, 'Approvals');
      const table = await within(queue).findByRole('table', { name: 'Enrollment requests' });
      const row = (host: string) => within(table).getByText(host).closest('tr') as HTMLElement;
      expect(within(row('back-again')).getByTestId('approval-readmission')).toHaveTextContent('Readmission');
      expect(within(row('fresh')).queryByTestId('approval-readmission')).not.toBeInTheDocument();
      const approve = within(row('back-again')).getByRole('button', { name: 'Approve back-again' });
      if (approvable) expect(approve).toBeEnabled();
      else expect(approve).toBeDisabled();
      expect(within(row('fresh')).getByRole('button', { name: 'Approve fresh' })).toBeEnabled();
      view.unmount();
    }
  });

  it('shows a decision the Engine refuses', async () => {
    const u = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/sites': { body: { sites: [site()] } },
      'GET /api/admin/enrollment-codes': { body: { codes: [] } },
      'GET /api/admin/device-approvals': { body: { approvals: [approval('ap-1', 'web-1')] } },
      'POST /api/admin/device-approvals/ap-1/approve': { status: 409, body: { error: 'conflict', message: 'the request is no longer pending' } },
    });
    renderSites();
    const dialog = await openDialog(u);
    const queue = part(dialog, 'Approvals');
    await u.click(await within(queue).findByRole('button', { name: 'Approve web-1' }));
    expect(await within(queue).findByText('the request is no longer pending')).toBeInTheDocument();
    expect(within(queue).queryByTestId('approval-result')).not.toBeInTheDocument();
  });

  it('lets an administrator turn auto-approval on for a chosen time and off again', async () => {
    const u = userEvent.setup({ delay: null });
    let until: string | null = null;
    const engine = fakeEngine({
      'GET /api/sites': () => ({ body: { sites: [site({ auto_approve_until: until })] } }),
      'GET /api/admin/enrollment-codes': { body: { codes: [] } },
      'GET /api/admin/device-approvals': { body: { approvals: [] } },
      'POST /api/sites/1/auto-approval': (call) => {
        const b = call.body as { enabled: boolean; duration_seconds?: number };
        until = b.enabled ? new Date(Date.now() + (b.duration_seconds ?? 0) * 1000).toISOString() : null;
        return { body: { site_id: 1, auto_approve_until: until } };
      },
    });
    renderSites();
    const dialog = await openDialog(u);
    const auto = part(dialog, 'Temporary auto-approval');
    expect(within(auto).getByTestId('auto-approval-state')).toHaveTextContent('Auto-approval is off');
    await u.click(within(auto).getByRole('combobox', { name: 'For' }));
    await u.click(await screen.findByRole('option', { name: '4 hours' }));
    await u.click(within(auto).getByRole('switch', { name: 'Auto-approve enrollment requests' }));
    await waitFor(() => expect(within(auto).getByTestId('auto-approval-state')).toHaveTextContent('Auto-approval is on until'));
    expect(within(auto).getByTestId('auto-approval-state')).toHaveTextContent(/in (3|4) h/);
    expect(engine.callsTo('POST', '/api/sites/1/auto-approval')[0].body).toEqual({ enabled: true, duration_seconds: 14400 });
    expect(within(auto).getByRole('switch', { name: 'Auto-approve enrollment requests' })).toBeChecked();

    await u.click(within(auto).getByRole('switch', { name: 'Auto-approve enrollment requests' }));
    await waitFor(() => expect(within(auto).getByTestId('auto-approval-state')).toHaveTextContent('Auto-approval is off'));
    expect(engine.callsTo('POST', '/api/sites/1/auto-approval')[1].body).toEqual({ enabled: false });
  });

  it('shows operators the codes and when auto-approval ends, without the switch', async () => {
    const u = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/sites': { body: { sites: [site({ auto_approve_until: FUTURE })] } },
      'GET /api/admin/enrollment-codes': { body: { codes: [code(2, CODE_A)] } },
      'GET /api/admin/device-approvals': { body: { approvals: [] } },
    });
    renderSites(OPERATOR);
    const dialog = await openDialog(u);
    expect(await within(dialog).findByText(CODE_A)).toBeInTheDocument();
    const auto = part(dialog, 'Temporary auto-approval');
    expect(within(auto).getByTestId('auto-approval-state')).toHaveTextContent('Auto-approval is on until');
    expect(within(auto).queryByRole('switch')).not.toBeInTheDocument();
    expect(auto).toHaveTextContent('Only administrators can turn auto-approval on or off.');
    expect(within(part(dialog, 'Approvals')).getByTestId('no-approvals')).toBeInTheDocument();
  });
});
