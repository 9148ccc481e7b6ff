// Package child gives the process attributes with which gochare starts
// the processes it watches (a launcher's PEs and loggers, a chaos
// campaign's jobs).
package child
