package migrate

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeJob writes a checkpoint of collections "cells" (10 elements) and
// "main" (1 element) block-mapped over numPEs PEs, and its manifest unless
// skipManifest.
func writeJob(t *testing.T, dir string, epoch uint64, numPEs int, skipManifest bool) Manifest {
	t.Helper()
	sizes := []int{10, 1}
	m := Manifest{Epoch: epoch, NumPEs: numPEs, JobFingerprint: "job-a",
		Collections: []CollectionInfo{{ID: 0, Name: "cells", Size: 10}, {ID: 1, Name: "main", Size: 1}}}
	for pe := range numPEs {
		cp := &PECheckpoint{Epoch: epoch, PE: pe, NumPEs: numPEs, JobFingerprint: "job-a"}
		for c, n := range sizes {
			for lin := range n {
				if blockMap(c, lin, n, numPEs) == pe {
					cp.Tasks = append(cp.Tasks, record(c, lin, taskPayload(epoch, c, lin)))
				}
			}
		}
		entry, err := WriteDisk(dir, cp)
		must(t, err)
		m.Files = append(m.Files, entry)
	}
	if !skipManifest {
		must(t, WriteManifest(dir, m))
	}
	return m
}

func taskPayload(epoch uint64, c, lin int) string {
	return strings.Repeat("x", lin) + string(rune('a'+c)) + string(rune('0'+epoch))
}

func TestDiskCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	written := writeJob(t, dir, 3, 4, false)
	epoch, byCollection, manifest, err := ReadDisk(dir, nil)
	must(t, err)
	if epoch != 3 || manifest.NumPEs != 4 || manifest.JobFingerprint != "job-a" || len(manifest.Files) != 4 {
		t.Fatalf("epoch %d, manifest %+v", epoch, manifest)
	}
	if !slices.Equal(manifest.Collections, written.Collections) || !slices.Equal(manifest.Files, written.Files) {
		t.Fatalf("manifest read back differs:\n%+v\n%+v", manifest, written)
	}
	if len(byCollection) != 2 || len(byCollection[0]) != 10 || len(byCollection[1]) != 1 {
		t.Fatalf("records per collection: %d", len(byCollection))
	}
	for c, records := range byCollection {
		for lin, r := range records {
			if r.Ref() != (TaskRef{c, lin}) || string(r.Task) != taskPayload(3, c, lin) {
				t.Fatalf("c%d[%d] read as %v %q", c, lin, r.Ref(), r.Task)
			}
		}
	}
	files, err := os.ReadDir(EpochDir(dir, 3))
	must(t, err)
	for _, f := range files {
		if strings.Contains(f.Name(), ".tmp-") {
			t.Fatalf("temporary file left behind: %s", f.Name())
		}
	}
}

func TestReadDiskSkipsAnEpochWithoutManifest(t *testing.T) {
	dir := t.TempDir()
	writeJob(t, dir, 1, 2, false)
	writeJob(t, dir, 2, 2, true) // the job died before the manifest
	epoch, byCollection, _, err := ReadDisk(dir, nil)
	must(t, err)
	if epoch != 1 || string(byCollection[0][4].Task) != taskPayload(1, 0, 4) {
		t.Fatalf("read epoch %d, want the complete epoch 1", epoch)
	}
}

func TestReadDiskPassesOverCorruptEpochs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(epochDir string) error
		want   string
	}{
		{"missing file", func(d string) error { return os.Remove(filepath.Join(d, "pe-1.ckpt")) }, "pe-1.ckpt listed in the manifest is missing"},
		{"flipped byte", func(d string) error {
			path := filepath.Join(d, "pe-0.ckpt")
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			data[len(data)/2] ^= 1
			return os.WriteFile(path, data, 0o644)
		}, "pe-0.ckpt does not match its checksum"},
		{"truncated file", func(d string) error { return os.Truncate(filepath.Join(d, "pe-2.ckpt"), 3) }, "pe-2.ckpt does not match its checksum"},
		{"garbage manifest", func(d string) error { return os.WriteFile(filepath.Join(d, ManifestName), []byte{0xff, 0x01}, 0o644) }, "decode manifest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeJob(t, dir, 1, 3, false)
			writeJob(t, dir, 2, 3, false)
			must(t, tc.damage(EpochDir(dir, 2)))
			// The corrupt newest epoch is passed over for the older
			// complete one, and the caller is told why.
			var skippedErr error
			epoch, byCollection, _, err := ReadDisk(dir, func(e uint64, err error) {
				if e != 2 {
					t.Errorf("skipped epoch %d, want 2", e)
				}
				skippedErr = err
			})
			must(t, err)
			if epoch != 1 || string(byCollection[1][0].Task) != taskPayload(1, 1, 0) {
				t.Fatalf("read epoch %d, want epoch 1", epoch)
			}
			if !errors.Is(skippedErr, ErrCorrupt) || !strings.Contains(skippedErr.Error(), tc.want) || !strings.Contains(skippedErr.Error(), "epoch 2") {
				t.Fatalf("skipped because %v; want ErrCorrupt mentioning epoch 2 and %q", skippedErr, tc.want)
			}
			// With the older one gone too, the newest one's error is the
			// answer.
			must(t, os.RemoveAll(EpochDir(dir, 1)))
			if _, _, _, err := ReadDisk(dir, nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want ErrCorrupt and %q", err, tc.want)
			}
		})
	}
}

