// ReasonDialog asks for the non-blank reason an incident action needs
// (suppressing an incident on the Alerts page, muting a watchdog on a
// device's Watchdogs tab): the submit stays disabled while the reason is
// blank, and the Engine's validation_failed on "reason" shows under it.
import { useState } from 'react';
import { useMutation } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import TextField from '@mui/material/TextField';
import { ErrorAlert } from '../../components/ErrorAlert';
import { fieldError } from '../../components/errors';

export interface ReasonDialogProps<T> {
  title: string;
  /** The submit button's label (Suppress, Mute). */
  action: string;
  helperText: string;
  /** Sends the trimmed reason; its result goes to onDone. */
  submit: (reason: string) => Promise<T>;
  onDone: (result: T) => void;
  onClose: () => void;
}

export function ReasonDialog<T>({ title, action, helperText, submit, onDone, onClose }: ReasonDialogProps<T>) {
  const [reason, setReason] = useState('');
  const mutation = useMutation({
    mutationFn: submit,
    onSuccess: (result) => {
      onDone(result);
      onClose();
    },
  });
  const blank = reason.trim() === '';
  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="sm" aria-labelledby="reason-title">
      <DialogTitle id="reason-title">{title}</DialogTitle>
      <Box
        component="form"
        onSubmit={(e) => {
          e.preventDefault();
          if (!blank) mutation.mutate(reason.trim());
        }}
      >
        <DialogContent>
          <ErrorAlert error={mutation.error} fields={['reason']} />
          <TextField
            autoFocus
            fullWidth
            label="Reason"
            value={reason}
            onChange={(e) => setReason(e.target.value)}
            error={Boolean(fieldError(mutation.error, 'reason'))}
            helperText={fieldError(mutation.error, 'reason') ?? helperText}
            sx={{ mt: 1 }}
          />
        </DialogContent>
        <DialogActions>
          <Button onClick={onClose} disabled={mutation.isPending}>
            Cancel
          </Button>
          <Button type="submit" variant="contained" disabled={blank || mutation.isPending}>
            {action}
          </Button>
        </DialogActions>
      </Box>
    </Dialog>
  );
}
