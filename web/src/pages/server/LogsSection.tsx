import { useEffect, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import FormControl from '@mui/material/FormControl';
import FormControlLabel from '@mui/material/FormControlLabel';
import InputLabel from '@mui/material/InputLabel';
import MenuItem from '@mui/material/MenuItem';
import Paper from '@mui/material/Paper';
import Select from '@mui/material/Select';
import Switch from '@mui/material/Switch';
import TextField from '@mui/material/TextField';
import Typography from '@mui/material/Typography';
import { serverLogs, type LogEntry, type LogQuery } from '../../api/endpoints';
import { ErrorAlert } from '../../components/ErrorAlert';

/** At most this many lines stay on screen while tailing. */
export const MAX_TAIL_LINES = 1000;

const LEVELS = ['', 'debug', 'info', 'warn', 'error'];

/** One entry as a line: time, level, message, then its attributes. */
export function formatEntry(e: LogEntry): string {
  const attrs = Object.entries(e.attrs ?? {})
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${e.time} ${e.level} ${e.msg}${attrs ? ` ${attrs}` : ''}`;
}

/** Appends tailed entries, keeping the newest MAX_TAIL_LINES. */
export function appendTail(lines: LogEntry[], e: LogEntry): LogEntry[] {
  const next = [...lines, e];
  return next.length > MAX_TAIL_LINES ? next.slice(next.length - MAX_TAIL_LINES) : next;
}

/**
 * The Engine's and workers' logs, for administrators: filtered reads of
 * the log files (level, time, text; bounded by the Engine) and a live
 * tail. Lines are redacted by the Engine.
 */
export function LogsSection() {
  const sources = useQuery({ queryKey: ['log-sources'], queryFn: serverLogs.sources });
  const [source, setSource] = useState('');
  const [filters, setFilters] = useState<LogQuery>({ level: '', q: '', since: '', limit: 200 });
  const [applied, setApplied] = useState<LogQuery | null>(null);
  const [tail, setTail] = useState(false);
  const [tailLines, setTailLines] = useState<LogEntry[]>([]);
  const [tailError, setTailError] = useState<string | null>(null);
  const chosen = source || sources.data?.sources?.[0]?.name || '';

  const read = useQuery({
    queryKey: ['logs', chosen, applied],
    queryFn: () => serverLogs.read(chosen, applied!),
    enabled: !!chosen && applied !== null,
  });

  useEffect(() => {
    if (!tail || !chosen || typeof EventSource === 'undefined') return;
    setTailLines([]);
    setTailError(null);
    const es = new EventSource(serverLogs.streamURL(chosen, filters), { withCredentials: true });
    es.addEventListener('entry', (ev) => {
      try {
        const e = JSON.parse((ev as MessageEvent).data) as LogEntry;
        setTailLines((lines) => appendTail(lines, e));
      } catch {
        /* a malformed event is skipped */
      }
    });
    es.addEventListener('stream_closed', () => {
      setTailError('The live tail ended (session ended or changed).');
      es.close();
    });
    return () => es.close();
    // The tail restarts when the source or its filters change.
  }, [tail, chosen, filters.level, filters.q]);

  if (sources.data && !sources.data.enabled) {
    return (
      <Paper variant="outlined" sx={{ p: 2.5, mb: 2 }} data-testid="logs">
        <Typography variant="subtitle1" component="h2" sx={{ fontWeight: 600, mb: 1 }}>
          Logs
        </Typography>
        <Alert severity="info">This Engine writes no log files (CAIRN_LOG_DIR=off); its logs are on its standard error.</Alert>
      </Paper>
    );
  }
  const lines = tail ? tailLines : (read.data?.entries ?? []);

  return (
    <Paper variant="outlined" sx={{ p: 2.5, mb: 2 }} data-testid="logs">
      <Typography variant="subtitle1" component="h2" sx={{ fontWeight: 600, mb: 1 }}>
        Logs
      </Typography>
      {sources.isError && <ErrorAlert error={sources.error} />}
      <Box
        component="form"
        sx={{ display: 'flex', gap: 1, flexWrap: 'wrap', alignItems: 'center', mb: 1.5 }}
        onSubmit={(e) => {
          e.preventDefault();
          setApplied({ ...filters, since: filters.since ? new Date(filters.since).toISOString() : '' });
        }}
      >
        <FormControl size="small" sx={{ minWidth: 130 }}>
          <InputLabel id="log-source-label">Source</InputLabel>
          <Select labelId="log-source-label" label="Source" value={chosen} onChange={(e) => setSource(String(e.target.value))}>
            {(sources.data?.sources ?? []).map((s) => (
              <MenuItem key={s.name} value={s.name}>
                {s.name}
              </MenuItem>
            ))}
          </Select>
        </FormControl>
        <FormControl size="small" sx={{ minWidth: 110 }}>
          <InputLabel id="log-level-label">Level</InputLabel>
          <Select
            labelId="log-level-label"
            label="Level"
            value={filters.level}
            onChange={(e) => setFilters({ ...filters, level: String(e.target.value) })}
          >
            {LEVELS.map((l) => (
              <MenuItem key={l || 'all'} value={l}>
                {l || 'all'}
              </MenuItem>
            ))}
          </Select>
        </FormControl>
        <TextField size="small" label="Contains" value={filters.q} onChange={(e) => setFilters({ ...filters, q: e.target.value })} />
        <TextField
          size="small"
          type="datetime-local"
          label="Since"
          InputLabelProps={{ shrink: true }}
          value={filters.since}
          onChange={(e) => setFilters({ ...filters, since: e.target.value })}
        />
        <Button type="submit" variant="outlined" disabled={!chosen || tail}>
          Read
        </Button>
        <FormControlLabel control={<Switch checked={tail} onChange={(e) => setTail(e.target.checked)} />} label="Live tail" />
      </Box>
      {read.isError && !tail && <ErrorAlert error={read.error} />}
      {tailError && <Alert severity="warning">{tailError}</Alert>}
      {!tail && read.data?.truncated && (
        <Alert severity="info" sx={{ mb: 1 }}>
          The read stopped at the Engine&apos;s scan limit; older matching lines may exist. Narrow it with Since.
        </Alert>
      )}
      <Box
        component="pre"
        aria-label="Log lines"
        sx={{
          m: 0,
          p: 1,
          maxHeight: 420,
          overflow: 'auto',
          bgcolor: 'action.hover',
          fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
          fontSize: 12,
          whiteSpace: 'pre-wrap',
          wordBreak: 'break-word',
        }}
      >
        {lines.length === 0 ? (tail ? 'Waiting for new lines…' : applied ? 'No matching lines.' : 'Choose filters and Read.') : lines.map(formatEntry).join('\n')}
      </Box>
    </Paper>
  );
}
