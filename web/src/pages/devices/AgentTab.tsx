// The Agent tab: the installed build, "Update now", and the update history
// with each operation's timeline, build transition and failure summary
// (GET /api/devices/<guid>/agent-updates). agent_update_progress_changed
// events refetch it; polling covers a dropped event stream.
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Accordion from '@mui/material/Accordion';
import AccordionDetails from '@mui/material/AccordionDetails';
import AccordionSummary from '@mui/material/AccordionSummary';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import CircularProgress from '@mui/material/CircularProgress';
import LinearProgress from '@mui/material/LinearProgress';
import Typography from '@mui/material/Typography';
import ExpandMoreIcon from '@mui/icons-material/ExpandMore';
import SystemUpdateAltIcon from '@mui/icons-material/SystemUpdateAlt';
import { agentUpdates } from '../../api/endpoints';
import type { AgentUpdateOperation, DeviceSummary } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { describeError } from '../../components/errors';
import { formatCompactDateTime } from '../../components/format';
import { useNotify } from '../../toasts/notify';
import { RunStatusChip } from '../automation/RunResults';
import { RelativeTime } from './chips';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { Facts, mono, Section } from './parts';
import { deviceAgentUpdatesKey } from './queries';

/** While an update is active the tab polls quickly; otherwise slowly, in case an event was missed. */
export const AGENT_UPDATE_ACTIVE_POLL_MS = 3000;
export const AGENT_UPDATE_IDLE_POLL_MS = 30_000;

const PHASE_LABEL: Record<string, string> = {
  accepted: 'Accepted',
  downloading: 'Downloading',
  verifying: 'Verifying hash and signature',
  installing: 'Installing',
  restarting: 'Restarting',
  verifying_checkin: 'Waiting for the new build to check in',
  completed: 'Completed',
  failed: 'Failed',
  rolled_back: 'Rolled back',
};

const REASON_LABEL: Record<string, string> = { operator: 'Requested by an operator', hourly: 'Hourly check' };

function Build({ id }: { id: string | null | undefined }) {
  return (
    <Box component="span" sx={mono}>
      {id || '?'}
    </Box>
  );
}

function Timeline({ op }: { op: AgentUpdateOperation }) {
  const events = op.events ?? [];
  if (events.length === 0) {
    return (
      <Typography variant="body2" color="text.secondary">
        No progress reported yet.
      </Typography>
    );
  }
  return (
    <Box component="ol" aria-label="Timeline" sx={{ m: 0, pl: 0, listStyle: 'none' }} data-testid="update-timeline">
      {events.map((e, i) => (
        <Box
          component="li"
          key={i}
          sx={{ display: 'grid', gridTemplateColumns: '150px 220px 1fr', gap: 1.5, py: 0.5, borderBottom: 1, borderColor: 'divider', fontSize: 13 }}
        >
          <time dateTime={e.captured_at}>{formatCompactDateTime(e.captured_at, true)}</time>
          <Box sx={{ fontWeight: 600, color: e.phase === 'failed' ? 'error.main' : e.phase === 'rolled_back' ? 'warning.main' : 'inherit' }}>
            {PHASE_LABEL[e.phase] ?? e.phase}
            {e.percent !== null && e.percent !== undefined && e.phase === 'downloading' ? ` ${e.percent}%` : ''}
          </Box>
          <Box sx={{ color: 'text.secondary', wordBreak: 'break-word' }}>{e.message}</Box>
        </Box>
      ))}
    </Box>
  );
}

function OperationSummary({ op }: { op: AgentUpdateOperation }) {
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', gap: 1.5, flexWrap: 'wrap', fontSize: 13 }}>
      <RunStatusChip status={op.status} />
      <span>{formatCompactDateTime(op.created_at, true)}</span>
      <span data-testid="build-transition">
        <Build id={op.from_build_id} /> → <Build id={op.to_build_id} />
      </span>
      <Typography variant="body2" color="text.secondary" component="span">
        {REASON_LABEL[op.reason] ?? op.reason}
        {op.requested_by ? ` (${op.requested_by})` : ''}
      </Typography>
    </Box>
  );
}

