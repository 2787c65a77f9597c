import { useState, type ReactNode } from 'react';
import { NavLink, useLocation, useNavigate } from 'react-router';
import AppBar from '@mui/material/AppBar';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Divider from '@mui/material/Divider';
import Drawer from '@mui/material/Drawer';
import List from '@mui/material/List';
import ListItemButton from '@mui/material/ListItemButton';
import ListItemIcon from '@mui/material/ListItemIcon';
import ListItemText from '@mui/material/ListItemText';
import Menu from '@mui/material/Menu';
import MenuItem from '@mui/material/MenuItem';
import Toolbar from '@mui/material/Toolbar';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import AccountCircleIcon from '@mui/icons-material/AccountCircle';
import ArrowDropDownIcon from '@mui/icons-material/ArrowDropDown';
import LogoutIcon from '@mui/icons-material/Logout';
import PersonIcon from '@mui/icons-material/Person';
import { useSession } from '../auth/session';
import { CairnMark } from '../components/CairnMark';
import { SLATE } from '../theme';
import type { StreamStatus } from '../toasts/useOperatorEvents';
import { NAV_ITEMS } from './nav';

export const DRAWER_WIDTH = 208;

const STREAM_LABEL: Record<StreamStatus, { text: string; color: string }> = {
  open: { text: 'Live', color: '#34d399' },
  connecting: { text: 'Connecting', color: '#fbbf24' },
  reconnecting: { text: 'Reconnecting', color: '#fbbf24' },
  closed: { text: 'Offline', color: '#94a3b8' },
};

export function AppFrame({ children, streamStatus }: { children: ReactNode; streamStatus: StreamStatus }) {
  const { user, signOut } = useSession();
  const navigate = useNavigate();
  const location = useLocation();
  const [menuAnchor, setMenuAnchor] = useState<HTMLElement | null>(null);
  const [signingOut, setSigningOut] = useState(false);
  const stream = STREAM_LABEL[streamStatus];

  const doSignOut = async () => {
    setMenuAnchor(null);
    setSigningOut(true);
    try {
      await signOut();
    } finally {
      setSigningOut(false);
    }
  };

  return (
    <Box sx={{ display: 'flex', minHeight: '100vh', bgcolor: 'background.default' }}>
      <AppBar position="fixed" sx={{ zIndex: (t) => t.zIndex.drawer + 1, bgcolor: SLATE[800], color: '#fff' }}>
        <Toolbar variant="dense" sx={{ gap: 1.5 }}>
          <CairnMark size={26} inverted />
          <Typography variant="h6" component="div" sx={{ fontWeight: 700, letterSpacing: 0.3 }}>
            Cairn
          </Typography>
          <Box sx={{ flex: 1 }} />
          <Tooltip title={`Operator event stream: ${stream.text.toLowerCase()}`}>
            <Box
              data-testid="stream-status"
              data-status={streamStatus}
              sx={{ display: 'flex', alignItems: 'center', gap: 0.75, fontSize: 12, color: SLATE[300], mr: 1 }}
            >
              <Box sx={{ width: 8, height: 8, borderRadius: '50%', bgcolor: stream.color }} />
              {stream.text}
            </Box>
          </Tooltip>
          <Button
            color="inherit"
            onClick={(e) => setMenuAnchor(e.currentTarget)}
            startIcon={<AccountCircleIcon />}
            endIcon={<ArrowDropDownIcon />}
            aria-haspopup="menu"
            aria-label={`Account menu for ${user.username}`}
            data-testid="user-menu-button"
            disabled={signingOut}
            sx={{ fontWeight: 500 }}
          >
            <span data-testid="current-username">{user.username}</span>
          </Button>
          <Menu
            anchorEl={menuAnchor}
            open={Boolean(menuAnchor)}
            onClose={() => setMenuAnchor(null)}
            anchorOrigin={{ vertical: 'bottom', horizontal: 'right' }}
            transformOrigin={{ vertical: 'top', horizontal: 'right' }}
          >
            <Box sx={{ px: 2, py: 0.75 }}>
              <Typography variant="body2" sx={{ fontWeight: 600 }}>
                {user.username}
              </Typography>
              <Typography variant="caption" color="text.secondary">
                {user.role}
              </Typography>
            </Box>
            <Divider />
            <MenuItem
              onClick={() => {
                setMenuAnchor(null);
                navigate('/profile');
              }}
            >
              <ListItemIcon>
                <PersonIcon fontSize="small" />
              </ListItemIcon>
              Profile
            </MenuItem>
            <MenuItem onClick={doSignOut}>
              <ListItemIcon>
                <LogoutIcon fontSize="small" />
              </ListItemIcon>
              Sign out
            </MenuItem>
          </Menu>
        </Toolbar>
      </AppBar>
      <Drawer
        variant="permanent"
        sx={{
          width: DRAWER_WIDTH,
          flexShrink: 0,
          '& .MuiDrawer-paper': { width: DRAWER_WIDTH, boxSizing: 'border-box', bgcolor: '#fff' },
        }}
      >
        <Toolbar variant="dense" />
        <List component="nav" aria-label="Main" dense sx={{ pt: 1 }}>
          {NAV_ITEMS.map(({ label, path, icon: Icon }) => (
            <ListItemButton
              key={path}
              component={NavLink}
              to={path}
              selected={location.pathname === path || location.pathname.startsWith(`${path}/`)}
            >
              <ListItemIcon>
                <Icon fontSize="small" />
              </ListItemIcon>
              <ListItemText primary={label} slotProps={{ primary: { sx: { fontSize: 13.5, fontWeight: 500 } } }} />
            </ListItemButton>
          ))}
        </List>
      </Drawer>
      <Box component="main" sx={{ flex: 1, minWidth: 0, p: 3, pt: 2 }}>
        <Toolbar variant="dense" />
        {children}
      </Box>
    </Box>
  );
}
