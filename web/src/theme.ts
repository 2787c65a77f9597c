import { createTheme } from '@mui/material/styles';

// Light, dense admin look: slate chrome, teal as the primary action colour.
export const SLATE = {
  50: '#f8fafc',
  100: '#f1f5f9',
  200: '#e2e8f0',
  300: '#cbd5e1',
  500: '#64748b',
  700: '#334155',
  800: '#1e293b',
  900: '#0f172a',
};

export const theme = createTheme({
  palette: {
    mode: 'light',
    primary: { main: '#0f766e', dark: '#115e59', light: '#14b8a6', contrastText: '#ffffff' },
    secondary: { main: SLATE[700] },
    info: { main: '#1565c0' },
    warning: { main: '#d97706' },
    error: { main: '#c62828' },
    success: { main: '#15803d' },
    background: { default: '#f4f6f8', paper: '#ffffff' },
    text: { primary: SLATE[900], secondary: SLATE[500] },
    divider: SLATE[200],
  },
  shape: { borderRadius: 6 },
  typography: {
    fontFamily: '"Inter", "Segoe UI", system-ui, -apple-system, Roboto, "Helvetica Neue", Arial, sans-serif',
    fontSize: 13,
    h5: { fontSize: '1.35rem', fontWeight: 600 },
    h6: { fontSize: '1.1rem', fontWeight: 600 },
    button: { textTransform: 'none', fontWeight: 600 },
  },
  components: {
    MuiTextField: { defaultProps: { size: 'small', variant: 'outlined' } },
    MuiFormControl: { defaultProps: { size: 'small' } },
    MuiSelect: { defaultProps: { size: 'small' } },
    MuiButton: { defaultProps: { disableElevation: true } },
    MuiAppBar: { defaultProps: { elevation: 0 } },
    MuiListItemButton: {
      styleOverrides: {
        root: {
          borderRadius: 6,
          margin: '1px 8px',
          '&.Mui-selected': { backgroundColor: 'rgba(15,118,110,0.10)', color: '#0f766e' },
          '&.Mui-selected .MuiListItemIcon-root': { color: '#0f766e' },
        },
      },
    },
    MuiListItemIcon: { styleOverrides: { root: { minWidth: 36 } } },
    MuiDialogTitle: { styleOverrides: { root: { fontSize: '1.05rem', fontWeight: 600 } } },
    MuiChip: { styleOverrides: { sizeSmall: { fontWeight: 600 } } },
    MuiTooltip: { defaultProps: { arrow: true } },
  },
});
