import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { fakeEngine } from '../../test/fakeEngine';
import { renderWithProviders } from '../../test/render';
import { BackupsSection } from './BackupsSection';

afterEach(() => vi.unstubAllGlobals());

const REPORT = {
  schema_version: 49,
  running_schema_version: 49,
  created_at: '2026-11-29T03:00:00Z',
  tables: [
    { name: 'devices', rows: 3, missing_columns: [], new_columns: [] },
    { name: 'sites', rows: 1, missing_columns: ['region'], new_columns: [] },
  ],
  files: [],
  unknown_tables: [],
  unknown_files: [],
  restorable: true,
  problems: [],
};

describe('BackupsSection', () => {
  it('analyzes a file, then restores it only with the typed confirmation', async () => {
    const user = userEvent.setup({ delay: null });
    const engine = fakeEngine({
      'POST /api/server/backup/analyze': { body: REPORT },
      'POST /api/server/backup/restore': {
        body: { restore_id: 'r1', rows: { devices: 3 }, files: [], restart_required: true, phase: 'aegis_unlock_required' },
      },
      'GET /api/bootstrap/state': { body: { phase: 'aegis_unlock_required' } },
    });
    renderWithProviders(<BackupsSection />);
    expect(screen.getByRole('link', { name: 'Export backup' })).toHaveAttribute('href', '/api/server/backup/export');

    await user.upload(screen.getByLabelText('Backup file'), new File(['{}'], 'backup.json', { type: 'application/json' }));
    await user.click(screen.getByRole('button', { name: 'Analyze' }));
    const report = await screen.findByTestId('backup-report');
    expect(report).toHaveTextContent('devices');
    expect(report).toHaveTextContent('region (not here)');

    const restore = screen.getByRole('button', { name: 'Restore (replaces everything)' });
    expect(restore).toBeDisabled();
    await user.type(screen.getByLabelText('Type RESTORE ENGINE CONFIG BACKUP to restore'), 'RESTORE ENGINE CONFIG BACKUP');
    expect(restore).toBeEnabled();
    await user.click(restore);
    expect(await screen.findByTestId('restore-done')).toBeInTheDocument();
    await waitFor(() => expect(engine.calls.some((c) => c.path === '/api/server/backup/restore')).toBe(true));
  });

  it('shows why a backup cannot be restored', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'POST /api/server/backup/analyze': {
        body: { ...REPORT, restorable: false, problems: ['column sites.region is not in the running schema'] },
      },
    });
    renderWithProviders(<BackupsSection />);
    await user.upload(screen.getByLabelText('Backup file'), new File(['{}'], 'backup.json'));
    await user.click(screen.getByRole('button', { name: 'Analyze' }));
    expect(await screen.findByText('column sites.region is not in the running schema')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Restore (replaces everything)' })).toBeNull();
  });
});
