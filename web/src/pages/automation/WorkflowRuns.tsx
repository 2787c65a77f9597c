// Starting a workflow on devices, and following its runs step by step; each
// step is a job run whose per-device results open below it.
import { useState } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import Accordion from '@mui/material/Accordion';
import AccordionDetails from '@mui/material/AccordionDetails';
import AccordionSummary from '@mui/material/AccordionSummary';
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
import ExpandMoreIcon from '@mui/icons-material/ExpandMore';
import { quickRuns, workflows as workflowsApi } from '../../api/endpoints';
import type { Device, Workflow } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { apiFieldError, shownFields } from './fields';
import { formatCompactDateTime } from '../../components/format';
import { WORKFLOWS_QUERY } from './JobEditor';
import { DevicePicker } from './pickers';
import { quickRunKey } from './QuickRunDialog';
import { RUN_POLL_MS, RunResults, runFinished, RunStatusChip } from './RunResults';

const workflowRunKey = (runId: string) => [...WORKFLOWS_QUERY, 'run', runId] as const;

export function WorkflowRunView({ workflow, runId }: { workflow: Workflow; runId: string }) {
  const query = useQuery({
    queryKey: workflowRunKey(runId),
    queryFn: () => workflowsApi.run(runId),
    refetchInterval: (q) => (runFinished(q.state.data) ? false : RUN_POLL_MS),
  });
  const run = query.data;
  const stepName = (id: string) => workflow.steps?.find((s) => s.id === id)?.name ?? id;
  return (
    <Box data-testid="workflow-run">
      {query.isError && <ErrorAlert error={query.error} />}
      {run && (
        <>
          <Box sx={{ display: 'flex', alignItems: 'center', gap: 1, mb: 1.5 }}>
            <RunStatusChip status={run.status} label="Workflow run" />
            <Typography variant="body2" color="text.secondary">
              {workflow.name} · run {run.run_id}
            </Typography>
          </Box>
          {(run.steps ?? []).map((s, i) => (
            <Accordion key={s.step_id} disableGutters variant="outlined" disabled={!s.run_id}>
              <AccordionSummary expandIcon={<ExpandMoreIcon />} aria-label={`Step ${i + 1}: ${stepName(s.step_id)}`}>
                <Box sx={{ display: 'flex', alignItems: 'center', gap: 1.5 }}>
                  <Typography variant="body2" sx={{ fontWeight: 600 }}>
                    {i + 1}. {stepName(s.step_id)}
                  </Typography>
                  <RunStatusChip status={s.status} label={stepName(s.step_id)} />
                </Box>
              </AccordionSummary>
              <AccordionDetails>
                {s.run_id && <RunResults queryKey={quickRunKey(s.run_id)} fetchRun={() => quickRuns.get(s.run_id!)} />}
              </AccordionDetails>
            </Accordion>
          ))}
        </>
      )}
    </Box>
  );
}

export function StartWorkflowDialog({ workflow, devices: initial = [], onClose }: { workflow: Workflow; devices?: Device[]; onClose: () => void }) {
  const [devices, setDevices] = useState<Device[]>(initial);
  const [local, setLocal] = useState<string | undefined>();
  const start = useMutation({ mutationFn: () => workflowsApi.start(workflow.id, devices.map((d) => d.guid)) });
  if (start.data) {
    return (
      <Dialog open onClose={onClose} fullWidth maxWidth="lg">
        <DialogTitle>{workflow.name}</DialogTitle>
        <DialogContent>
          <WorkflowRunView workflow={workflow} runId={start.data.run_id} />
        </DialogContent>
        <DialogActions>
          <Button variant="contained" onClick={onClose}>
            Close
          </Button>
        </DialogActions>
      </Dialog>
    );
  }
  return (
    <Dialog open onClose={start.isPending ? undefined : onClose} fullWidth maxWidth="sm">
      <DialogTitle>Start {workflow.name}</DialogTitle>
      <DialogContent>
        <ErrorAlert error={start.error} fields={shownFields(start.error, ['device_guids'])} />
        <Box sx={{ mt: 1 }}>
          <DevicePicker value={devices} onChange={(d) => (setDevices(d), setLocal(undefined))} error={local ?? apiFieldError(start.error, 'device_guids')} />
        </Box>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={start.isPending}>
          Cancel
        </Button>
        <Button
          variant="contained"
          disabled={start.isPending}
          onClick={() => (devices.length === 0 ? setLocal('Pick at least one device.') : start.mutate())}
        >
          {start.isPending ? 'Starting…' : 'Start'}
        </Button>
      </DialogActions>
    </Dialog>
  );
}

export function WorkflowRunsDialog({ workflow, onClose }: { workflow: Workflow; onClose: () => void }) {
  const [chosen, setChosen] = useState<string | null>(null);
  const runs = useQuery({ queryKey: [...WORKFLOWS_QUERY, 'runs', workflow.id], queryFn: () => workflowsApi.runs(workflow.id) });
  const list = runs.data ?? [];
  const selected = chosen ?? list[0]?.run_id ?? null;
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="lg">
      <DialogTitle>Runs of {workflow.name}</DialogTitle>
      <DialogContent>
        <ErrorAlert error={runs.error} />
        <Box sx={{ display: 'grid', gridTemplateColumns: { xs: '1fr', md: '240px 1fr' }, gap: 2 }}>
          <Paper variant="outlined" sx={{ maxHeight: 520, overflow: 'auto' }}>
            {list.length === 0 && !runs.isPending ? (
              <Typography variant="body2" color="text.secondary" sx={{ p: 1.5 }}>
                No runs yet.
              </Typography>
            ) : (
              <List dense disablePadding aria-label="Workflow runs">
                {list.map((r) => (
                  <ListItemButton key={r.run_id} selected={r.run_id === selected} onClick={() => setChosen(r.run_id)} sx={{ m: 0, borderRadius: 0, gap: 1 }}>
                    <Box sx={{ flex: 1, fontSize: 13 }}>{r.created_at ? formatCompactDateTime(r.created_at, true) : r.run_id}</Box>
                    <RunStatusChip status={r.status} />
                  </ListItemButton>
                ))}
              </List>
            )}
          </Paper>
          <Box>{selected && <WorkflowRunView key={selected} workflow={workflow} runId={selected} />}</Box>
        </Box>
      </DialogContent>
      <DialogActions>
        <Button variant="contained" onClick={onClose}>
          Close
        </Button>
      </DialogActions>
    </Dialog>
  );
}
