# The remote desktop spec's test window (remote-desktop.spec.ts), run with
# Debian's Tk (`wish`) on the agent's Xvfb display: an orange window
# filling the 640x400 screen with two blue squares and an entry. Typing
# "cairn" into the entry turns the left square green; Delete pressed with
# Control and Alt held (what the console's Ctrl-Alt-Del button sends)
# turns the right one green. Every key is also written to the log file
# named by the first argument, so the spec can read back exactly what
# arrived.
set log [lindex $argv 0]
proc note {line} {
  global log
  set f [open $log a]
  puts $f $line
  close $f
}
wm geometry . 640x400+0+0
. configure -background "#ff8000" -width 640 -height 400
frame .typed -width 200 -height 120 -background "#2040a0"
frame .cad -width 200 -height 120 -background "#2040a0"
entry .e -width 30
place .typed -x 20 -y 20
place .cad -x 420 -y 20
place .e -x 20 -y 300
bind .e <KeyRelease> {
  note "text [.e get]"
  if {[.e get] eq "cairn"} { .typed configure -background "#00c000" }
}
# Tk's %s is the modifier state before the key: Control is 4, Mod1 (Alt) 8.
bind all <KeyPress-Delete> {
  note "delete state=%s"
  if {(%s & 4) && (%s & 8)} { .cad configure -background "#00c000" }
}
focus -force .e
note ready
