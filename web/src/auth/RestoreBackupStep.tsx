import { useState, type FormEvent } from 'react';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import CircularProgress from '@mui/material/CircularProgress';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { bootstrap, RESTORE_PHRASE, type BackupReport, type RestoreResult } from '../api/endpoints';
import { ErrorAlert } from '../components/ErrorAlert';
import { fieldError } from '../components/errors';
import { BackupReportTable } from '../pages/server/BackupReportTable';
import { useRestorePoll } from '../pages/server/useRestorePoll';

/**
 * The setup wizard's restore path (disaster recovery, docs/api.md "Backup
 * and restore"): instead of a new master cipher, a backup another Engine
 * exported is analyzed (row counts and schema differences, nothing
 * changes), then restored with the typed confirmation. The Engine then
 * has the backup's cipher, locked, and asks to be restarted; the step
 * polls the bootstrap phase (SPEC backup rule 5) and hands the settled
 * phase to onSettled (the unlock page, then sign-in, follow).
 */
export function RestoreBackupStep({
  setupCode,
  onSettled,
  onBack,
  onError,
}: {
  setupCode: string;
  onSettled: (phase: string) => void;
  onBack: () => void;
  onError?: (e: unknown) => void;
}) {
  const [file, setFile] = useState<File | null>(null);
  const [passphrase, setPassphrase] = useState('');
  const [confirmation, setConfirmation] = useState('');
  const [report, setReport] = useState<BackupReport | null>(null);
  const [restored, setRestored] = useState<RestoreResult | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [local, setLocal] = useState<{ file?: string; passphrase?: string }>({});
  const [busy, setBusy] = useState(false);
  const poll = useRestorePoll(onSettled);

  const run = async (f: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
    } catch (err) {
      setError(err);
      onError?.(err);
    } finally {
      setBusy(false);
    }
  };

  const analyze = (e: FormEvent) => {
    e.preventDefault();
    const errors = {
      file: file ? undefined : 'Choose the backup file.',
      passphrase: passphrase ? undefined : "Enter the master-cipher passphrase of the Engine that exported it.",
    };
    setLocal(errors);
    if (errors.file || errors.passphrase) return;
    void run(async () => setReport(await bootstrap.backupAnalyze(file!, passphrase, setupCode)));
  };

  if (restored) {
    const rows = Object.values(restored.rows ?? {}).reduce((a, b) => a + b, 0);
    return (
      <Box data-testid="restore-done">
        <Alert severity="success" sx={{ mb: 2 }}>
          Restored {rows} rows from the backup. This Engine now has the backup&apos;s operators, sites, agents and master
          cipher.
        </Alert>
        <Typography variant="body2" sx={{ mb: 2 }}>
          Restart every <code>cairn serve</code> and <code>cairn worker</code> of this deployment (same network mode and
          public address, so enrolled agents find it), then unlock the master cipher with the backup&apos;s passphrase
          and sign in as one of its operators.
        </Typography>
        <Box sx={{ display: 'flex', alignItems: 'center', gap: 1.5 }} role="status">
          <CircularProgress size={18} />
          <span>Waiting for the Engine…</span>
        </Box>
      </Box>
    );
  }

  const passphraseError = local.passphrase ?? fieldError(error, 'passphrase');
  return (
    <Box component="form" noValidate onSubmit={analyze} sx={{ display: 'flex', flexDirection: 'column', gap: 1.5 }}>
      <Alert severity="info" variant="outlined">
        Disaster recovery: a backup exported from another Engine (Server, Backups) replaces everything here. Its
        agents keep working without enrolling again once this Engine answers at their address.
      </Alert>
      <ErrorAlert error={error} fields={['passphrase']} />
      <Box>
        <input
          type="file"
          accept="application/json,.json"
          aria-label="Backup file"
          onChange={(e) => {
            setFile(e.target.files?.[0] ?? null);
            setReport(null);
          }}
        />
        {local.file && (
          <Typography variant="caption" color="error" component="p">
            {local.file}
          </Typography>
        )}
      </Box>
      <TextField
        label="Passphrase of the backup's Engine"
        name="backup_passphrase"
        type="password"
        autoComplete="off"
        fullWidth
        value={passphrase}
        onChange={(e) => {
          setPassphrase(e.target.value);
          setReport(null);
        }}
        error={Boolean(passphraseError)}
        helperText={passphraseError ?? 'The master-cipher passphrase of the Engine that exported the file.'}
      />
      <Button type="submit" variant="outlined" disabled={busy}>
        {busy && !report ? 'Analyzing…' : 'Analyze'}
      </Button>
      {report && <BackupReportTable report={report} maxHeight={280} />}
      {report?.restorable && (
        <>
          <TextField
            size="small"
            label={`Type ${RESTORE_PHRASE} to restore`}
            value={confirmation}
            onChange={(e) => setConfirmation(e.target.value)}
            autoComplete="off"
          />
          <Button
            variant="contained"
            color="error"
            disabled={busy || confirmation !== RESTORE_PHRASE}
            onClick={() =>
              run(async () => {
                const result = await bootstrap.backupRestore(file!, passphrase, setupCode, confirmation);
                setRestored(result);
                poll.start();
              })
            }
          >
            {busy ? 'Restoring…' : 'Restore (replaces everything)'}
          </Button>
        </>
      )}
      <Button variant="text" size="small" onClick={onBack} disabled={busy}>
        Set up a new deployment instead
      </Button>
    </Box>
  );
}
