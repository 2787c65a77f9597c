// The results of one job run (a quick run, a scheduled job's run or a
// workflow step), polled every second while it runs: a status chip per
// device, and the chosen device's exit code, stdout and stderr.
import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Chip from '@mui/material/Chip';
import CircularProgress from '@mui/material/CircularProgress';
import List from '@mui/material/List';
import ListItemButton from '@mui/material/ListItemButton';
import Paper from '@mui/material/Paper';
import Typography from '@mui/material/Typography';
import type { Run, RunResult, RunResultStatus, RunStatus } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { formatCompactDateTime, formatDuration } from '../../components/format';
import { mono } from '../devices/parts';

export const RUN_POLL_MS = 1000;

type ChipColor = 'default' | 'success' | 'error' | 'warning' | 'info';

const STATUS: Record<string, { label: string; color: ChipColor }> = {
  pending: { label: 'Pending', color: 'default' },
  running: { label: 'Running', color: 'info' },
  succeeded: { label: 'Succeeded', color: 'success' },
  failed: { label: 'Failed', color: 'error' },
  timed_out: { label: 'Timed out', color: 'warning' },
  skipped: { label: 'Skipped', color: 'default' },
  canceled: { label: 'Canceled', color: 'default' },
  queued: { label: 'Queued', color: 'default' },
  rolled_back: { label: 'Rolled back', color: 'warning' },
};

export function RunStatusChip({ status, label }: { status: RunStatus | RunResultStatus | string | null | undefined; label?: string }) {
  const s = STATUS[status ?? ''] ?? { label: status || '—', color: 'default' as const };
  return (
    <Chip
      size="small"
      label={s.label}
      color={s.color}
      variant={s.color === 'default' ? 'outlined' : 'filled'}
      data-testid="run-status"
      data-status={status ?? ''}
      aria-label={label ? `${label}: ${s.label}` : undefined}
      icon={status === 'running' ? <CircularProgress size={11} color="inherit" sx={{ ml: '6px !important' }} /> : undefined}
    />
  );
}

export const runFinished = (run: { status: string } | undefined) =>
  run !== undefined && (run.status === 'succeeded' || run.status === 'failed' || run.status === 'canceled');

function duration(r: RunResult): string {
  let ms = r.duration_ms ?? null;
  if (ms === null && r.started_at && r.finished_at) ms = Date.parse(r.finished_at) - Date.parse(r.started_at);
  if (ms === null) return '—';
  return ms < 1000 ? `${Math.max(0, ms)} ms` : formatDuration(ms / 1000);
}

function OutputPane({ title, text, truncated, error = false }: { title: string; text: string; truncated: boolean; error?: boolean }) {
  return (
    <Box component="section" aria-label={title} sx={{ mb: 1.5 }}>
      <Typography variant="caption" sx={{ fontWeight: 600, color: error ? 'error.main' : 'text.secondary' }}>
        {title}
      </Typography>
      <Box
        component="pre"
        data-testid={title.toLowerCase()}
        sx={{
          ...mono,
          m: 0,
          mt: 0.5,
          p: 1,
          bgcolor: '#0f172a',
          color: error ? '#fecaca' : '#e2e8f0',
          borderRadius: 1,
          maxHeight: 320,
          minHeight: 36,
          overflow: 'auto',
          whiteSpace: 'pre-wrap',
          wordBreak: 'break-word',
        }}
      >
        {text || <Box component="span" sx={{ color: '#64748b' }}>(empty)</Box>}
      </Box>
      {truncated && (
        <Typography variant="caption" color="warning.main" data-testid="truncated-note">
          {title} was cut at 1 MiB; only its start is shown.
        </Typography>
      )}
    </Box>
  );
}

/** A playbook's PLAY RECAP on the device: ok, changed, failed, … counts. */
function AnsibleRecap({ recap }: { recap: NonNullable<RunResult['ansible']> }) {
  const counts: [string, number, ChipColor][] = [
    ['ok', recap.ok, 'success'],
    ['changed', recap.changed, recap.changed ? 'warning' : 'default'],
    ['failed', recap.failed, recap.failed ? 'error' : 'default'],
    ['unreachable', recap.unreachable, recap.unreachable ? 'error' : 'default'],
    ['skipped', recap.skipped, 'default'],
    ['rescued', recap.rescued, 'default'],
    ['ignored', recap.ignored, 'default'],
  ];
  return (
    <Box role="group" aria-label="Play recap" data-testid="ansible-recap" sx={{ display: 'flex', gap: 0.75, alignItems: 'center', flexWrap: 'wrap', mb: 1 }}>
      <Typography variant="caption" sx={{ fontWeight: 600, color: 'text.secondary' }}>
        Play recap{recap.version ? ` (ansible-core ${recap.version})` : ''}
      </Typography>
      {counts.map(([name, n, color]) => (
        <Chip key={name} size="small" variant="outlined" color={color} label={`${name} ${n}`} data-testid={`recap-${name}`} />
      ))}
    </Box>
  );
}

