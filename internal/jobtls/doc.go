// Package jobtls makes and reads the TLS credentials of one job run with
// --tls: a certificate authority made for the job, and the certificates
// its PEs and its coordinator present, so that every PE-to-PE and
// PE-to-coordinator connection is mutual TLS 1.3.
//
// The launcher calls New: an ECDSA P-256 CA, one certificate and key
// every PE shares (name PEName, usable as client and server), and the
// coordinator's own certificate (name CoordinatorName, server only). The
// CA's key signs them and is then dropped: nobody, the launcher included,
// can issue another certificate of the job. The coordinator's key stays
// in the launcher's memory. Write puts what PEs need in a directory, each
// file mode 0600: CAFile, CertFile and KeyFile. A PE, started by the
// launcher or by hand or srun with that directory on a shared file
// system, reads them with Load.
//
// Why one PE certificate, not one per rank: the PEs of a job run the same
// program as the same user and trust each other completely (any PE may
// restore any other's tasks); a per-rank certificate would add no trust
// boundary inside the job, while one certificate keeps the directory the
// same for any number of PEs, for PEs started again, and for srun, where
// a task learns its rank only at start. What TLS keeps out is everything
// outside the job: a client without a certificate of this job's CA is
// refused. A PE's certificate cannot pass for the coordinator (PEs check
// the name CoordinatorName), and the coordinator's, made for servers
// only, is not accepted as a client by PEs.
//
// Secret derives the job secret (the key of the HMAC handshakes of
// package transport and of the control connection) from the PE key: with
// --tls no secret travels in the environment, the key file is the one
// credential.
//
// It imports the standard library only.
package jobtls
