import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { App } from '../App';
import { fakeEngine, validationFailed, type FakeReply, type FormFields } from '../test/fakeEngine';
import { renderWithProviders } from '../test/render';
import { restorePolling } from '../pages/server/useRestorePoll';

const CODE = 'ABCDE-FGHIJ-KLMNO-PQRST';
const REPORT = {
  schema_version: 49,
  running_schema_version: 50,
  created_at: '2026-11-29T03:00:00Z',
  tables: [
    { name: 'devices', rows: 3, missing_columns: [], new_columns: [] },
    { name: 'sites', rows: 1, missing_columns: [], new_columns: ['region'] },
  ],
  files: ['tls/ca-key.pem', 'tls/ca.pem'],
  unknown_tables: [],
  unknown_files: [],
  restorable: true,
  problems: [],
};
const RESTORED = {
  restore_id: 'r1',
  rows: { devices: 3, sites: 1 },
  files: ['tls/ca-key.pem', 'tls/ca.pem'],
  restart_required: true,
  phase: 'aegis_unlock_required',
};

const saved = { ...restorePolling };
beforeEach(() => {
  restorePolling.intervalMs = 5;
  restorePolling.minWindowMs = 100;
});
afterEach(() => {
  Object.assign(restorePolling, saved);
  vi.unstubAllGlobals();
});

async function toRestore(user: ReturnType<typeof userEvent.setup>) {
  await user.type(await screen.findByLabelText('Setup code'), CODE);
  await user.click(screen.getByRole('button', { name: 'Continue' }));
  expect(await screen.findByRole('heading', { name: 'Set the master cipher' })).toBeInTheDocument();
  await user.click(screen.getByRole('button', { name: 'Restore from a backup…' }));
  expect(await screen.findByRole('heading', { name: 'Restore from a backup' })).toBeInTheDocument();
  expect(within(screen.getByLabelText('Setup progress')).getByText('Restore backup')).toBeInTheDocument();
}

