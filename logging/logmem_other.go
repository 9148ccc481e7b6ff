//go:build !linux

package logging

const canMap = false

func mapChunk(int) (chunk, region []byte, ok bool) { return nil, nil, false }

func unmap([]byte) {}
