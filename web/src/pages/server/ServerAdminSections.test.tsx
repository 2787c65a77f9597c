import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { fakeEngine } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { appendTail, formatEntry, LogsSection, MAX_TAIL_LINES } from './LogsSection';
import { ServicesSection } from './ServicesSection';
import { BackupScheduleSection } from './BackupScheduleSection';

afterEach(() => vi.unstubAllGlobals());

const entry = (msg: string, extra: Record<string, unknown> = {}) => ({
  time: '2026-11-29T06:00:00Z',
  level: 'WARN',
  msg,
  attrs: extra,
});

describe('LogsSection', () => {
  it('reads a source with the chosen filters and shows the lines', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/server/logs': {
        body: { enabled: true, sources: [{ name: 'engine', files: 1, size_bytes: 10, modified_at: '2026-11-29T06:00:00Z' }], max_scan_bytes: 8388608, max_limit: 1000 },
      },
      'GET /api/server/logs/engine': {
        body: { entries: [entry('refresh refused [redacted]', { password: '[redacted]', n: 2 })], truncated: true, scanned_bytes: 8388608 },
      },
    });
    renderWithProviders(<LogsSection />);
    await screen.findByText('engine');
    await user.click(screen.getByLabelText('Level'));
    await user.click(await screen.findByRole('option', { name: 'warn' }));
    await user.type(screen.getByLabelText('Contains'), 'refused');
    await user.click(screen.getByRole('button', { name: 'Read' }));
    const pre = await screen.findByLabelText('Log lines');
    await waitFor(() => expect(pre).toHaveTextContent('refresh refused [redacted] password=[redacted] n=2'));
    expect(screen.getByText(/scan limit/)).toBeInTheDocument();
    const call = engine.callsTo('GET', '/api/server/logs/engine')[0];
    expect(call.query.get('level')).toBe('warn');
    expect(call.query.get('q')).toBe('refused');
  });

  it('says so when the Engine writes no log files', async () => {
    fakeEngine({ 'GET /api/server/logs': { body: { enabled: false, sources: [], max_scan_bytes: 1, max_limit: 1 } } });
    renderWithProviders(<LogsSection />);
    expect(await screen.findByText(/CAIRN_LOG_DIR=off/)).toBeInTheDocument();
  });

  it('formats entries and bounds the tail', () => {
    expect(formatEntry(entry('hello', { a: 'b', n: { x: 1 } }))).toBe('2026-11-29T06:00:00Z WARN hello a=b n={"x":1}');
    let lines = [entry('0')];
    for (let i = 1; i <= MAX_TAIL_LINES; i++) lines = appendTail(lines, entry(String(i)));
    expect(lines).toHaveLength(MAX_TAIL_LINES);
    expect(lines[0].msg).toBe('1');
  });
});