describe('the setup wizard restore path', () => {
  it('analyzes, restores with the typed confirmation, then follows the phase once it is stable', async () => {
    const user = userEvent.setup({ delay: null });
    // Before the restore the Engine is fresh; after it, it restarts (no
    // answer), answers the new phase, and the console waits for a second
    // equal answer (SPEC backup rule 5).
    let restored = false;
    const after: FakeReply[] = [
      { status: 502, body: { error: 'unavailable', message: 'restarting' } },
      { body: { phase: 'aegis_unlock_required' } },
      { status: 502, body: { error: 'unavailable', message: 'restarting' } },
      { body: { phase: 'aegis_unlock_required' } },
    ];
    let polled = 0;
    const engine = fakeEngine({
      'GET /api/bootstrap/state': () => {
        if (!restored) return { body: { phase: 'aegis_setup_required' } };
        polled++;
        return after.length > 1 ? after.shift()! : after[0];
      },
      'POST /api/bootstrap/backup/analyze': { body: REPORT },
      'POST /api/bootstrap/backup/restore': () => {
        restored = true;
        return { body: RESTORED };
      },
    });
    renderWithProviders(<App />);
    await toRestore(user);

    // Both fields are needed before anything is sent.
    await user.click(screen.getByRole('button', { name: 'Analyze' }));
    expect(screen.getByText('Choose the backup file.')).toBeInTheDocument();
    expect(screen.getByText(/Enter the master-cipher passphrase of the Engine that exported it/)).toBeInTheDocument();
    expect(engine.callsTo('POST', '/api/bootstrap/backup/analyze')).toHaveLength(0);

    await user.upload(screen.getByLabelText('Backup file'), new File(['{}'], 'cairn-backup.json', { type: 'application/json' }));
    await user.type(screen.getByLabelText("Passphrase of the backup's Engine"), 'source passphrase');
    await user.click(screen.getByRole('button', { name: 'Analyze' }));
    const report = await screen.findByTestId('backup-report');
    expect(report).toHaveTextContent('devices');
    expect(report).toHaveTextContent('region (new)');
    expect(report).toHaveTextContent('this Engine: 50');
    // The fields go before the file: the Engine checks the setup code when the file part begins.
    expect(engine.callsTo('POST', '/api/bootstrap/backup/analyze')[0].body).toEqual({
      order: ['passphrase', 'setup_code', 'file'],
      fields: { passphrase: 'source passphrase', setup_code: CODE, file: 'file:cairn-backup.json' },
    } satisfies FormFields);

    const restore = screen.getByRole('button', { name: 'Restore (replaces everything)' });
    expect(restore).toBeDisabled();
    await user.type(screen.getByLabelText('Type RESTORE ENGINE CONFIG BACKUP to restore'), 'RESTORE ENGINE CONFIG BACKU');
    expect(restore).toBeDisabled();
    await user.type(screen.getByLabelText('Type RESTORE ENGINE CONFIG BACKUP to restore'), 'P');
    await user.click(restore);

    expect(await screen.findByTestId('restore-done')).toHaveTextContent('Restored 4 rows');
    expect(engine.callsTo('POST', '/api/bootstrap/backup/restore')[0].body).toEqual({
      order: ['passphrase', 'confirmation', 'setup_code', 'file'],
      fields: {
        passphrase: 'source passphrase',
        confirmation: 'RESTORE ENGINE CONFIG BACKUP',
        setup_code: CODE,
        file: 'file:cairn-backup.json',
      },
    } satisfies FormFields);

    // Only two equal answers in a row move on: the unlock page.
    expect(await screen.findByRole('heading', { name: 'Unlock the master cipher' })).toBeInTheDocument();
    expect(polled).toBeGreaterThanOrEqual(5);
  });

  it('waits for the minimum refresh window even when the answers agree at once', async () => {
    restorePolling.minWindowMs = 400;
    const user = userEvent.setup({ delay: null });
    let restored = false;
    let restoredAt = 0;
    fakeEngine({
      'GET /api/bootstrap/state': () => ({ body: { phase: restored ? 'aegis_unlock_required' : 'aegis_setup_required' } }),
      'POST /api/bootstrap/backup/analyze': { body: REPORT },
      'POST /api/bootstrap/backup/restore': () => {
        restored = true;
        restoredAt = Date.now();
        return { body: RESTORED };
      },
    });
    renderWithProviders(<App />);
    await toRestore(user);
    await user.upload(screen.getByLabelText('Backup file'), new File(['{}'], 'b.json'));
    await user.type(screen.getByLabelText("Passphrase of the backup's Engine"), 'source passphrase');
    await user.click(screen.getByRole('button', { name: 'Analyze' }));
    await user.type(await screen.findByLabelText('Type RESTORE ENGINE CONFIG BACKUP to restore'), 'RESTORE ENGINE CONFIG BACKUP');
    await user.click(screen.getByRole('button', { name: 'Restore (replaces everything)' }));
    expect(await screen.findByTestId('restore-done')).toBeInTheDocument();
    await waitFor(() => expect(screen.getByRole('heading', { name: 'Unlock the master cipher' })).toBeInTheDocument(), {
      timeout: 5000,
    });
    expect(Date.now() - restoredAt).toBeGreaterThanOrEqual(400);
  });

  it('shows the problems of a backup it cannot restore and offers no restore', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/bootstrap/state': { body: { phase: 'aegis_setup_required' } },
      'POST /api/bootstrap/backup/analyze': {
        body: { ...REPORT, restorable: false, problems: ['column sites.region is not in the running schema'] },
      },
    });
    renderWithProviders(<App />);
    await toRestore(user);
    await user.upload(screen.getByLabelText('Backup file'), new File(['{}'], 'b.json'));
    await user.type(screen.getByLabelText("Passphrase of the backup's Engine"), 'source passphrase');
    await user.click(screen.getByRole('button', { name: 'Analyze' }));
    expect(await screen.findByText('column sites.region is not in the running schema')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Restore (replaces everything)' })).toBeNull();
  });

  it('shows a wrong passphrase, and goes back to the setup code when the Engine refuses it', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({
      'GET /api/bootstrap/state': { body: { phase: 'aegis_setup_required' } },
      'POST /api/bootstrap/backup/analyze': [
        { status: 400, body: { error: 'backup_wrong_cipher', message: 'the passphrase does not open this backup' } },
        validationFailed({ passphrase: 'is required' }),
        { status: 403, body: { error: 'setup_code_required', message: 'enter the setup code' } },
      ],
    });
    renderWithProviders(<App />);
    await toRestore(user);
    await user.upload(screen.getByLabelText('Backup file'), new File(['{}'], 'b.json'));
    await user.type(screen.getByLabelText("Passphrase of the backup's Engine"), 'not it');
    await user.click(screen.getByRole('button', { name: 'Analyze' }));
    expect(await screen.findByText('the passphrase does not open this backup')).toBeInTheDocument();
    await user.click(screen.getByRole('button', { name: 'Analyze' }));
    expect(await screen.findByText('is required')).toHaveClass('Mui-error');
    await user.click(screen.getByRole('button', { name: 'Analyze' }));
    expect(await screen.findByRole('heading', { name: 'Enter the setup code' })).toBeInTheDocument();
  });

  it('goes back to a new setup', async () => {
    const user = userEvent.setup({ delay: null });
    fakeEngine({ 'GET /api/bootstrap/state': { body: { phase: 'aegis_setup_required' } } });
    renderWithProviders(<App />);
    await toRestore(user);
    await user.click(screen.getByRole('button', { name: 'Set up a new deployment instead' }));
    expect(await screen.findByRole('heading', { name: 'Set the master cipher' })).toBeInTheDocument();
  });
});
