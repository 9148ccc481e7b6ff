package launcher

// localLoggerAddr is the Unix socket on which the logger listening on TCP
// address addr listens too: a name in the abstract namespace (no file to
// remove), which only the processes of the logger's network namespace
// reach, and which no other logger has, since no other listens on addr
// there.
func localLoggerAddr(addr string) string { return "@gochare-logger " + addr }