function OperationDetail({ op }: { op: AgentUpdateOperation }) {
  const last = op.events?.at(-1);
  const running = op.status === 'queued' || op.status === 'running';
  return (
    <Box>
      {op.failure_summary && (
        <Alert severity={op.status === 'rolled_back' ? 'warning' : 'error'} variant="outlined" sx={{ mb: 1.5 }} data-testid="failure-summary">
          {op.failure_summary}
        </Alert>
      )}
      {running && last?.phase === 'downloading' && typeof last.percent === 'number' && (
        <LinearProgress variant="determinate" value={last.percent} sx={{ mb: 1.5 }} aria-label="Download progress" />
      )}
      <Timeline op={op} />
      <Typography variant="caption" color="text.secondary" component="p" sx={{ mt: 1 }}>
        Operation {op.operation_id}
        {op.artifact_id ? ` · artifact ${op.artifact_id}` : ''}
        {op.finished_at ? ` · finished ${formatCompactDateTime(op.finished_at, true)}` : ''}
      </Typography>
    </Box>
  );
}

export function AgentTab({ device }: { device: DeviceSummary }) {
  const queryClient = useQueryClient();
  const notify = useNotify();
  const [confirming, setConfirming] = useState(false);
  const key = deviceAgentUpdatesKey(device.guid);
  const query = useQuery({
    queryKey: key,
    queryFn: () => agentUpdates.forDevice(device.guid),
    refetchInterval: (q) => (q.state.data?.active ? AGENT_UPDATE_ACTIVE_POLL_MS : AGENT_UPDATE_IDLE_POLL_MS),
  });
  const update = useMutation({
    mutationFn: () => agentUpdates.updateNow(device.hostname),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: key });
      notify({ title: `Updating the agent on ${device.hostname}`, message: 'Progress shows on the Agent tab.', icon: 'device' });
    },
    onError: (error) => notify({ title: `Could not update ${device.hostname}`, message: describeError(error), variant: 'error' }),
  });

  const active = query.data?.active ?? null;
  const history = (query.data?.history ?? []).filter((op) => op.operation_id !== active?.operation_id);

  return (
    <Box>
      <Section
        title="Agent build"
        actions={
          <Button
            variant="contained"
            size="small"
            startIcon={update.isPending ? <CircularProgress size={14} color="inherit" /> : <SystemUpdateAltIcon />}
            disabled={update.isPending || active !== null}
            onClick={() => setConfirming(true)}
          >
            Update now
          </Button>
        }
      >
        <Facts
          items={[
            ['Installed build', device.agent_build_id ? <Build id={device.agent_build_id} /> : null],
            [
              'Capabilities',
              <span data-testid="agent-capabilities">{device.capabilities.length ? device.capabilities.join(', ') : 'None'}</span>,
            ],
            ['Update', active ? <RunStatusChip status={active.status} /> : 'None running'],
            ['Last update', history[0] ? <RelativeTime value={history[0].finished_at ?? history[0].created_at} /> : 'Never'],
          ]}
        />
      </Section>
      {query.isError && <ErrorAlert error={query.error} />}
      {query.isPending && (
        <Box role="status" sx={{ typography: 'body2', color: 'text.secondary' }}>
          Loading the update history…
        </Box>
      )}
      {active && (
        <Section title="Update in progress">
          <Box data-testid="active-update">
            <OperationSummary op={active} />
            <Box sx={{ mt: 1.5 }}>
              <OperationDetail op={active} />
            </Box>
          </Box>
        </Section>
      )}
      {query.isSuccess && (
        <Section title="Update history">
          {history.length === 0 ? (
            <Typography variant="body2" color="text.secondary" data-testid="no-updates">
              This agent has not been updated through the Engine yet.
            </Typography>
          ) : (
            history.map((op) => (
              <Accordion key={op.operation_id} disableGutters variant="outlined" data-testid="update-operation">
                <AccordionSummary expandIcon={<ExpandMoreIcon />}>
                  <OperationSummary op={op} />
                </AccordionSummary>
                <AccordionDetails>
                  <OperationDetail op={op} />
                </AccordionDetails>
              </Accordion>
            ))
          )}
        </Section>
      )}
      {confirming && (
        <ConfirmDialog title={`Update the agent on ${device.hostname}?`} confirm="Update now" onConfirm={() => update.mutate()} onClose={() => setConfirming(false)}>
          The agent downloads the Engine’s current build, verifies it, replaces itself and restarts. When the build already
          matches it is reinstalled as a repair. Identity, enrollment and trust are kept; if the new agent does not check in,
          the previous one is restored.
        </ConfirmDialog>
      )}
    </Box>
  );
}
