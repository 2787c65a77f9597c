import type { ReactNode } from 'react';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import CircularProgress from '@mui/material/CircularProgress';
import Paper from '@mui/material/Paper';
import Typography from '@mui/material/Typography';
import RefreshIcon from '@mui/icons-material/Refresh';

/** An inventory collection the Engine holds nothing for yet (null), said plainly. */
export function NotCollected({ what }: { what: string }) {
  return (
    <Alert severity="info" variant="outlined" data-testid="not-collected" sx={{ mb: 2 }}>
      {what} not collected yet. The agent sends it with its next inventory post; this page updates when it arrives.
    </Alert>
  );
}

/** A collected collection with nothing in it. */
export function NoneReported({ children }: { children: ReactNode }) {
  return (
    <Typography variant="body2" color="text.secondary" data-testid="none-reported" sx={{ py: 1 }}>
      {children}
    </Typography>
  );
}

export function Section({ title, children, actions }: { title: string; children: ReactNode; actions?: ReactNode }) {
  return (
    <Paper variant="outlined" component="section" aria-label={title} sx={{ p: 2, mb: 2 }}>
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1, mb: 1.25 }}>
        <Typography variant="subtitle1" component="h2" sx={{ fontWeight: 600, flex: 1 }}>
          {title}
        </Typography>
        {actions}
      </Box>
      {children}
    </Paper>
  );
}

/** Label/value pairs; empty values show a dash. */
export function Facts({ items }: { items: [string, ReactNode][] }) {
  return (
    <Box
      component="dl"
      sx={{
        m: 0,
        display: 'grid',
        gridTemplateColumns: 'minmax(140px, max-content) 1fr',
        columnGap: 2,
        rowGap: 0.75,
        '& dt': { color: 'text.secondary', fontSize: 13 },
        '& dd': { m: 0, fontSize: 13, wordBreak: 'break-word' },
      }}
    >
      {items.map(([label, value]) => (
        <Box key={label} sx={{ display: 'contents' }}>
          <dt>{label}</dt>
          <dd>{value === undefined || value === null || value === '' ? '—' : value}</dd>
        </Box>
      ))}
    </Box>
  );
}

export const mono = { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace', fontSize: 12.5 };

/** The line above a tab's content: what the data is (left) and what can be done (right). */
export function OperationBar({ children, actions }: { children?: ReactNode; actions: ReactNode }) {
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', gap: 2, mb: 1.25, minHeight: 32 }}>
      <Box sx={{ flex: 1, typography: 'body2', color: 'text.secondary' }}>{children}</Box>
      {actions}
    </Box>
  );
}

/** Asks the agent for fresh data; shows progress while the agent works. */
export function RefreshButton({ label, pending, onClick }: { label: string; pending: boolean; onClick: () => void }) {
  return (
    <Button
      variant="outlined"
      size="small"
      aria-label={label}
      startIcon={pending ? <CircularProgress size={14} /> : <RefreshIcon />}
      disabled={pending}
      onClick={onClick}
    >
      {pending ? 'Refreshing…' : 'Refresh'}
    </Button>
  );
}
