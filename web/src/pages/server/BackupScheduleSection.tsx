import { useEffect, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import FormControlLabel from '@mui/material/FormControlLabel';
import Paper from '@mui/material/Paper';
import Switch from '@mui/material/Switch';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { backupSchedule, type BackupScheduleInput } from '../../api/endpoints';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatDateTime } from '../../components/format';

const NUMBERS: { key: keyof BackupScheduleInput; label: string }[] = [
  { key: 'interval_hours', label: 'Every (hours)' },
  { key: 'keep_daily', label: 'Keep daily' },
  { key: 'keep_weekly', label: 'Keep weekly' },
  { key: 'keep_monthly', label: 'Keep monthly' },
];

/**
 * Scheduled automatic backups, for administrators: where the encrypted
 * exports go, how often, the retention, and what the recent runs did.
 */
export function BackupScheduleSection() {
  const qc = useQueryClient();
  const query = useQuery({ queryKey: ['backup-schedule'], queryFn: backupSchedule.get, refetchInterval: 10_000 });
  const [form, setForm] = useState<BackupScheduleInput | null>(null);
  useEffect(() => {
    if (query.data && form === null) {
      const s = query.data.settings;
      setForm({
        enabled: s.enabled,
        directory: s.directory,
        interval_hours: s.interval_hours,
        keep_daily: s.keep_daily,
        keep_weekly: s.keep_weekly,
        keep_monthly: s.keep_monthly,
      });
    }
  }, [query.data, form]);
  const save = useMutation({
    mutationFn: (body: BackupScheduleInput) => backupSchedule.set(body),
    onSuccess: (data) => qc.setQueryData(['backup-schedule'], data),
  });
  const runNow = useMutation({
    mutationFn: backupSchedule.runNow,
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['backup-schedule'] }),
  });
  const drillNow = useMutation({
    mutationFn: backupSchedule.drillNow,
    onSuccess: () => void qc.invalidateQueries({ queryKey: ['backup-schedule'] }),
  });
  const runs = query.data?.runs ?? [];
  const drills = query.data?.drills ?? [];
  const lastDrill = drills.find((d) => d.status !== 'running');

  return (
    <Paper variant="outlined" sx={{ p: 2.5, mb: 2, maxWidth: 760 }} data-testid="backup-schedule">
      <Typography variant="subtitle1" component="h2" sx={{ fontWeight: 600, mb: 1 }}>
        Scheduled backups
      </Typography>
      <Typography variant="body2" color="text.secondary" sx={{ mb: 1.5 }}>
        Encrypted exports written to a directory on the Engine&apos;s host. The newest backup of each of the last days,
        weeks and months kept is retained; older ones are deleted.
      </Typography>
      {query.isError && <ErrorAlert error={query.error} />}
      {form && (
        <Box
          component="form"
          sx={{ display: 'flex', flexDirection: 'column', gap: 1.5 }}
          onSubmit={(e) => {
            e.preventDefault();
            save.mutate(form);
          }}
        >
          <FormControlLabel
            control={<Switch checked={form.enabled} onChange={(e) => setForm({ ...form, enabled: e.target.checked })} />}
            label="Enabled"
          />
          <TextField
            size="small"
            label="Directory"
            value={form.directory}
            onChange={(e) => setForm({ ...form, directory: e.target.value })}
            placeholder="/var/backups/cairn"
          />
          <Box sx={{ display: 'flex', gap: 1.5, flexWrap: 'wrap' }}>
            {NUMBERS.map((n) => (
              <TextField
                key={n.key}
                size="small"
                type="number"
                label={n.label}
                value={form[n.key] as number}
                onChange={(e) => setForm({ ...form, [n.key]: Number(e.target.value) })}
                sx={{ width: 140 }}
              />
            ))}
          </Box>
          <Box sx={{ display: 'flex', gap: 1 }}>
            <Button type="submit" variant="contained" disabled={save.isPending}>
              Save schedule
            </Button>
            <Button variant="outlined" disabled={runNow.isPending || !query.data?.settings.directory} onClick={() => runNow.mutate()}>
              Back up now
            </Button>
            <Button variant="outlined" disabled={drillNow.isPending || !query.data?.settings.directory} onClick={() => drillNow.mutate()}>
              Run restore drill
            </Button>
          </Box>
          {save.isError && <ErrorAlert error={save.error} />}
          {runNow.isError && <ErrorAlert error={runNow.error} />}
          {drillNow.isError && <ErrorAlert error={drillNow.error} />}
        </Box>
      )}
      {query.data?.last_success_at && (
        <Typography variant="body2" sx={{ mt: 1.5 }}>
          Last backup {formatDateTime(query.data.last_success_at)}
          {query.data.next_due_at ? `; next due ${formatDateTime(query.data.next_due_at)}` : ''}.
        </Typography>
      )}
      {lastDrill && (
        <Alert severity={lastDrill.status === 'succeeded' ? 'success' : 'error'} sx={{ mt: 1.5 }} data-testid="restore-drill">
          Restore drill {lastDrill.status === 'succeeded' ? 'passed' : 'failed'} ({formatDateTime(lastDrill.started_at)}): {lastDrill.detail}
        </Alert>
      )}
      {runs.length > 0 && (
        <Table size="small" sx={{ mt: 1.5 }} aria-label="Backup runs">
          <TableHead>
            <TableRow>
              <TableCell>Started</TableCell>
              <TableCell>Status</TableCell>
              <TableCell>Detail</TableCell>
            </TableRow>
          </TableHead>
          <TableBody>
            {runs.map((r) => (
              <TableRow key={r.id}>
                <TableCell>{formatDateTime(r.started_at)}</TableCell>
                <TableCell>{r.status}</TableCell>
                <TableCell>{r.detail}</TableCell>
              </TableRow>
            ))}
          </TableBody>
        </Table>
      )}
    </Paper>
  );
}