func TestReadDiskRefusesAFileOfAnotherJob(t *testing.T) {
	dir := t.TempDir()
	m := writeJob(t, dir, 1, 2, false)
	// Replace PE 1's file by one of another job, and fix the manifest up.
	entry, err := WriteDisk(dir, &PECheckpoint{Epoch: 1, PE: 1, NumPEs: 2, JobFingerprint: "job-b"})
	must(t, err)
	m.Files[1] = entry
	must(t, WriteManifest(dir, m))
	if _, _, _, err := ReadDisk(dir, nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `job "job-b"`) {
		t.Fatalf("%v, want ErrCorrupt naming the other job", err)
	}
}

func TestReadDiskWithoutCheckpoint(t *testing.T) {
	dir := t.TempDir()
	for name, path := range map[string]string{"missing dir": filepath.Join(dir, "nope"), "empty dir": dir} {
		if _, _, _, err := ReadDisk(path, nil); !errors.Is(err, ErrNoCheckpoint) {
			t.Errorf("%s: %v, want ErrNoCheckpoint", name, err)
		}
	}
	writeJob(t, dir, 5, 2, true)
	if _, _, _, err := ReadDisk(dir, nil); !errors.Is(err, ErrNoCheckpoint) || !strings.Contains(err.Error(), "none with a manifest") {
		t.Errorf("only an incomplete epoch: %v, want ErrNoCheckpoint", err)
	}
}

// A manifest lists the files of the PEs alive at the checkpoint, in PE
// order; after a failure that is fewer than NumPEs, and the read checks
// that they hold every task. Files out of order, twice, of a PE outside
// the job, or missing, are refused.
func TestWriteManifestChecksItsFiles(t *testing.T) {
	dir := t.TempDir()
	m := writeJob(t, dir, 1, 3, true)
	short := m
	short.Files = m.Files[:2]
	must(t, WriteManifest(dir, short))
	if _, _, err := ReadEpoch(dir, 1); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "is in no PE file") {
		t.Fatalf("PE 2's tasks in no file: %v, want ErrCorrupt", err)
	}
	must(t, os.Remove(filepath.Join(EpochDir(dir, 1), ManifestName)))
	for _, files := range [][]FileEntry{{m.Files[1], m.Files[0]}, {m.Files[0], m.Files[0]}, append(slices.Clone(m.Files), FileEntry{Name: "x", PE: 3})} {
		bad := m
		bad.Files = files
		if err := WriteManifest(dir, bad); err == nil {
			t.Fatalf("manifest with files %v written", files)
		}
	}
	must(t, os.Remove(filepath.Join(EpochDir(dir, 1), "pe-2.ckpt")))
	if err := WriteManifest(dir, m); err == nil {
		t.Fatal("manifest of a missing file written")
	}
	if _, err := os.Stat(filepath.Join(EpochDir(dir, 1), ManifestName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused manifest left a file: %v", err)
	}
}

func TestRedistributeToAnotherPECount(t *testing.T) {
	dir := t.TempDir()
	writeJob(t, dir, 1, 4, false)
	_, byCollection, _, err := ReadDisk(dir, nil)
	must(t, err)
	perPE := Redistribute(byCollection, 3, blockMap)
	if len(perPE) != 3 {
		t.Fatalf("%d PEs", len(perPE))
	}
	total := 0
	for pe, records := range perPE {
		total += len(records)
		if !slices.IsSortedFunc(records, compareRecords) {
			t.Fatalf("PE %d records not in task order", pe)
		}
		for _, r := range records {
			c := int(r.Collection)
			if want := blockMap(c, int(r.Lin), len(byCollection[c]), 3); want != pe {
				t.Fatalf("%v on PE %d, map says %d", r.Ref(), pe, want)
			}
		}
	}
	if total != 11 {
		t.Fatalf("%d records redistributed, want 11", total)
	}
}