function ResultDetail({ result }: { result: RunResult }) {
  return (
    <Box data-testid="result-detail" aria-label={`Output of ${result.hostname}`} role="region">
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1.5, mb: 1, flexWrap: 'wrap' }}>
        <Typography variant="subtitle2" sx={{ fontWeight: 600 }}>
          {result.hostname}
        </Typography>
        <RunStatusChip status={result.status} />
        <Typography variant="body2" data-testid="exit-code">
          Exit code: <b>{result.exit_code ?? '—'}</b>
        </Typography>
        <Typography variant="body2" color="text.secondary">
          Started {formatCompactDateTime(result.started_at, true)} · took {duration(result)}
        </Typography>
      </Box>
      {(result.error_code || result.error_message) && (
        <Alert severity={result.status === 'skipped' ? 'info' : 'error'} variant="outlined" sx={{ mb: 1 }} data-testid="result-error">
          {result.error_message || result.error_code}
          {result.error_code && result.error_message ? ` (${result.error_code})` : ''}
        </Alert>
      )}
      {result.ansible && <AnsibleRecap recap={result.ansible} />}
      {result.status === 'running' && (
        <Typography variant="caption" color="text.secondary" component="p" sx={{ mb: 0.5 }}>
          Output so far; it updates every second while the script runs.
        </Typography>
      )}
      <OutputPane title="Stdout" text={result.stdout} truncated={result.stdout_truncated} />
      <OutputPane title="Stderr" text={result.stderr} truncated={result.stderr_truncated} error />
    </Box>
  );
}

/** Renders a run already fetched (also used for a run held by a parent). */
export function RunView({ run }: { run: Run }) {
  const results = run.results ?? [];
  const [chosen, setChosen] = useState<string | null>(null);
  const selected = results.find((r) => r.guid === chosen) ?? results[0];
  const c = run.counts;
  return (
    <Box data-testid="run-view" data-run-status={run.status}>
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1, mb: 1.5, flexWrap: 'wrap' }}>
        <RunStatusChip status={run.status} label="Run" />
        <Typography variant="body2" color="text.secondary">
          {run.assembly_name ? `${run.assembly_name} v${run.assembly_version ?? '?'}` : `Ad-hoc ${run.language || 'script'}`}
          {run.language === 'ansible' ? ' · Ansible playbook' : ''}
          {run.requested_by ? ` · by ${run.requested_by}` : ''}
          {` · ${formatCompactDateTime(run.created_at, true)}`}
        </Typography>
        <Box sx={{ flex: 1 }} />
        {c && (
          <Typography variant="body2" color="text.secondary" data-testid="run-counts">
            {c.succeeded} succeeded · {c.failed} failed · {c.timed_out} timed out · {c.running} running · {c.pending} pending
            {c.skipped ? ` · ${c.skipped} skipped` : ''}
          </Typography>
        )}
      </Box>
      {results.length === 0 ? (
        <Typography variant="body2" color="text.secondary">
          No devices in this run.
        </Typography>
      ) : (
        <Box sx={{ display: 'grid', gridTemplateColumns: { xs: '1fr', md: '240px 1fr' }, gap: 2 }}>
          <Paper variant="outlined" sx={{ maxHeight: 480, overflow: 'auto' }}>
            <List dense disablePadding aria-label="Devices in this run">
              {results.map((r) => (
                <ListItemButton
                  key={r.guid}
                  selected={selected?.guid === r.guid}
                  onClick={() => setChosen(r.guid)}
                  data-testid="run-device"
                  sx={{ display: 'flex', gap: 1, m: 0, borderRadius: 0 }}
                >
                  <Box sx={{ flex: 1, minWidth: 0, overflow: 'hidden', textOverflow: 'ellipsis', fontSize: 13 }}>{r.hostname}</Box>
                  {r.exit_code !== null && r.exit_code !== undefined && (
                    <Box component="span" sx={{ ...mono, color: 'text.secondary' }}>
                      {r.exit_code}
                    </Box>
                  )}
                  <RunStatusChip status={r.status} label={r.hostname} />
                </ListItemButton>
              ))}
            </List>
          </Paper>
          {selected && <ResultDetail result={selected} />}
        </Box>
      )}
    </Box>
  );
}

/**
 * Fetches a run and polls it every second until it finishes. `queryKey`
 * identifies the run in the cache; `fetchRun` is the route that reads it
 * (quick run, scheduled job run).
 */
export function RunResults({ queryKey, fetchRun }: { queryKey: readonly unknown[]; fetchRun: () => Promise<Run> }) {
  const query = useQuery({
    queryKey,
    queryFn: fetchRun,
    refetchInterval: (q) => (runFinished(q.state.data) ? false : RUN_POLL_MS),
    refetchIntervalInBackground: true,
  });
  if (query.isPending) {
    return (
      <Box role="status" sx={{ display: 'flex', alignItems: 'center', gap: 1, py: 2 }}>
        <CircularProgress size={18} /> Loading the run…
      </Box>
    );
  }
  return (
    <Box>
      {query.isError && <ErrorAlert error={query.error} />}
      {query.data && <RunView run={query.data} />}
    </Box>
  );
}
