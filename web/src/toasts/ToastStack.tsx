import { useCallback, useEffect, useState } from 'react';
import Box from '@mui/material/Box';
import IconButton from '@mui/material/IconButton';
import Paper from '@mui/material/Paper';
import Typography from '@mui/material/Typography';
import CloseIcon from '@mui/icons-material/Close';
import ComputerIcon from '@mui/icons-material/Computer';
import ErrorIcon from '@mui/icons-material/Error';
import FilterListIcon from '@mui/icons-material/FilterList';
import InfoIcon from '@mui/icons-material/Info';
import NotificationsActiveIcon from '@mui/icons-material/NotificationsActive';
import ScheduleIcon from '@mui/icons-material/Schedule';
import WarningIcon from '@mui/icons-material/Warning';
import type { SvgIconComponent } from '@mui/icons-material';
import {
  dismissToast,
  msUntilNextExpiry,
  pruneExpired,
  pushToast,
  type Toast,
  type ToastIconKind,
  type ToastVariant,
} from './toastLogic';

export const TOAST_ICONS: Record<ToastIconKind, SvgIconComponent> = {
  info: InfoIcon,
  filter: FilterListIcon,
  schedule: ScheduleIcon,
  warning: WarningIcon,
  error: ErrorIcon,
  device: ComputerIcon,
  bell: NotificationsActiveIcon,
};

// Info blue, warning amber, error red (SPEC toast rules).
export const VARIANT_COLORS: Record<ToastVariant, { accent: string; tint: string }> = {
  info: { accent: '#1565c0', tint: '#e8f1fc' },
  warning: { accent: '#d97706', tint: '#fff7e0' },
  error: { accent: '#c62828', tint: '#fdecec' },
};

/** Holds the stack and removes each toast when its lifetime ends. */
export function useToastStack() {
  const [toasts, setToasts] = useState<Toast[]>([]);

  useEffect(() => {
    const wait = msUntilNextExpiry(toasts, Date.now());
    if (wait === null) return;
    const timer = window.setTimeout(() => setToasts((s) => pruneExpired(s, Date.now())), wait + 10);
    return () => window.clearTimeout(timer);
  }, [toasts]);

  const push = useCallback((toast: Toast) => setToasts((s) => pushToast(s, toast)), []);
  const dismiss = useCallback((id: string) => setToasts((s) => dismissToast(s, id)), []);
  return { toasts, push, dismiss };
}

export function ToastStack({ toasts, onDismiss }: { toasts: Toast[]; onDismiss: (id: string) => void }) {
  return (
    <Box
      aria-live="polite"
      role="region"
      aria-label="Notifications"
      sx={{
        position: 'fixed',
        top: 60,
        right: 16,
        // Above the app bar and drawer, below menus and dialogs (which must stay usable).
        zIndex: (t) => t.zIndex.modal - 1,
        display: 'flex',
        flexDirection: 'column',
        gap: 1,
        width: 360,
        maxWidth: 'calc(100vw - 32px)',
        pointerEvents: 'none',
      }}
    >
      {toasts.map((t) => (
        <ToastCard key={t.id} toast={t} onDismiss={onDismiss} />
      ))}
    </Box>
  );
}

function ToastCard({ toast, onDismiss }: { toast: Toast; onDismiss: (id: string) => void }) {
  const Icon = TOAST_ICONS[toast.icon];
  const colors = VARIANT_COLORS[toast.variant];
  return (
    <Paper
      data-testid="toast"
      data-variant={toast.variant}
      data-icon={toast.icon}
      role={toast.variant === 'info' ? 'status' : 'alert'}
      elevation={4}
      sx={{
        pointerEvents: 'auto',
        display: 'flex',
        alignItems: 'flex-start',
        gap: 1.25,
        p: 1.25,
        pl: 1.5,
        borderLeft: `4px solid ${colors.accent}`,
        bgcolor: colors.tint,
      }}
    >
      <Icon sx={{ color: colors.accent, mt: '1px' }} fontSize="small" />
      <Box sx={{ flex: 1, minWidth: 0 }}>
        <Typography variant="subtitle2" sx={{ fontWeight: 600, lineHeight: 1.3, wordBreak: 'break-word' }}>
          {toast.title}
        </Typography>
        <Typography
          variant="body2"
          data-testid="toast-message"
          sx={{ whiteSpace: 'pre-line', wordBreak: 'break-word', color: '#334155', mt: 0.25 }}
        >
          {toast.message}
        </Typography>
      </Box>
      <IconButton size="small" aria-label="Close notification" onClick={() => onDismiss(toast.id)} sx={{ mt: -0.5, mr: -0.5 }}>
        <CloseIcon fontSize="small" />
      </IconButton>
    </Paper>
  );
}
