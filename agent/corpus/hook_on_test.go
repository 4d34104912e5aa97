//go:build !tabwarden_nohook

package corpus_test

// wallAlone is false: tabwarden runs as shipped, the request hook and the
// wall together.
const wallAlone = false
