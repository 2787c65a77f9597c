import { useState } from 'react';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Paper from '@mui/material/Paper';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { BACKUP_EXPORT_URL, backups, RESTORE_PHRASE, type BackupReport } from '../../api/endpoints';
import { ErrorAlert } from '../../components/ErrorAlert';
import { BackupReportTable } from './BackupReportTable';
import { useRestorePoll } from './useRestorePoll';

/**
 * Backups, for administrators: export the encrypted file, analyze one
 * (row counts and schema differences, nothing changes) and restore it
 * with the typed confirmation. After a restore every session has ended:
 * the section polls the bootstrap phase (SPEC backup rule 5) and goes to
 * the sign-in flow once it is stable.
 */
export function BackupsSection() {
  const [file, setFile] = useState<File | null>(null);
  const [passphrase, setPassphrase] = useState('');
  const [confirmation, setConfirmation] = useState('');
  const [report, setReport] = useState<BackupReport | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const poll = useRestorePoll(() => window.location.assign('/'));

  const run = async (f: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Paper variant="outlined" sx={{ p: 2.5, mb: 2, maxWidth: 760 }} data-testid="backups">
      <Typography variant="subtitle1" component="h2" sx={{ fontWeight: 600, mb: 1 }}>
        Backups
      </Typography>
      <Typography variant="body2" color="text.secondary" sx={{ mb: 1.5 }}>
        An encrypted file of the configuration, operators, sites, agents and their trust, credentials, automation and
        inventory. Only this Engine&apos;s master cipher (or its passphrase) opens it.
      </Typography>
      <Button variant="outlined" href={BACKUP_EXPORT_URL} download sx={{ mb: 2 }}>
        Export backup
      </Button>
      {poll.polling ? (
        <Alert severity="info" data-testid="restore-done">
          Restored. Restart every Engine and worker, then unlock the master cipher with the backup&apos;s passphrase and
          sign in again. Waiting for the Engine…
        </Alert>
      ) : (
        <Box sx={{ display: 'flex', flexDirection: 'column', gap: 1.5 }}>
          <input
            type="file"
            accept="application/json,.json"
            aria-label="Backup file"
            onChange={(e) => {
              setFile(e.target.files?.[0] ?? null);
              setReport(null);
            }}
          />
          <TextField
            size="small"
            type="password"
            label="Source passphrase (needed for another Engine's backup)"
            value={passphrase}
            onChange={(e) => setPassphrase(e.target.value)}
            autoComplete="off"
          />
          <Box>
            <Button
              variant="outlined"
              disabled={!file || busy}
              onClick={() => run(async () => setReport(await backups.analyze(file!, passphrase)))}
            >
              Analyze
            </Button>
          </Box>
          {report && <BackupReportTable report={report} />}
          {report?.restorable && (
            <>
              <TextField
                size="small"
                label={`Type ${RESTORE_PHRASE} to restore`}
                value={confirmation}
                onChange={(e) => setConfirmation(e.target.value)}
                autoComplete="off"
              />
              <Box>
                <Button
                  variant="contained"
                  color="error"
                  disabled={!file || busy || confirmation !== RESTORE_PHRASE}
                  onClick={() =>
                    run(async () => {
                      await backups.restore(file!, passphrase, confirmation);
                      poll.start();
                    })
                  }
                >
                  Restore (replaces everything)
                </Button>
              </Box>
            </>
          )}
          {error ? <ErrorAlert error={error} /> : null}
        </Box>
      )}
    </Paper>
  );
}
