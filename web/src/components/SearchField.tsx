import SearchIcon from '@mui/icons-material/Search';
import InputAdornment from '@mui/material/InputAdornment';
import TextField from '@mui/material/TextField';
import type { InputHTMLAttributes } from 'react';

/**
 * The console's search box: a labelled type="search" field (role
 * searchbox) with the magnifier, used above grids.
 */
export function SearchField({
  label,
  value,
  onChange,
  minWidth = 240,
  htmlInput,
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  minWidth?: number;
  htmlInput?: InputHTMLAttributes<HTMLInputElement>;
}) {
  return (
    <TextField
      type="search"
      label={label}
      value={value}
      onChange={(e) => onChange(e.target.value)}
      sx={{ minWidth }}
      slotProps={{
        htmlInput,
        input: {
          startAdornment: (
            <InputAdornment position="start">
              <SearchIcon fontSize="small" />
            </InputAdornment>
          ),
        },
      }}
    />
  );
}
