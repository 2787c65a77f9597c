import { useState } from 'react';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import TextField from '@mui/material/TextField';
import { keyNameError } from './valueData';

/** Asks for a key name: a new subkey's, or a key's new name. */
export function KeyNameDialog({
  title,
  initial = '',
  confirm,
  busy,
  onSave,
  onClose,
}: {
  title: string;
  initial?: string;
  confirm: string;
  busy: boolean;
  onSave: (name: string) => void;
  onClose: () => void;
}) {
  const [name, setName] = useState(initial);
  const error = keyNameError(name);
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="xs">
      <DialogTitle>{title}</DialogTitle>
      <DialogContent sx={{ pt: '8px !important' }}>
        <TextField
          autoFocus
          fullWidth
          size="small"
          label="Key name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          error={name !== initial && !!error}
          helperText={name !== initial && error ? error : ' '}
        />
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Cancel</Button>
        <Button variant="contained" disabled={busy || !!error || name === initial} onClick={() => onSave(name)}>
          {confirm}
        </Button>
      </DialogActions>
    </Dialog>
  );
}