describe('ServicesSection', () => {
  it('queues actions, lists their outcome, and shows why the Engine cannot restart', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'POST /api/server/services/edge/action': {
        status: 202,
        body: { action_id: 'a', workflow_id: 'service-action:edge:reload_certificate:a', service_key: 'edge', action: 'reload_certificate', status: 'running', started_at: '2026-11-29T06:00:00Z' },
      },
      'POST /api/server/services/worker%3Asite%3Ahq/action': {
        status: 202,
        body: { action_id: 'b', workflow_id: 'w', service_key: 'worker:site:hq', action: 'restart', status: 'running', started_at: '2026-11-29T06:00:00Z' },
      },
      'GET /api/server/service-actions': {
        body: {
          actions: [
            { action_id: 'a', workflow_id: 'wa', service_key: 'edge', action: 'reload_certificate', status: 'failed', started_at: '2026-11-29T06:00:00Z', error: 'HTTPS is off on this Engine' },
            { action_id: 'c', workflow_id: 'wc', service_key: 'tunnels', action: 'reconcile_tunnels', status: 'succeeded', started_at: '2026-11-29T06:00:00Z', result: { detail: 'no active tunnel to reconcile' } },
          ],
        },
      },
      'POST /api/server/services/engine/restart': { status: 409, body: { error: 'no_supervisor', message: 'no supervisor (systemd) runs this Engine' } },
    });
    renderWithProviders(<ServicesSection sites={[{ name: 'HQ', site_worker_slug: 'hq' }]} />);
    const table = await screen.findByRole('table', { name: 'Service actions' });
    expect(within(table).getByText('HTTPS is off on this Engine')).toBeInTheDocument();
    expect(within(table).getByText('no active tunnel to reconcile')).toBeInTheDocument();

    await user.click(screen.getByRole('button', { name: 'Reload certificate' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/server/services/edge/action')).toHaveLength(1));
    expect(engine.callsTo('POST', '/api/server/services/edge/action')[0].body).toEqual({ action: 'reload_certificate' });

    expect(screen.getByRole('button', { name: 'Restart site worker' })).toBeDisabled();
    await user.click(screen.getByLabelText('Site worker'));
    await user.click(await screen.findByRole('option', { name: 'hq' }));
    await user.click(screen.getByRole('button', { name: 'Restart site worker' }));
    await waitFor(() => expect(engine.callsTo('POST', '/api/server/services/worker%3Asite%3Ahq/action')).toHaveLength(1));

    await user.click(screen.getByRole('button', { name: 'Restart Engine' }));
    expect(await screen.findByText('no supervisor (systemd) runs this Engine')).toBeInTheDocument();
  });
});

describe('BackupScheduleSection', () => {
  const SCHEDULE = {
    settings: { enabled: false, directory: '', interval_hours: 24, keep_daily: 7, keep_weekly: 4, keep_monthly: 12, updated_by: '', updated_at: '1970-01-01T00:00:00Z' },
    runs: [{ id: 'r1', status: 'succeeded', file: 'cairn-backup-20261129-030000.json', size_bytes: 10, pruned: [], detail: 'wrote cairn-backup-20261129-030000.json; pruned 0', started_at: '2026-11-29T03:00:00Z' }],
    last_success_at: '2026-11-29T03:00:00Z',
    drills: [
      { id: 'd1', status: 'failed', file: 'x.json', size_bytes: 0, pruned: [], detail: 'failed: x.json: devices.devices_site_id_fkey: 2 rows break it', started_at: '2026-11-29T04:00:00Z' },
    ],
  };

  it('saves the schedule and shows the runs and the Engine\'s refusal', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'GET /api/server/backup/schedule': { body: SCHEDULE },
      'PUT /api/server/backup/schedule': [
        { status: 400, body: { error: 'validation_failed', message: 'request is invalid', fields: { directory: 'must be a clean absolute path' } } },
        { body: { ...SCHEDULE, settings: { ...SCHEDULE.settings, enabled: true, directory: '/var/backups/cairn' } } },
      ],
    });
    renderWithProviders(<BackupScheduleSection />);
    expect(await screen.findByText('wrote cairn-backup-20261129-030000.json; pruned 0')).toBeInTheDocument();
    expect(screen.getByTestId('restore-drill')).toHaveTextContent('Restore drill failed');
    expect(screen.getByTestId('restore-drill')).toHaveTextContent('devices.devices_site_id_fkey: 2 rows break it');
    await user.click(screen.getByLabelText('Enabled'));
    await user.type(screen.getByLabelText('Directory'), 'relative');
    await user.click(screen.getByRole('button', { name: 'Save schedule' }));
    expect(await screen.findByText(/must be a clean absolute path/)).toBeInTheDocument();
    await user.clear(screen.getByLabelText('Directory'));
    await user.type(screen.getByLabelText('Directory'), '/var/backups/cairn');
    await user.click(screen.getByRole('button', { name: 'Save schedule' }));
    await waitFor(() => expect(engine.callsTo('PUT', '/api/server/backup/schedule')).toHaveLength(2));
    expect(engine.callsTo('PUT', '/api/server/backup/schedule')[1].body).toEqual({
      enabled: true,
      directory: '/var/backups/cairn',
      interval_hours: 24,
      keep_daily: 7,
      keep_weekly: 4,
      keep_monthly: 12,
    });
  });
});
