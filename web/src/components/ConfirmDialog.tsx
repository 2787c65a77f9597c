import type { ReactNode } from 'react';
import { useMutation } from '@tanstack/react-query';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import { ErrorAlert } from './ErrorAlert';

/**
 * Asks before an operation that runs in the background. It closes on confirm: the operation can
 * take a minute, so its progress shows on the row or button that started it
 * and its outcome as a toast.
 */
export function ConfirmDialog({
  title,
  children,
  confirm,
  danger = false,
  onConfirm,
  onClose,
}: {
  title: string;
  children: ReactNode;
  confirm: string;
  danger?: boolean;
  onConfirm: () => void;
  onClose: () => void;
}) {
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="xs">
      <DialogTitle>{title}</DialogTitle>
      <DialogContent>
        <DialogContentText component="div" sx={{ fontSize: 14 }}>
          {children}
        </DialogContentText>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Cancel</Button>
        <Button
          variant="contained"
          color={danger ? 'error' : 'primary'}
          onClick={() => {
            onConfirm();
            onClose();
          }}
        >
          {confirm}
        </Button>
      </DialogActions>
    </Dialog>
  );
}

/**
 * Asks before a quick, destructive change and waits for it: the dialog
 * stays open (and cannot be dismissed) while the request runs, shows its
 * error in place, and closes once it succeeded.
 */
export function ConfirmActionDialog({
  title,
  children,
  confirm,
  pending,
  action,
  onDone,
  onClose,
}: {
  title: ReactNode;
  children: ReactNode;
  confirm: string;
  /** The confirm button's label while the request runs. */
  pending: string;
  action: () => Promise<unknown>;
  onDone: () => void;
  onClose: () => void;
}) {
  const mutation = useMutation({
    mutationFn: action,
    onSuccess: () => {
      onDone();
      onClose();
    },
  });
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="xs">
      <DialogTitle>{title}</DialogTitle>
      <DialogContent>
        <ErrorAlert error={mutation.error} />
        <DialogContentText sx={{ fontSize: 14 }}>{children}</DialogContentText>
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={mutation.isPending}>
          Cancel
        </Button>
        <Button color="error" variant="contained" onClick={() => mutation.mutate()} disabled={mutation.isPending}>
          {mutation.isPending ? pending : confirm}
        </Button>
      </DialogActions>
    </Dialog>
  );
}
