package migrate

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/migrate/migratepb"
)

// ManifestName is the file, written last, that marks an epoch directory
// complete.
const ManifestName = "MANIFEST"

// CollectionInfo names a collection and its number of elements.
type CollectionInfo struct {
	ID   int
	Name string
	Size int
}

// FileEntry is one PE's file in an epoch directory.
type FileEntry struct {
	Name   string
	PE     int
	SHA256 [sha256.Size]byte
	Size   int64
}

// Manifest describes a complete disk checkpoint.
type Manifest struct {
	Epoch          uint64
	NumPEs         int
	Collections    []CollectionInfo
	JobFingerprint string
	// Files has one entry per PE, in PE order.
	Files []FileEntry
}

// EpochDir is the directory of one epoch's checkpoint under dir.
func EpochDir(dir string, epoch uint64) string {
	return filepath.Join(dir, "epoch-"+strconv.FormatUint(epoch, 10))
}

func peFileName(pe int) string { return fmt.Sprintf("pe-%d.ckpt", pe) }

// WriteDisk writes one PE's checkpoint to dir/epoch-N/pe-P.ckpt atomically
// (temporary file, fsync, rename, fsync of the directory) and returns the
// entry the PE reports to the launcher for the manifest.
func WriteDisk(dir string, cp *PECheckpoint) (FileEntry, error) {
	data, err := MarshalPECheckpoint(cp)
	if err != nil {
		return FileEntry{}, err
	}
	epochDir := EpochDir(dir, cp.Epoch)
	if err := os.MkdirAll(epochDir, 0o755); err != nil {
		return FileEntry{}, fmt.Errorf("migrate: checkpoint directory: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return FileEntry{}, err
	}
	name := peFileName(cp.PE)
	if err := writeAtomic(epochDir, name, data); err != nil {
		return FileEntry{}, err
	}
	return FileEntry{Name: name, PE: cp.PE, SHA256: sha256.Sum256(data), Size: int64(len(data))}, nil
}

// WriteManifest writes the manifest of a checkpoint whose PE files are all
// written, atomically; only then does ReadDisk consider the epoch. Files
// are those of the PEs alive when the checkpoint was taken (after failures,
// fewer than NumPEs), in PE order; ReadEpoch checks that they hold every
// task once.
func WriteManifest(dir string, m Manifest) error {
	if len(m.Files) == 0 || len(m.Files) > m.NumPEs {
		return fmt.Errorf("migrate: manifest of epoch %d lists %d files for %d PEs", m.Epoch, len(m.Files), m.NumPEs)
	}
	epochDir := EpochDir(dir, m.Epoch)
	msg := &migratepb.Manifest{
		Epoch:          m.Epoch,
		NumPes:         int32(m.NumPEs),
		JobFingerprint: m.JobFingerprint,
	}
	for i, file := range m.Files {
		if file.PE < 0 || file.PE >= m.NumPEs || (i > 0 && file.PE <= m.Files[i-1].PE) {
			return fmt.Errorf("migrate: manifest of epoch %d: file %d is PE %d's (files go by PE, each of 0..%d once)", m.Epoch, i, file.PE, m.NumPEs-1)
		}
		info, err := os.Stat(filepath.Join(epochDir, file.Name))
		if err != nil {
			return fmt.Errorf("migrate: manifest of epoch %d: %w", m.Epoch, err)
		}
		if info.Size() != file.Size {
			return fmt.Errorf("migrate: manifest of epoch %d: %s has %d bytes, the PE reported %d", m.Epoch, file.Name, info.Size(), file.Size)
		}
		msg.Files = append(msg.Files, &migratepb.FileEntry{Name: file.Name, Pe: int32(file.PE), Sha256: file.SHA256[:], Size: file.Size})
	}
	for _, c := range m.Collections {
		msg.Collections = append(msg.Collections, &migratepb.CollectionInfo{Id: uint32(c.ID), Name: c.Name, Size: int64(c.Size)})
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return fmt.Errorf("migrate: encode manifest: %w", err)
	}
	return writeAtomic(epochDir, ManifestName, data)
}

func writeAtomic(dir, name string, data []byte) (err error) {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("migrate: write %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("migrate: write %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("migrate: sync %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("migrate: close %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("migrate: rename %s: %w", name, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("migrate: sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("migrate: sync directory %s: %w", dir, err)
	}
	return nil
}

// ReadDisk reads the latest usable checkpoint under dir: the newest epoch
// directory with a manifest whose files verify. Epochs without a manifest
// (a checkpoint cut short) are skipped silently; a manifested epoch that
// fails verification (ErrCorrupt) is passed over for the next older one,
// and skipped, if not nil, is told which and why, so that the caller can
// say so. If every manifested epoch is corrupt, the newest one's error is
// returned; with no manifested epoch the error wraps ErrNoCheckpoint.
//
// byCollection[c][lin] is the record of element lin of collection c; every
// element of every collection in the manifest is there exactly once.
func ReadDisk(dir string, skipped func(epoch uint64, err error)) (epoch uint64, byCollection [][]TaskRecord, manifest Manifest, err error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil, Manifest{}, fmt.Errorf("%w: %s does not exist", ErrNoCheckpoint, dir)
	}
	if err != nil {
		return 0, nil, Manifest{}, fmt.Errorf("migrate: read checkpoint directory: %w", err)
	}
	var epochs []uint64
	for _, entry := range entries {
		number, isEpoch := strings.CutPrefix(entry.Name(), "epoch-")
		if !isEpoch || !entry.IsDir() {
			continue
		}
		if e, err := strconv.ParseUint(number, 10, 64); err == nil {
			epochs = append(epochs, e)
		}
	}
	slices.Sort(epochs)
	slices.Reverse(epochs)
	var newest error
	for _, e := range epochs {
		_, err := os.Stat(filepath.Join(EpochDir(dir, e), ManifestName))
		if errors.Is(err, fs.ErrNotExist) {
			continue // incomplete
		}
		if err != nil {
			return 0, nil, Manifest{}, fmt.Errorf("migrate: epoch %d manifest: %w", e, err)
		}
		byCollection, manifest, err := ReadEpoch(dir, e)
		if errors.Is(err, ErrCorrupt) {
			if newest == nil {
				newest = err
			}
			if skipped != nil {
				skipped(e, err)
			}
			continue
		}
		return e, byCollection, manifest, err
	}
	if newest != nil {
		return 0, nil, Manifest{}, newest
	}
	return 0, nil, Manifest{}, fmt.Errorf("%w: %d epoch directories in %s, none with a manifest", ErrNoCheckpoint, len(epochs), dir)
}

// ReadEpoch reads and verifies one epoch's checkpoint under dir (see
// ReadDisk).
func ReadEpoch(dir string, epoch uint64) ([][]TaskRecord, Manifest, error) {
	epochDir := EpochDir(dir, epoch)
	data, err := os.ReadFile(filepath.Join(epochDir, ManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Manifest{}, fmt.Errorf("%w: epoch %d has no manifest", ErrNoCheckpoint, epoch)
	}
	if err != nil {
		return nil, Manifest{}, fmt.Errorf("migrate: read manifest of epoch %d: %w", epoch, err)
	}
	manifest, err := decodeManifest(data)
	if err != nil {
		return nil, Manifest{}, fmt.Errorf("epoch %d: %w", epoch, err)
	}
	if manifest.Epoch != epoch {
		return nil, Manifest{}, fmt.Errorf("%w: manifest in %s is for epoch %d", ErrCorrupt, epochDir, manifest.Epoch)
	}

	byCollection := make([][]TaskRecord, 0)
	seen := make([][]bool, 0)
	for _, c := range manifest.Collections {
		for len(byCollection) <= c.ID {
			byCollection, seen = append(byCollection, nil), append(seen, nil)
		}
		byCollection[c.ID], seen[c.ID] = make([]TaskRecord, c.Size), make([]bool, c.Size)
	}
	for _, file := range manifest.Files {
		data, err := os.ReadFile(filepath.Join(epochDir, file.Name))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, Manifest{}, fmt.Errorf("%w: epoch %d: %s listed in the manifest is missing", ErrCorrupt, epoch, file.Name)
		}
		if err != nil {
			return nil, Manifest{}, fmt.Errorf("migrate: epoch %d: %w", epoch, err)
		}
		if sum := sha256.Sum256(data); int64(len(data)) != file.Size || !bytes.Equal(sum[:], file.SHA256[:]) {
			return nil, Manifest{}, fmt.Errorf("%w: epoch %d: %s does not match its checksum (%d bytes, manifest says %d)", ErrCorrupt, epoch, file.Name, len(data), file.Size)
		}
		cp, err := UnmarshalPECheckpoint(data)
		if err != nil {
			return nil, Manifest{}, fmt.Errorf("epoch %d: %s: %w", epoch, file.Name, err)
		}
		if cp.Epoch != epoch || cp.PE != file.PE || cp.NumPEs != manifest.NumPEs || cp.JobFingerprint != manifest.JobFingerprint {
			return nil, Manifest{}, fmt.Errorf("%w: epoch %d: %s holds epoch %d PE %d of %d, job %q; manifest says epoch %d PE %d of %d, job %q",
				ErrCorrupt, epoch, file.Name, cp.Epoch, cp.PE, cp.NumPEs, cp.JobFingerprint, epoch, file.PE, manifest.NumPEs, manifest.JobFingerprint)
		}
		for _, r := range cp.Tasks {
			c, lin := int(r.Collection), int(r.Lin)
			if c >= len(seen) || lin >= len(seen[c]) {
				return nil, Manifest{}, fmt.Errorf("%w: epoch %d: %s holds task %v outside the manifest's collections", ErrCorrupt, epoch, file.Name, r.Ref())
			}
			if seen[c][lin] {
				return nil, Manifest{}, fmt.Errorf("%w: epoch %d: task %v is in two PE files", ErrCorrupt, epoch, r.Ref())
			}
			seen[c][lin], byCollection[c][lin] = true, r
		}
	}
	for c := range seen {
		if missing := slices.Index(seen[c], false); missing >= 0 {
			return nil, Manifest{}, fmt.Errorf("%w: epoch %d: task %v is in no PE file", ErrCorrupt, epoch, TaskRef{c, missing})
		}
	}
	return byCollection, manifest, nil
}

func decodeManifest(data []byte) (Manifest, error) {
	var msg migratepb.Manifest
	if err := proto.Unmarshal(data, &msg); err != nil {
		return Manifest{}, fmt.Errorf("%w: decode manifest: %w", ErrCorrupt, err)
	}
	m := Manifest{Epoch: msg.Epoch, NumPEs: int(msg.NumPes), JobFingerprint: msg.JobFingerprint}
	if m.NumPEs <= 0 || len(msg.Files) == 0 || len(msg.Files) > m.NumPEs {
		return Manifest{}, fmt.Errorf("%w: manifest lists %d files for %d PEs", ErrCorrupt, len(msg.Files), m.NumPEs)
	}
	for i, f := range msg.Files {
		pe := int(f.Pe)
		if pe < 0 || pe >= m.NumPEs || (i > 0 && f.Pe <= msg.Files[i-1].Pe) || len(f.Sha256) != sha256.Size || f.Name != filepath.Base(f.Name) || f.Name == ManifestName {
			return Manifest{}, fmt.Errorf("%w: manifest file entry %d is malformed (%q, PE %d)", ErrCorrupt, i, f.Name, f.Pe)
		}
		entry := FileEntry{Name: f.Name, PE: pe, Size: f.Size}
		copy(entry.SHA256[:], f.Sha256)
		m.Files = append(m.Files, entry)
	}
	// Every task takes at least two bytes in a PE file: a bound on the
	// tables ReadEpoch allocates from a corrupt manifest.
	var fileBytes, tasks int64
	for _, f := range m.Files {
		fileBytes += max(f.Size, 0)
	}
	const maxCollectionID = 1 << 20
	for _, c := range msg.Collections {
		tasks += c.Size
		if c.Id >= maxCollectionID || c.Size < 0 || tasks > fileBytes/2 {
			return Manifest{}, fmt.Errorf("%w: manifest collection %q: ID %d, size %d", ErrCorrupt, c.Name, c.Id, c.Size)
		}
		m.Collections = append(m.Collections, CollectionInfo{ID: int(c.Id), Name: c.Name, Size: int(c.Size)})
	}
	return m, nil
}

// Redistribute places a complete checkpoint (byCollection as ReadDisk
// returns it) on numPEs PEs: element lin of collection c goes to
// mapFn(c, lin, len(byCollection[c]), numPEs). Each PE's records are in
// task order. It panics if mapFn returns a PE outside 0..numPEs-1.
func Redistribute(byCollection [][]TaskRecord, numPEs int, mapFn MapFunc) [][]TaskRecord {
	perPE := make([][]TaskRecord, numPEs)
	for c, records := range byCollection {
		for _, r := range records {
			pe := mapFn(c, int(r.Lin), len(records), numPEs)
			if pe < 0 || pe >= numPEs {
				panic(fmt.Sprintf("migrate: map of collection %d puts element %d on PE %d of %d", c, r.Lin, pe, numPEs))
			}
			perPE[pe] = append(perPE[pe], r)
		}
	}
	return perPE
}
