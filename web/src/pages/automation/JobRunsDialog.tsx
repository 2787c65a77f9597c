// A scheduled job's run history: the runs newest first, and the chosen run's
// per-device results (the quick-run results view). Rerun and clear history.
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import List from '@mui/material/List';
import ListItemButton from '@mui/material/ListItemButton';
import Paper from '@mui/material/Paper';
import Typography from '@mui/material/Typography';
import DeleteSweepIcon from '@mui/icons-material/DeleteSweep';
import ReplayIcon from '@mui/icons-material/Replay';
import { scheduledJobs } from '../../api/endpoints';
import type { ScheduledJob } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatCompactDateTime } from '../../components/format';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { JOBS_QUERY } from './JobEditor';
import { RunResults, runFinished, RunStatusChip } from './RunResults';

export const jobRunsKey = (id: number) => [...JOBS_QUERY, 'runs', id] as const;

export function JobRunsDialog({ job, onClose }: { job: ScheduledJob; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [chosen, setChosen] = useState<string | null>(null);
  const [clearing, setClearing] = useState(false);
  const runs = useQuery({
    queryKey: jobRunsKey(job.id),
    queryFn: () => scheduledJobs.runs(job.id),
    // Keep the list's statuses current while any run is still going.
    refetchInterval: (q) => ((q.state.data ?? []).some((r) => !runFinished(r)) ? 2000 : false),
  });
  const rerun = useMutation({
    mutationFn: () => scheduledJobs.rerun(job.id),
    onSuccess: (r) => {
      setChosen(r.run_id);
      void queryClient.invalidateQueries({ queryKey: JOBS_QUERY });
    },
  });
  const clear = useMutation({
    mutationFn: () => scheduledJobs.clearRuns(job.id),
    onSuccess: () => {
      setChosen(null);
      queryClient.setQueryData(jobRunsKey(job.id), []);
      void queryClient.invalidateQueries({ queryKey: JOBS_QUERY });
    },
  });

  const list = runs.data ?? [];
  const selected = chosen ?? list[0]?.run_id ?? null;
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="lg">
      <DialogTitle>Runs of {job.name}</DialogTitle>
      <DialogContent>
        <ErrorAlert error={runs.error ?? rerun.error ?? clear.error} />
        <Box sx={{ display: 'grid', gridTemplateColumns: { xs: '1fr', md: '260px 1fr' }, gap: 2 }}>
          <Paper variant="outlined" sx={{ maxHeight: 560, overflow: 'auto' }}>
            {list.length === 0 && !runs.isPending ? (
              <Typography variant="body2" color="text.secondary" sx={{ p: 1.5 }} data-testid="no-runs">
                No runs yet.
              </Typography>
            ) : (
              <List dense disablePadding aria-label="Runs">
                {list.map((r) => (
                  <ListItemButton
                    key={r.run_id}
                    selected={r.run_id === selected}
                    onClick={() => setChosen(r.run_id)}
                    sx={{ m: 0, borderRadius: 0, display: 'flex', gap: 1 }}
                    data-testid="job-run"
                  >
                    <Box sx={{ flex: 1, fontSize: 13 }}>
                      {formatCompactDateTime(r.started_at ?? r.created_at, true)}
                      <Typography variant="caption" color="text.secondary" component="div">
                        {r.trigger ?? ''} · {r.counts.succeeded}/{Object.values(r.counts).reduce((a, b) => a + b, 0)} succeeded
                      </Typography>
                    </Box>
                    <RunStatusChip status={r.status} />
                  </ListItemButton>
                ))}
              </List>
            )}
          </Paper>
          <Box>
            {selected ? (
              <RunResults key={selected} queryKey={[...JOBS_QUERY, 'run', job.id, selected]} fetchRun={() => scheduledJobs.run(job.id, selected)} />
            ) : (
              <Typography variant="body2" color="text.secondary">
                Pick a run to see what happened on each device.
              </Typography>
            )}
          </Box>
        </Box>
      </DialogContent>
      <DialogActions>
        <Button color="error" startIcon={<DeleteSweepIcon />} disabled={list.length === 0 || clear.isPending} onClick={() => setClearing(true)}>
          Clear history
        </Button>
        <Box sx={{ flex: 1 }} />
        <Button startIcon={<ReplayIcon />} onClick={() => rerun.mutate()} disabled={rerun.isPending}>
          {rerun.isPending ? 'Starting…' : 'Run now'}
        </Button>
        <Button variant="contained" onClick={onClose}>
          Close
        </Button>
      </DialogActions>
      {clearing && (
        <ConfirmDialog title={`Clear the runs of ${job.name}?`} confirm="Clear history" danger onConfirm={() => clear.mutate()} onClose={() => setClearing(false)}>
          All {list.length} run{list.length === 1 ? '' : 's'} of this job and their entries in the devices’ activity are deleted.
        </ConfirmDialog>
      )}
    </Dialog>
  );
}
