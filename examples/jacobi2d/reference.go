package main

// reference computes the result serially: the whole plate as one block
// whose halo wraps around, then the sums of each block combined over the
// runtime's tree of linear indices (lower half first).
func reference(n, tasks int, iters uint64) []float64 {
	m, w := n*tasks, n*tasks+2
	t := grid(m, true)
	for range iters {
		for k := range m {
			t[k+1], t[(m+1)*w+k+1] = t[m*w+k+1], t[w+k+1]           // rows wrap
			t[(k+1)*w], t[(k+1)*w+m+1] = t[(k+1)*w+m], t[(k+1)*w+1] // columns wrap
		}
		t = sweep(m, t)
	}
	var tree func(lo, hi int) []float64
	tree = func(lo, hi int) []float64 {
		if hi-lo == 1 {
			return sums(t, w, lo/tasks*n, lo%tasks*n, n)
		}
		x, y := tree(lo, (lo+hi)/2), tree((lo+hi)/2, hi)
		return []float64{x[0] + y[0], x[1] + y[1]}
	}
	return tree(0, tasks*tasks)
}
