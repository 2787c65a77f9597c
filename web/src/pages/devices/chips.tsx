import Chip from '@mui/material/Chip';
import Tooltip from '@mui/material/Tooltip';
import { formatDateTime, formatRelative } from '../../components/format';
import { statusChip } from './status';

const STATUS_HELP: Record<string, string> = {
  Connected: 'Recent heartbeat, and the site worker reports the agent socket connected.',
  Disconnected: 'Recent heartbeat, but the agent socket is not connected.',
  Offline: 'No heartbeat within the online window.',
};

export function StatusChip({ status, size = 'small' }: { status: string | null | undefined; size?: 'small' | 'medium' }) {
  const { label, color } = statusChip(status);
  return (
    <Tooltip title={STATUS_HELP[label] ?? ''}>
      <Chip
        size={size}
        label={label}
        color={color}
        variant={color === 'default' ? 'outlined' : 'filled'}
        data-testid="status-chip"
        data-color={color}
      />
    </Tooltip>
  );
}

const TRUST: Record<string, { label: string; color: 'success' | 'warning' | 'error' | 'default' }> = {
  active: { label: 'Active', color: 'success' },
  quarantined: { label: 'Quarantined', color: 'warning' },
  revoked: { label: 'Revoked', color: 'error' },
  purged: { label: 'Purged', color: 'error' },
};

/** The trust state as a badge; `hideActive` leaves active devices unmarked (the grid). */
export function TrustBadge({ state, hideActive = false }: { state: string | null | undefined; hideActive?: boolean }) {
  if (!state || (hideActive && state === 'active')) return null;
  const t = TRUST[state] ?? { label: state, color: 'default' as const };
  return (
    <Chip
      size="small"
      variant="outlined"
      color={t.color}
      label={t.label}
      data-testid="trust-badge"
      aria-label={`Trust state: ${t.label}`}
      sx={{ height: 20, fontSize: 11.5 }}
    />
  );
}

/** Relative time with the exact time on hover. */
export function RelativeTime({ value, now, never = 'Never' }: { value: string | null | undefined; now?: number; never?: string }) {
  if (!value) return <span>{never}</span>;
  return (
    <time dateTime={value} title={formatDateTime(value)}>
      {formatRelative(value, now)}
    </time>
  );
}
